"""tune_gemm.outputs.report: the Markdown and the PNG plots, from a results file, kept timings and a bench CSV."""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest
from matplotlib import image

from tune_gemm.core.errors import UserError
from tune_gemm.outputs.report import BENCH_CSV, REPORT_MD, TFLOPS_PNG, write_report
from tune_gemm.outputs.timings import save_timings, timings_path
from tune_gemm.runtime.table import read_tuned

RESULTS = """\
- {M: 4096, N: 4096, K: 4096, BLOCK_SIZE_M: 128, BLOCK_SIZE_N: 256, BLOCK_SIZE_K: 32, GROUP_SIZE_M: 16, num_warps: 8, num_stages: 5, gpu: NVIDIA H100 80GB HBM3, time_us: 188.836, profiler: cupti, matmul_time_us: 177.716}
- {M: 16, N: 4096, K: 4096, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 64, BLOCK_SIZE_K: 128, SPLIT_K: 4, num_warps: 4, num_stages: 4, gpu: NVIDIA H100 80GB HBM3, time_us: 10.0, profiler: cupti, matmul_time_us: 12.5}
"""
WINNER = "BM128_BN256_BK32_GM16_SK1_nW8_nS5"


@pytest.fixture
def results(tmp_path):
    path = tmp_path / "out.yaml"
    path.write_text(RESULTS)
    return path


def _timings(count: int, winner: str = WINNER) -> pd.DataFrame:
    """`count` configs from 188.836 us (the winner) to 4x slower."""
    names = [winner] + [f"BM64_BN64_BK32_GM{g}_SK1_nW4_nS{s}" for g in range(1, 100) for s in (2, 3)][: count - 1]
    return pd.DataFrame({"config": names, "time_us": np.linspace(188.836, 4 * 188.836, count)})


def _nontrivial_png(path) -> None:
    assert path.stat().st_size > 10_000
    pixels = image.imread(path)
    colors = np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)
    assert pixels.shape[0] > 200 and pixels.shape[1] > 400 and len(colors) > 20


def test_report_without_timings_or_bench(results, tmp_path):
    directory = tmp_path / "report"
    directory.mkdir()
    paths = write_report(results, directory)
    assert [p.name for p in paths] == [REPORT_MD, TFLOPS_PNG]
    _nontrivial_png(directory / TFLOPS_PNG)
    text = (directory / REPORT_MD).read_text()
    assert "| 4096x4096x4096 fp16->fp16 TT | NVIDIA H100 80GB HBM3 | " + WINNER + " | 727.8 | 773.4 | 0.94x |" in text
    assert "| 16x4096x4096 fp16->fp16 TT |" in text and "1.25x" in text  # 12.5 us vs 10.0 us
    assert "bench_gemm.py" in text and "No per-config timings" in text and "not meaningful" not in text


def test_kept_timings_draw_how_much_tuning_mattered(results, tmp_path):
    directory = tmp_path / "report"
    directory.mkdir()
    [entry] = [e for e in read_tuned(results) if e.problem.M == 4096]
    save_timings(directory, entry.problem, _timings(41))
    paths = write_report(results, directory)
    distribution = directory / f"distribution_{entry.problem.file_tag}.png"
    assert distribution in paths
    _nontrivial_png(distribution)
    text = (directory / REPORT_MD).read_text()
    # 41 times evenly from t to 4t: the median is 2.5t, the slowest 4t
    assert "| 4096x4096x4096 fp16->fp16 TT | 41 | 727.8 | 291.1 | 182 | 2.50x | 4.00x |" in text
    assert f"]({distribution.name})" in text


def test_timings_of_another_run_are_not_used_and_a_broken_file_is_named(results, tmp_path):
    directory = tmp_path / "report"
    directory.mkdir()
    [entry] = [e for e in read_tuned(results) if e.problem.M == 4096]
    save_timings(directory, entry.problem, _timings(10, winner="BM16_BN16_BK16_GM1_SK1_nW4_nS2"))
    assert len(write_report(results, directory)) == 2
    timings_path(directory, entry.problem).write_text("not,a\ntimings,file\n")
    with pytest.raises(UserError, match="not a timings CSV"):
        write_report(results, directory)


def test_bench_csv_gives_all_three_columns_by_one_timer(results, tmp_path):
    directory = tmp_path / "report"
    directory.mkdir()
    with open(directory / BENCH_CSV, "w", newline="") as handle:
        writer = csv.DictWriter(handle, ["size", "tune_gemm TFLOP/s", "cuBLAS TFLOP/s", "triton tutorial TFLOP/s",
                                         "tutorial config"])
        writer.writeheader()
        writer.writerow({"size": "4096x4096x4096 fp16->fp16 TT", "tune_gemm TFLOP/s": 700.0,
                         "cuBLAS TFLOP/s": 750.0, "triton tutorial TFLOP/s": 560.0,
                         "tutorial config": "BM128_BN256_BK64_GM8_SK1_nW8_nS3"})
    write_report(results, directory)
    text = (directory / REPORT_MD).read_text()
    assert "| 700 | 750 | 0.93x | 560 (BM128_BN256_BK64_GM8_SK1_nW8_nS3) | 1.25x | do_bench (bench.csv) |" in text
    assert "| 53.69 | 42.95 | 1.25x | – | – | cupti (results file) |" in text  # no bench row: the results file
    assert "bench_gemm.py" not in text
    _nontrivial_png(directory / TFLOPS_PNG)


def test_interpreter_results_say_their_times_mean_nothing(tmp_path):
    results = tmp_path / "out.yaml"
    results.write_text("- {M: 16, N: 16, K: 16, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16, "
                       "gpu: CPU (Triton interpreter), time_us: 30000, profiler: host, matmul_time_us: 20}\n")
    write_report(results, tmp_path)
    assert "not meaningful" in (tmp_path / REPORT_MD).read_text()
