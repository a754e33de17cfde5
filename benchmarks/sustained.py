"""Each bench_gemm column under sustained load: its throughput beside the clock, power and limits the GPU held.

`do_bench` gives a kernel's time; it does not say why two kernels that keep the tensor cores equally busy per
clock differ, nor why a shape falls short of a TFLOP/s target. A large GEMM on an H100 runs into the board's
power limit, and the GPU then lowers its clock: a kernel that moves fewer bytes per FLOP spends less energy and
keeps a higher clock. For each entry of a results file and each column (tune_gemm's recorded config, the cuBLAS
call, max-autotune), on bench_gemm's inputs, this runs the call back to back for --seconds after a warm-up,
while `nvidia-smi` samples the GPU every 100 ms, and prints:

- TFLOP/s over the measured window (device events around it);
- the mean SM clock, board power and temperature over the window, and the power limit;
- the clock-limiting reasons seen (NVML's names: sw_power_cap, hw_slowdown, ...);
- TFLOP/s per GHz, and the percentage of the tensor cores' dense peak at the clock held (Hopper only).

With --ncu, each column instead runs once inside an NVTX range named "measured", after a warm-up call, for an
Nsight Compute run that profiles those launches alone (max-autotune's autotuning stays outside the range):

    python benchmarks/sustained.py tuned.yaml --sizes 4096x4096x4096 --seconds 5
    ncu --nvtx --nvtx-include "measured/" --clock-control none --section SpeedOfLight \\
        python benchmarks/sustained.py tuned.yaml --ncu
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Self

from script_edges import recorded_winners, require_gpu, run_script  # noqa: E402

WARM_SECONDS = 2.0  # long enough for the clock to settle at the power limit
SAMPLE_MS = 100
CHUNK_SECONDS = 0.05  # calls are issued in chunks of about this long, so the host never runs far ahead

# NVML's clock-event reasons (nvmlClocksEventReason*), as nvidia-smi's clocks_event_reasons.active bitmask.
CLOCK_REASONS = {
    0x1: "gpu_idle", 0x2: "applications_clocks", 0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x10: "sync_boost",
    0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake", 0x100: "display_clocks",
}
QUERY = "timestamp,power.draw,clocks.sm,temperature.gpu,power.limit,clocks_event_reasons.active"

# Dense tensor-core FLOPs per SM per clock, by (compute capability, input bytes): Hopper's fp16/bf16 peak of
# 989 TFLOP/s at 1830 MHz on 132 SMs is 4096; fp8 doubles it, tf32 halves it.
TENSOR_FLOPS_PER_SM_CLOCK = {((9, 0), 2): 4096, ((9, 0), 1): 8192, ((9, 0), 4): 2048}


@dataclass(frozen=True)
class GpuSample:
    """One nvidia-smi reading."""

    time: datetime
    watts: float
    sm_mhz: float
    celsius: float
    power_limit_watts: float
    reasons: int  # clocks_event_reasons.active bitmask


@dataclass(frozen=True)
class WindowSummary:
    """The GPU's state over a measured window: means of the samples taken inside it."""

    samples: int
    sm_mhz: float
    watts: float
    celsius: float
    power_limit_watts: float
    reasons: tuple[str, ...]  # every reason seen in any sample, in NVML's order


def parse_sample(line: str) -> GpuSample | None:
    """A line of `nvidia-smi --query-gpu=QUERY --format=csv,noheader,nounits`; None for one that is not a
    reading (a blank line, "[N/A]" in a field, a message)."""
    fields = [field.strip() for field in line.split(",")]
    if len(fields) != len(QUERY.split(",")):
        return None
    try:
        return GpuSample(datetime.strptime(fields[0], "%Y/%m/%d %H:%M:%S.%f"), float(fields[1]), float(fields[2]),
                         float(fields[3]), float(fields[4]), int(fields[5], 16))
    except ValueError:
        return None


def reason_names(mask: int) -> tuple[str, ...]:
    return tuple(name for bit, name in CLOCK_REASONS.items() if mask & bit)


def summarize(samples: list[GpuSample], start: datetime, end: datetime) -> WindowSummary | None:
    """Means over the samples taken between start and end; None when none was."""
    inside = [sample for sample in samples if start <= sample.time <= end]
    if not inside:
        return None
    count = len(inside)
    mask = 0
    for sample in inside:
        mask |= sample.reasons
    return WindowSummary(count, sum(s.sm_mhz for s in inside) / count, sum(s.watts for s in inside) / count,
                         sum(s.celsius for s in inside) / count, inside[-1].power_limit_watts, reason_names(mask))


