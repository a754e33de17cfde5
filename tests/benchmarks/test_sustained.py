"""benchmarks/sustained.py on the CPU: reading nvidia-smi's samples and summarizing a window of them (the
sustained runs themselves need a GPU and run on the device machine)."""

from __future__ import annotations

from datetime import datetime

import pytest
from helpers import load_benchmark


@pytest.fixture(scope="module")
def sustained():
    return load_benchmark("sustained")


def test_a_reading_is_parsed_and_anything_else_is_dropped(sustained):
    sample = sustained.parse_sample("2026/11/24 08:50:01.123, 697.52, 1301, 57, 700.00, 0x0000000000000004")
    assert sample == sustained.GpuSample(datetime(2026, 11, 24, 8, 50, 1, 123000), 697.52, 1301.0, 57.0, 700.0, 0x4)
    for line in ("", "[N/A]", "2026/11/24 08:50:01.123, [N/A], 1301, 57, 700.00, 0x4", "No devices were found"):
        assert sustained.parse_sample(line) is None


def test_clock_reasons_are_named_in_nvmls_order(sustained):
    assert sustained.reason_names(0x84) == ("sw_power_cap", "hw_power_brake")
    assert sustained.reason_names(0) == ()


def test_the_window_keeps_only_its_own_samples(sustained):
    def at(second: int, mhz: float, watts: float, reasons: int):
        return sustained.GpuSample(datetime(2026, 11, 24, 9, 0, second), watts, mhz, 50.0 + second, 700.0, reasons)

    samples = [at(0, 1980, 120, 0x1), at(2, 1300, 690, 0x4), at(3, 1320, 700, 0x0), at(4, 1290, 698, 0x20),
               at(9, 345, 70, 0x1)]
    window = sustained.summarize(samples, datetime(2026, 11, 24, 9, 0, 1), datetime(2026, 11, 24, 9, 0, 5))
    assert window.samples == 3
    assert window.sm_mhz == pytest.approx(1303.333, abs=1e-3)
    assert window.watts == pytest.approx(696.0)
    assert window.celsius == pytest.approx(53.0)
    assert window.reasons == ("sw_power_cap", "sw_thermal")  # the idle samples outside the window do not count
    assert sustained.summarize(samples, datetime(2026, 11, 24, 9, 0, 5), datetime(2026, 11, 24, 9, 0, 8)) is None


def test_tensor_peak_at_a_clock(sustained):
    # H100: 989.4 TFLOP/s dense fp16 at 1830 MHz on 132 SMs; fp8 twice that; an unknown GPU has no figure
    assert sustained.tensor_peak_tflops((9, 0), 2, 132, 1830) == pytest.approx(989.43, abs=0.01)
    assert sustained.tensor_peak_tflops((9, 0), 1, 132, 1300) == pytest.approx(2 * 702.87, abs=0.01)
    assert sustained.tensor_peak_tflops((8, 0), 2, 108, 1400) is None


def test_a_row_shows_the_fraction_of_peak_at_the_clock_held(sustained):
    window = sustained.WindowSummary(40, 1300.0, 698.0, 57.0, 700.0, ("sw_power_cap",))
    row = sustained.table_row("4096x4096x4096", "cuBLAS", sustained.Sustained(632.5, window), 702.8)
    assert row == "| 4096x4096x4096 | cuBLAS | 632.5 | 1300 | 698 | 700 | 57 | sw_power_cap | 486.5 | 90.0 |"
    assert "no sample" in sustained.table_row("16x16x16", "cuBLAS", sustained.Sustained(1.0, None), None)


def test_a_missing_nvidia_smi_is_one_line(sustained, monkeypatch):
    sampler = sustained.GpuSampler(0)
    sampler.command = ["/nonexistent/nvidia-smi"]
    with pytest.raises(SystemExit, match="^sustained: cannot run nvidia-smi to sample the GPU: "):
        sampler.__enter__()
