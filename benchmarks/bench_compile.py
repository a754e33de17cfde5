"""Compile throughput of the two compile pools (`--compile_pool process|thread`), cold and warm cache.

For one size's pruned space (the full space; `--limit N` takes every k-th config so that N remain, a
spread of the space, to fit a time limit) the compile stage (tune_gemm.compile.pool.compile_all, each config
loaded from its part module as in the tuner, tune_gemm.generate.parts) runs four times, each in a fresh process: the
process pool with an empty Triton cache (cold: everything is built), the process pool again on that cache
(warm: what a second size sharing the binaries costs), then the same two for the thread pool with its own
empty cache. Prints configs/s per measurement and writes OUT.csv and OUT.md.

    python benchmarks/bench_compile.py -m 4096 -n 4096 -k 4096 --limit 600 --num_threads 16 --out bench_compile
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from script_edges import require_gpu, run_script

from tune_gemm.compile.pool import POOLS, compile_all, default_workers
from tune_gemm.core.device import detect_device
from tune_gemm.core.dtypes import DTYPES
from tune_gemm.core.problem import GemmProblem
from tune_gemm.generate import write_module
from tune_gemm.generate.parts import write_parts
from tune_gemm.space.prune import prune
from tune_gemm.space.ranges import space_for


def _spread(names: list[str], limit: int | None) -> list[str]:
    if not limit or limit >= len(names):
        return names
    step = len(names) / limit
    return [names[int(i * step)] for i in range(limit)]


def measure(module: Path, parts: dict[str, str], workers: int, pool: str) -> dict:
    """Compile the configs of `parts` (config -> part module) in this process (its environment names the
    cache); what a measurement prints as JSON."""
    started = time.perf_counter()
    outcome = compile_all(module, list(parts), workers, interpret=False, pool=pool, parts=parts)
    seconds = time.perf_counter() - started
    return {"seconds": seconds, "compiled": len(outcome.compiled), "failed": len(outcome.failed)}


def _one(args: argparse.Namespace, module: Path, names_file: Path, pool: str, cache: Path) -> dict:
    command = [sys.executable, __file__, "--measure", str(module), str(names_file), pool,
               "--num_threads", str(args.num_threads)]
    env = {**os.environ, "TRITON_CACHE_DIR": str(cache)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"measurement {pool} failed:\n{done.stdout}{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-m", type=int, default=4096)
    parser.add_argument("-n", type=int, default=4096)
    parser.add_argument("-k", type=int, default=4096)
    parser.add_argument("--limit", type=int, help="compile this many configs of the space, spread over it")
    parser.add_argument("--num_threads", type=int, default=default_workers())
    parser.add_argument("--pools", default=",".join(POOLS), help="comma-separated, in the order to measure them")
    parser.add_argument("--out", type=Path, default=Path("bench_compile"), help="writes OUT.csv and OUT.md")
    parser.add_argument("--measure", nargs=3, metavar=("MODULE", "NAMES", "POOL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:  # one measurement, in its own process
        module, names_file, pool = args.measure
        print(json.dumps(measure(Path(module), json.loads(Path(names_file).read_text()), args.num_threads, pool)))
        return 0

    require_gpu()
    device = detect_device()
    fp16 = DTYPES["fp16"]
    problem = GemmProblem(args.m, args.n, args.k, fp16, fp16, fp16)
    pruned = prune(problem, device, space_for(device.vendor)).configs
    names = _spread([str(c) for c in pruned], args.limit)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_compile_") as workdir:
        module = write_module(problem, pruned, Path(workdir))
        parts = write_parts(problem, pruned, Path(workdir))
        names_file = Path(workdir) / "names.json"
        names_file.write_text(json.dumps({name: str(parts[name]) for name in names}))
        for pool in filter(None, (p.strip() for p in args.pools.split(","))):
            cache = Path(tempfile.mkdtemp(prefix=f"cache_{pool}_", dir=workdir))
            for state in ("cold", "warm"):
                result = _one(args, module, names_file, pool, cache)
                rows.append({"pool": pool, "cache": state, "configs": len(names), **result,
                             "configs/s": round(len(names) / result["seconds"], 1)})
                print(rows[-1], flush=True)
    header = (f"{device.name}; {problem.label}: {len(names)} of {len(pruned)} pruned configs; "
              f"--num_threads {args.num_threads}; each measurement in a fresh process")
    columns = list(rows[0])
    text = "\n".join([header, "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
                     + ["| " + " | ".join(str(round(v, 1) if isinstance(v, float) else v) for v in row.values()) + " |"
                        for row in rows]) + "\n"
    print(text)
    args.out.with_suffix(".md").write_text(text)
    with open(args.out.with_suffix(".csv"), "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(run_script("bench_compile", main))