def tensor_peak_tflops(capability: tuple[int, int], input_bytes: int, sms: int, sm_mhz: float) -> float | None:
    """Dense tensor-core peak at a given clock, or None for a GPU this table does not know."""
    per_clock = TENSOR_FLOPS_PER_SM_CLOCK.get((capability, input_bytes))
    return None if per_clock is None else per_clock * sms * sm_mhz * 1e6 / 1e12


class GpuSampler:
    """nvidia-smi sampling the GPU in the background, from entering the block to leaving it."""

    def __init__(self, index: int):
        self.command = ["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits",
                        f"-lms={SAMPLE_MS}", f"--id={index}"]

    def __enter__(self) -> Self:
        try:
            self.process = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        except OSError as error:
            raise SystemExit(f"sustained: cannot run nvidia-smi to sample the GPU: {error}") from None
        return self

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        output, _ = self.process.communicate(timeout=10)
        self.samples = [sample for sample in map(parse_sample, output.splitlines()) if sample is not None]
        if not self.samples:
            first = output.strip().splitlines()[:1]
            raise SystemExit(f"sustained: nvidia-smi gave no readings: {first[0] if first else 'no output'}")


def _run_for(call, seconds: float, chunk: int) -> int:
    """Issue `call` in chunks of `chunk` calls until `seconds` have passed; returns how many were issued."""
    import torch

    calls = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(chunk):
            call()
        calls += chunk
        torch.cuda.synchronize()
    return calls


@dataclass(frozen=True)
class Sustained:
    tflops: float
    window: WindowSummary | None


def sustained(call, flops: float, seconds: float, device_index: int) -> Sustained:
    """`call` back to back: TFLOP/s over `seconds`, after WARM_SECONDS of the same, and the GPU's state then."""
    import torch

    call()
    torch.cuda.synchronize()
    single = time.perf_counter()
    call()
    torch.cuda.synchronize()
    chunk = max(1, int(CHUNK_SECONDS / max(time.perf_counter() - single, 1e-6)))
    with GpuSampler(device_index) as sampler:
        _run_for(call, WARM_SECONDS, chunk)
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        started = datetime.now()
        begin.record()
        calls = _run_for(call, seconds, chunk)
        end.record()
        end.synchronize()
        ended = datetime.now()
    elapsed_s = begin.elapsed_time(end) / 1e3
    return Sustained(calls * flops / elapsed_s / 1e12, summarize(sampler.samples, started, ended))


def ncu_pass(calls: dict) -> None:
    """Each call once inside an NVTX range "measured", after a warm-up call outside it."""
    import torch

    for name, call in calls.items():
        call()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_push("measured")
        call()
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()
        print(f"ncu pass: {name}", flush=True)


def table_row(label: str, column: str, result: Sustained, peak: float | None) -> str:
    window = result.window
    if window is None:
        return f"| {label} | {column} | {result.tflops:.1f} | no sample | | | | | | |"
    of_peak = f"{100 * result.tflops / peak:.1f}" if peak else ""
    return (f"| {label} | {column} | {result.tflops:.1f} | {window.sm_mhz:.0f} | {window.watts:.0f} | "
            f"{window.power_limit_watts:.0f} | {window.celsius:.0f} | {' '.join(window.reasons) or 'none'} | "
            f"{result.tflops / (window.sm_mhz / 1e3):.1f} | {of_peak} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a tune_gemm results file")
    parser.add_argument("--sizes", help="entries to measure, as MxNxK or 1-based numbers, comma-separated "
                                         "(default all)")
    parser.add_argument("--seconds", type=float, default=5.0, help="measured window per column (default 5)")
    parser.add_argument("--ncu", action="store_true", help="one call per column in an NVTX range, for ncu")
    args = parser.parse_args()

    import torch

    requests = recorded_winners(args.results, "sustained", args.sizes)
    require_gpu()
    from bench_gemm import entry_columns

    index = torch.cuda.current_device()
    properties = torch.cuda.get_device_properties(index)
    capability = (properties.major, properties.minor)
    print(f"GPU: {properties.name}; torch {torch.__version__}; {args.seconds} s per column after {WARM_SECONDS} s")
    if not args.ncu:
        print("| size | column | TFLOP/s | SM MHz | W | power limit W | °C | clock limited by | TFLOP/s per GHz "
              "| % of tensor peak at that clock |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as workdir:
        for request in requests:
            problem = request.problem
            entry = entry_columns(problem, request.config, Path(workdir))
            if args.ncu:
                ncu_pass(entry.calls)
                continue
            for column, call in entry.calls.items():
                result = sustained(call, problem.flops, args.seconds, index)
                peak = tensor_peak_tflops(capability, problem.dtype_a.bytes, properties.multi_processor_count,
                                          result.window.sm_mhz) if result.window else None
                print(table_row(problem.label, column, result, peak), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_script("sustained", main))
