"""Benchmark recorded winners against what users would use instead, on the same inputs and timer.

For each entry of a results file: tune_gemm's recorded config, torch.matmul (cuBLAS), and
torch.compile(mode="max-autotune-no-cudagraphs") with Inductor's Triton GEMM templates only.
Every column is timed with triton.testing.do_bench (median; it flushes L2 between runs).

    python benchmarks/bench_gemm.py output_tuning.yaml --csv bench.csv
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import triton  # noqa: E402

from gen import write_module  # noqa: E402
from tuner.dtypes import DTYPES  # noqa: E402
from tuner.problem import GemmProblem  # noqa: E402
from tuner.sizes import load_sizes  # noqa: E402


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _inductor_matmul():
    import torch._inductor.config as inductor_config

    inductor_config.max_autotune_gemm_backends = "TRITON"
    return torch.compile(torch.matmul, mode="max-autotune-no-cudagraphs", dynamic=False)


def bench_entry(problem: GemmProblem, config, workdir: Path) -> dict[str, float]:
    """Median microseconds of each column for one size."""
    module = _load(write_module(problem, [config], workdir))
    a, b, c = module.make_operands(module.PROBLEM, "cuda")
    launcher = module.LAUNCHERS[str(config)]
    error = module.check_config(launcher, module.PROBLEM, "cuda")
    if error > problem.dtype_a.tolerance:
        raise SystemExit(f"{problem.label} {config}: relative error {error:.2e}, not benchmarking a wrong kernel")
    compiled = _inductor_matmul()
    compiled(a, b)  # autotunes here, outside the timing
    columns = {
        "tune_gemm": lambda: launcher(a, b, c),
        "torch.matmul": lambda: torch.matmul(a, b, out=c),
        "max-autotune": lambda: compiled(a, b),
    }
    return {name: triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median") * 1e3
            for name, fn in columns.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a tune_gemm results file")
    parser.add_argument("--csv", type=Path, help="write the table as CSV too")
    args = parser.parse_args()
    defaults = GemmProblem(1, 1, 1, DTYPES["fp16"], DTYPES["fp16"], DTYPES["fp16"])
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for request in load_sizes(args.results, defaults):
            times = bench_entry(request.problem, request.config, Path(workdir))
            row = {"size": request.problem.label, "config": str(request.config)}
            for name, us in times.items():
                row[f"{name} us"] = round(us, 2)
                row[f"{name} TFLOP/s"] = round(request.problem.tflops(us), 1)
            row["vs cuBLAS"] = round(times["torch.matmul"] / times["tune_gemm"], 3)
            row["vs max-autotune"] = round(times["max-autotune"] / times["tune_gemm"], 3)
            rows.append(row)
            print(row, flush=True)
    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}, triton {triton.__version__}")
    print("| size | config | tune_gemm TFLOP/s | torch.matmul TFLOP/s | max-autotune TFLOP/s | vs cuBLAS | vs max-autotune |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['size']} | {row['config']} | {row['tune_gemm TFLOP/s']} | {row['torch.matmul TFLOP/s']} | "
              f"{row['max-autotune TFLOP/s']} | {row['vs cuBLAS']} | {row['vs max-autotune']} |")
    geomean = math.exp(sum(math.log(r["vs cuBLAS"]) for r in rows) / len(rows))
    print(f"geometric mean vs cuBLAS: {geomean:.3f}")
    if args.csv:
        with open(args.csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
