"""Search speed and quality on a GPU: `--search exhaustive` against `halving` and `refine`, size by size.

Each chosen size of a sizes file is tuned by the tuner's own pipeline (tune_gemm.run.pipeline.tune_size, the
full pruned space, the run's timer) once per search. Per search the table gives the end-to-end seconds,
compile configs/s (configs compiled / compile-stage seconds), timing configs/s (config timings of all
rounds / timing-stage seconds; the two stages overlap) and the winner with its time as the search
measured it. Then the winners are timed again side by side in one child (`--retime_iters` launches
each, same inputs, same timer), so that "this search's winner is within 1% of the exhaustive one" is read
from one measurement, not from two searches' noise; the same config counts as exactly 1.00. Each search's
winners are also recorded as a results file, OUT.SEARCH.yaml (for benchmarks/bench_gemm.py).

`--run_dir DIR` runs each search in DIR/<size>/<search> and keeps it there: rerunning a command that was cut
short (a device machine's per-command limit) resumes its interrupted search from the tuner's checkpoint. Such a
search's row says "resumed", and its seconds count only the run that finished it.
`--cache cold` gives every search a fresh Triton cache (end to end includes compiling everything);
`--cache warm` shares one cache across the run, so a search finds the binaries an earlier one built
(the first search of a size builds them for the next); `--cache_dir DIR` keeps that cache in DIR, so that
a run split over several commands (a device machine's per-command limit) shares it too. Sizes are run in
file order (or fewest configs first, `--order smallest`) while `--time_limit` allows: a size is started only if the time it is expected to
take (its configs at the rate of the biggest search so far, once one of at least 200 configs has run; a
guess of 20 configs/s before that, since a tiny size's rate is all start-up) fits in what is left; the sizes not run
are listed with the reason. OUT.csv and OUT.md are rewritten after each size.

    python benchmarks/bench_search.py benchmarks/sizes.yaml --cache warm --time_limit 400 --out bench_search
    python benchmarks/bench_search.py benchmarks/sizes.yaml --sizes 3 --cache cold --out bench_cold
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from script_edges import chosen_entries, file_entries, run_script

from tune_gemm.compile.pool import POOLS, default_workers
from tune_gemm.core.config import Config
from tune_gemm.core.device import INTERPRETER_PROFILE, DeviceProfile, detect_device
from tune_gemm.core.errors import UserError
from tune_gemm.core.problem import GemmProblem
from tune_gemm.files.results import ResultEntry, record
from tune_gemm.generate import write_module
from tune_gemm.measure import choose_profiler
from tune_gemm.run.pipeline import (
    SizeFailed,
    SizeOutcome,
    profile_configs,
    scratch_dir,
    tune_size,
)
from tune_gemm.search.checkpoint import DIRECTORY, discard
from tune_gemm.search.search import SEARCHES
from tune_gemm.search.settings import TuneSettings
from tune_gemm.space.prune import prune
from tune_gemm.space.space_file import read_space

WITHIN = 0.01  # a search passes on a shape when its winner is at most 1% slower than the exhaustive winner
FIRST_GUESS_RATE = 20.0  # configs/s assumed for the time-limit estimate until a big enough search is measured
RATE_FROM_CONFIGS = 200  # a search this big measures the rate (16³'s 24 configs took 45 s on the H100: start-up)


@dataclass
class SearchRun:
    outcome: SizeOutcome
    seconds: float  # wall seconds of this run of the search
    resumed: bool  # it went on from a checkpoint an earlier, interrupted run left (--run_dir)


def _search(problem: GemmProblem, device: DeviceProfile, settings: TuneSettings, search: str, cold: bool,
            workdir: Path, kept_dir: Path | None) -> SearchRun:
    """One search of one size in its own working directory: a fresh one, or kept_dir/<size>/<search> (resumable)."""
    if cold:
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton_cold_", dir=workdir)
    if kept_dir is None:
        run_dir = Path(tempfile.mkdtemp(prefix=f"{search}_", dir=workdir))
    else:
        run_dir = kept_dir / problem.file_tag / search
        run_dir.mkdir(parents=True, exist_ok=True)
    resumed = (run_dir / DIRECTORY / f"{problem.file_tag}.json").exists()
    started = time.perf_counter()
    outcome = tune_size(problem, device, replace(settings, search=search, workdir=run_dir), compare=False,
                        log=lambda line: print(f"  {line}", flush=True))
    seconds = time.perf_counter() - started
    discard(outcome.checkpoint)
    return SearchRun(outcome, seconds, resumed)


def _retime(problem: GemmProblem, device: DeviceProfile, settings: TuneSettings, winners: list[Config],
            iters: int, workdir: Path) -> dict[str, float]:
    """Both winners (once when they are the same config) timed in one child: config -> microseconds."""
    distinct = list(dict.fromkeys(winners))
    run_dir = Path(tempfile.mkdtemp(prefix="retime_", dir=workdir))
    settings = replace(settings, workdir=run_dir, warmup=10, iters=iters)
    module = write_module(problem, distinct, run_dir)
    measured = profile_configs(module, [str(c) for c in distinct], scratch_dir(settings, problem, "retime"),
                               settings, device, print)
    return dict(zip(measured.timings["config"], measured.timings["time_us"]))


def _row(label: str, configs: int, outcomes: dict[str, SearchRun], retimed: dict[str, float]) -> dict:
    row: dict = {"size": label, "configs": configs}
    for search, run in outcomes.items():
        outcome, seconds = run.outcome, run.seconds
        stage = outcome.seconds
        rounds = outcome.searched.rounds
        timings = sum(r.configs for r in rounds)
        compiled = len(outcome.compiled.compiled) + len(outcome.compiled.failed)
        row[f"{search} s"] = f"{seconds:.1f} (resumed)" if run.resumed else round(seconds, 1)
        row[f"{search} configs/s"] = round(configs / seconds, 1)
        row[f"{search} compile configs/s"] = round(compiled / stage["compile"], 1) if stage.get("compile") else ""
        row[f"{search} timing configs/s"] = round(timings / stage["profile"], 1) if stage.get("profile") else ""
        row[f"{search} rounds"] = " / ".join(f"{r.configs}x{r.iters}" for r in rounds)
        row[f"{search} winner"] = str(outcome.winner)
        row[f"{search} us"] = round(outcome.winner_time_us, 2)
        row[f"{search} retimed us"] = round(retimed[str(outcome.winner)], 2)
    for search in outcomes:
        if search == "exhaustive" or "exhaustive" not in outcomes:
            continue
        ratio = row[f"{search} retimed us"] / row["exhaustive retimed us"]
        same = row[f"{search} winner"] == row["exhaustive winner"]
        row[f"{search} / exhaustive"] = 1.0 if same else round(ratio, 4)
        row[f"{search} within 1%"] = "yes" if same or ratio <= 1 + WITHIN else "NO"
    return row


def _markdown(rows: list[dict], skipped: list[str], header: str) -> str:
    columns = list(dict.fromkeys(column for row in rows for column in row))
    lines = [header, "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(row.get(column, "")) for column in columns) + " |" for row in rows]
    lines.append("")
    for column in dict.fromkeys(column for row in rows for column in row if column.endswith(" within 1%")):
        verdicts = [row[column] for row in rows if column in row]
        lines.append(f"{column.removesuffix(' within 1%')} within 1% of exhaustive (winners re-timed side by side): "
                     f"{verdicts.count('yes')} of {len(verdicts)} sizes run")
    lines += [f"not run: {line}" for line in skipped] or ["every chosen size ran"]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes_file", type=Path)
    parser.add_argument("--sizes", help="entries to run: 1-based numbers or MxNxK, comma-separated (default all)")
    parser.add_argument("--searches", default=",".join(SEARCHES), help="comma-separated, in the order to run them")
    parser.add_argument("--cache", choices=("cold", "warm"), default="warm")
    parser.add_argument("--cache_dir", type=Path, help="with --cache warm: the shared cache's folder (kept)")
    parser.add_argument("--time_limit", type=float, default=420.0, help="seconds for the whole run (see above)")
    parser.add_argument("--order", choices=("file", "smallest"), default="file",
                        help="run the sizes in file order, or fewest configs first (more sizes fit the limit)")
    parser.add_argument("--run_dir", type=Path, help="keep each search's working folder here: a rerun resumes it")
    parser.add_argument("--retime_iters", type=int, default=100)
    parser.add_argument("--num_threads", type=int, default=default_workers())
    parser.add_argument("--compile_pool", choices=POOLS, default="process")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("bench_search"), help="writes OUT.csv and OUT.md")
    parser.add_argument("--space", type=Path, help="a space file instead of the full space (smoke tests only)")
    parser.add_argument("--interpret", action="store_true", help="CPU smoke test: times are not meaningful")
    args = parser.parse_args()
    searches = [s.strip() for s in args.searches.split(",") if s.strip()]
    if not searches or set(searches) - set(SEARCHES):
        raise UserError(f"--searches: choose from {', '.join(SEARCHES)}")

    started = time.perf_counter()
    if args.interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    device = INTERPRETER_PROFILE if args.interpret else detect_device()
    space = read_space(args.space, device.vendor)
    settings = TuneSettings(profiler=choose_profiler("auto", device.vendor), num_threads=args.num_threads,
                            jobs=args.jobs, compile_pool=args.compile_pool, warmup=args.warmup, iters=args.iters,
                            space=space, interpret=args.interpret)
    requests = chosen_entries(file_entries(args.sizes_file), args.sizes)
    sized = [(number, request, len(prune(request.problem, device, space).configs)) for number, request in requests]
    if args.order == "smallest":
        sized.sort(key=lambda item: item[2])
    rows, skipped, largest = [], [], (0, 0.0)  # largest: (configs, seconds) of the biggest search so far
    with tempfile.TemporaryDirectory(prefix="bench_search_") as workdir:
        if args.cache == "warm":
            shared = args.cache_dir or Path(tempfile.mkdtemp(prefix="triton_warm_", dir=workdir))
            shared.mkdir(parents=True, exist_ok=True)
            os.environ["TRITON_CACHE_DIR"] = str(shared.resolve())
        for number, request, configs in sized:
            problem = request.problem
            # the biggest search measured says best what a big one costs (small ones are all start-up)
            rate = largest[0] / largest[1] if largest[0] >= RATE_FROM_CONFIGS else FIRST_GUESS_RATE
            expected = configs * len(searches) / rate
            left = args.time_limit - (time.perf_counter() - started)
            if expected > left:
                skipped.append(f"entry {number} {problem.label} ({configs} configs): about {expected:.0f} s "
                               f"expected, {max(left, 0):.0f} s left of --time_limit {args.time_limit:g}")
                print(f"skip: {skipped[-1]}", flush=True)
                continue
            print(f"entry {number} {problem.label}: {configs} configs", flush=True)
            outcomes = {}
            try:
                for search in searches:
                    outcomes[search] = _search(problem, device, settings, search, args.cache == "cold",
                                               Path(workdir), args.run_dir)
                    if not outcomes[search].resumed:
                        largest = max(largest, (configs, outcomes[search].seconds))
            except SizeFailed as failure:
                skipped.append(f"entry {number} {problem.label}: failed ({failure})")
                continue
            retimed = _retime(problem, device, settings, [run.outcome.winner for run in outcomes.values()],
                              args.retime_iters, Path(workdir))
            rows.append(_row(problem.label, configs, outcomes, retimed))
            for search, run in outcomes.items():
                outcome = run.outcome
                record(args.out.with_suffix(f".{search}.yaml"), ResultEntry(
                    problem, outcome.winner, outcome.winner_time_us, problem.tflops(outcome.winner_time_us),
                    device.name, settings.profiler.name, outcome.matmul_time_us))
            print(rows[-1], flush=True)
            _write(args, rows, skipped, device, started)  # after each size: a run cut short keeps what it did
    print(_write(args, rows, skipped, device, started))
    return 0


def _write(args: argparse.Namespace, rows: list[dict], skipped: list[str], device: DeviceProfile,
           started: float) -> str:
    import torch
    import triton

    header = (f"{device.name}; torch {torch.__version__}, triton {triton.__version__}; "
              f"space: {args.space or 'full (default)'}; {args.cache} Triton cache; "
              f"--num_threads {args.num_threads} --compile_pool {args.compile_pool} --jobs {args.jobs} "
              f"--iters {args.iters} --warmup {args.warmup}; winners re-timed over {args.retime_iters} launches; "
              f"{time.perf_counter() - started:.0f} s in all")
    text = _markdown(rows, skipped, header)
    args.out.with_suffix(".md").write_text(text)
    if rows:
        with open(args.out.with_suffix(".csv"), "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(dict.fromkeys(c for row in rows for c in row)))
            writer.writeheader()
            writer.writerows(rows)
    return text


if __name__ == "__main__":
    sys.exit(run_script("bench_search", main))
