"""What one call costs the host, beside what it costs the GPU, for each column of bench_gemm.

A small GEMM's kernel runs for a few microseconds; issuing it from Python can take longer. Then the GPU waits
on the CPU and a timer that brackets each call with events (`triton.testing.do_bench`, bench_gemm's timer)
measures the host's launch path, not the kernel. For each entry of a results file and each column (tune_gemm's
recorded config, the cuBLAS call, max-autotune), on the same inputs as bench_gemm:

- host us/call: the CPU time to issue one call (CALLS calls issued back to back, before synchronizing);
- back-to-back us/call: CALLS calls issued back to back until the GPU has finished them all, per call: the
  larger of the host's and the GPU's cost (both medians of ROUNDS rounds in which the columns take turns);
- graph us/call: the same CALLS calls captured once in a CUDA graph and replayed: the GPU's cost alone, as a
  caller that replays graphs (an inference engine) sees it;
- do_bench us: bench_gemm's figure.

"tune_gemm" calls the generated module's launcher of the recorded config; "tune_gemm.matmul" the run-time API
with the results file loaded (its checks, lookup and a new output included: what an application calls). For a
persistent TMA config, "tune_gemm descriptors" is the host cost of building its tensor descriptors alone. Launches
after the first of a call signature are replayed (tune_gemm.kernels.matmul_family.Replay); "tune_gemm, JIT" is the launcher with
every launch through Triton's JIT instead (what TUNE_GEMM_REPLAY=0 in the environment does everywhere).

    python benchmarks/launch_cost.py tuned.yaml --sizes 1024x1024x1024,16x16x16
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch  # noqa: E402
from bench_gemm import _do_bench_us, entry_columns  # noqa: E402
from script_edges import recorded_winners, require_gpu, run_script  # noqa: E402

from tune_gemm import load_results, matmul  # noqa: E402
from tune_gemm.core.problem import GemmProblem  # noqa: E402
from tune_gemm.kernels.bound import tma_variant  # noqa: E402
from tune_gemm.kernels.tma_family import tma_arguments  # noqa: E402

CALLS = 200
WARM_CALLS = 20
ROUNDS = 5  # rounds of the host figures, the columns taking turns in each


def host_and_back_to_back_us(call, calls: int = CALLS) -> tuple[float, float]:
    """(host microseconds to issue one call, microseconds per call until the GPU has done them all)."""
    for _ in range(WARM_CALLS):
        call()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    issued = time.perf_counter()
    torch.cuda.synchronize()
    done = time.perf_counter()
    return (issued - start) / calls * 1e6, (done - start) / calls * 1e6


def interleaved_host_us(calls: dict, rounds: int = ROUNDS) -> dict[str, tuple[float, float]]:
    """Each column's median (host, back-to-back) microseconds per call (host_and_back_to_back_us) over `rounds`
    rounds in which the columns take turns: the host's speed drifts (its clock, other processes), by up to 2x between
    columns measured one after the other, and taking turns gives the drift to every column."""
    samples = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            samples[name].append(host_and_back_to_back_us(call))
    return {name: (statistics.median(host for host, _ in measured), statistics.median(whole for _, whole in measured))
            for name, measured in samples.items()}


def graph_us(call, calls: int = CALLS) -> float:
    """Microseconds per call of `calls` calls replayed from one CUDA graph; nan when the call cannot be captured."""
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):  # warm-up off the default stream, as capture wants
            call()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                call()
    except RuntimeError:
        return float("nan")
    graph.replay()
    torch.cuda.synchronize()
    start = time.perf_counter()
    graph.replay()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def descriptors_call(config, operands):
    """The host work of one TMA launch's descriptors (tune_gemm.kernels.tma_family.tma_arguments), without the launch."""
    a, b, c = operands[:3]
    variant = tma_variant(config)
    return lambda: tma_arguments(config, variant, a, b, c)


def through_the_jit(call):
    """`call` with every launch through Triton's JIT (the families' REPLAY_LAUNCHES off while it runs)."""
    from tune_gemm.kernels.matmul_family import replay

    def jit_call():
        replaying = replay.REPLAY_LAUNCHES
        replay.REPLAY_LAUNCHES = False
        try:
            return call()
        finally:
            replay.REPLAY_LAUNCHES = replaying
    return jit_call


def api_call(problem: GemmProblem, operands: tuple):
    """The run-time API's call on the entry's operands (the launcher's: a, b, c, then bias or scales)."""
    a, b = operands[:2]
    scales = operands[4:6] if len(operands) == 6 else (None, None)
    return lambda: matmul(a, b, problem.dtype_c.torch_dtype, scale_a=scales[0], scale_b=scales[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a tune_gemm results file")
    parser.add_argument("--sizes", help="entries to measure, as MxNxK or 1-based numbers, comma-separated "
                                         "(default all)")
    args = parser.parse_args()
    requests = recorded_winners(args.results, "launch_cost", args.sizes)
    require_gpu()
    load_results(args.results)
    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}; {CALLS} calls per figure")
    print("| size | column | host us/call | back-to-back us/call | graph us/call | do_bench us |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as workdir:
        for request in requests:
            problem, config = request.problem, request.config
            entry = entry_columns(problem, config, Path(workdir))
            calls = dict(entry.calls)
            calls["tune_gemm, JIT"] = through_the_jit(calls["tune_gemm"])
            if not problem.bias:  # the API takes no bias
                calls["tune_gemm.matmul"] = api_call(problem, entry.operands)
            if config.PERSISTENT_TMA:
                calls["tune_gemm descriptors"] = descriptors_call(config, entry.operands)
            with entry.baseline.precision():  # fp32: cuBLAS and max-autotune as TF32, as bench_gemm times them
                host = interleaved_host_us(calls)
                for name, call in calls.items():
                    on_gpu = name != "tune_gemm descriptors"
                    graph = graph_us(call) if on_gpu else float("nan")
                    bench = _do_bench_us(call) if on_gpu else float("nan")
                    print(f"| {problem.label} | {name} | {host[name][0]:.1f} | {host[name][1]:.1f} | {graph:.2f} | "
                          f"{bench:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_script("launch_cost", main))
