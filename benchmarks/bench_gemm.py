"""Benchmark recorded winners against what users would use instead, on the same inputs and timer.

For each entry of a results file: tune_gemm's recorded config; the cuBLAS call the tuner times as its
baseline for that dtype (tune_gemm.measure.baselines: torch.matmul, torch._scaled_mm for fp8, torch._int_mm for int8,
or torch.matmul on dequantized inputs where those do not run; the bias added after it); the same call under
torch.compile(mode="max-autotune-no-cudagraphs") with Inductor's Triton templates only (Inductor tunes
templates for mm, _scaled_mm and _int_mm, and fuses the bias); and the Triton matmul tutorial's eight stock
configs on the same kernel family (the fastest of those that fit, as @triton.autotune over that list would
pick; tune_gemm/outputs/tutorial.py). All on the same inputs and the same timer: interleaved rounds, each running
every column once with L2 flushed before it, the median kept (benchmarks/interleaved.py: every column meets
the same clock and power state).

    python benchmarks/bench_gemm.py output_tuning.yaml --csv bench.csv --png bench.png
    python benchmarks/bench_gemm.py tuned.yaml --tune benchmarks/sizes.yaml --png b.png -- --search halving
    python benchmarks/bench_gemm.py output_tuning.yaml --csv report/bench.csv   # then tune_gemm --report report
    python benchmarks/bench_gemm.py output_tuning.yaml --floors   # how far each column is from the floors
    python benchmarks/bench_gemm.py output_tuning.yaml --time_budget 500   # fewer shapes, never fewer columns
    python benchmarks/bench_gemm.py new.yaml --before old.yaml   # two tunings of the same shapes side by side

--before OLD adds a column: for each entry, the config OLD records for the same problem (shape, layouts, dtypes,
bias), timed in the same rounds on the same inputs, and "vs before" (its time over the entry's). Two tunings then
meet the same clock, power state and baselines; where both recorded one config the ratio shows the noise.

--time_budget S starts a size only where it would end within S seconds of the first, at the pace of the slowest size
so far; the sizes left are named, and the table, CSV and chart hold those measured. Ctrl-C ends the run the same way.

With --floors, two references join the rounds (benchmarks/floors.py): an empty kernel (the launch floor) and one
pass over A, B and C (the memory floor). Each row then gives the higher of the two as the shape's floor, every
GEMM column's time as a multiple of it, and "ceiling vs best peer": the best peer's time over the floor, the most
any kernel could be ahead of that peer at this shape.
"""

from __future__ import annotations

import argparse
import csv
import functools
import importlib.util
import io
import math
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch  # noqa: E402
import triton  # noqa: E402
from floors import LAUNCH_FLOOR, MEMORY_FLOOR, floor_calls  # noqa: E402
from interleaved import AT_RISK_SHARE, interleaved_times  # noqa: E402
from script_edges import recorded_winners, require_gpu, run_script  # noqa: E402

from tune_gemm.core.problem import GemmProblem  # noqa: E402
from tune_gemm.files.sizes import SizeRequest  # noqa: E402
from tune_gemm.generate import write_module  # noqa: E402
from tune_gemm.kernels import matmul_family as family  # noqa: E402
from tune_gemm.measure.baselines import (  # noqa: E402
    FP8_DEQUANTIZED,
    INT8_AS_FP32,
    INT_MM,
    MATMUL,
    SCALED_MM,
    Baseline,
    baseline_for,
)
from tune_gemm.outputs.files import write_text  # noqa: E402
from tune_gemm.outputs.tutorial import TUTORIAL_CONFIGS  # noqa: E402


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _max_autotune(fn):
    import torch._inductor.config as inductor_config

    inductor_config.max_autotune_gemm_backends = "TRITON"
    if hasattr(inductor_config.triton, "enable_persistent_tma_matmul"):  # its strongest Hopper template
        inductor_config.triton.enable_persistent_tma_matmul = True
    return torch.compile(fn, mode="max-autotune-no-cudagraphs", dynamic=False)


def _with_bias(c, bias):
    return c if bias is None else c + bias[:, None]


def inductor_target(label: str, operands: tuple) -> tuple:
    """(function, its arguments) for max-autotune to compile: the baseline's own call (`label`, from
    tune_gemm.measure.baselines) on the same operands, bias included, returning C."""
    a, b, c, *extra = operands
    bias = extra[0] if extra else None
    if label == SCALED_MM:
        def scaled(a, b, scale_a, scale_b, bias):
            return _with_bias(torch._scaled_mm(a, b, scale_a=scale_a, scale_b=scale_b, out_dtype=c.dtype), bias)
        # The same per-tensor scales as (1, 1) tensors: Inductor's Triton templates for _scaled_mm (torch 2.11) index
        # a scale with the tile's two indices, and fail to lower a (1,) one (AssertionError in store_output).
        scale_a, scale_b = (scale.reshape(1, 1) for scale in extra[1:])
        return scaled, (a, b, scale_a, scale_b, bias)
    if label == INT_MM:
        return (lambda a, b, bias: _with_bias(torch._int_mm(a, b), bias)), (a, b, bias)
    if label == FP8_DEQUANTIZED:  # as the baseline: dequantized once, outside the timing
        scale_a, scale_b = extra[1:]
        a, b = (a.float() * scale_a).to(c.dtype), (b.float() * scale_b).to(c.dtype)
    elif label == INT8_AS_FP32:
        a, b, bias = a.float(), b.float(), None if bias is None else bias.float()
    if label == MATMUL and c.dtype != a.dtype:  # fp16/bf16 into an fp32 C: the product cast up, fused by Inductor
        return (lambda a, b, bias: _with_bias(torch.matmul(a, b).to(c.dtype), bias)), (a, b, bias)
    return (lambda a, b, bias: _with_bias(torch.matmul(a, b), bias)), (a, b, bias)


def _do_bench_us(fn) -> float:
    return triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median") * 1e3


def best_tutorial(module, problem: GemmProblem, operands) -> tuple:
    """(a call of the fastest tutorial config on the entry's inputs, its name), picked by do_bench as
    @triton.autotune over that list would pick; (None, "") when none fits this GPU."""
    best = (math.inf, None, "")
    for config in TUTORIAL_CONFIGS:
        launcher = module.LAUNCHERS[str(config)]
        try:
            error = family.check_config(launcher, module.PROBLEM, "cuda")
        except triton.runtime.errors.OutOfResources:  # e.g. fp32 tiles past shared memory: autotune skips them too
            continue
        if error > problem.dtype_a.tolerance:
            raise SystemExit(f"{problem.label} tutorial config {config}: relative error {error:.2e}")
        call = functools.partial(launcher, *operands)
        us = _do_bench_us(call)
        if us < best[0]:
            best = (us, call, str(config))
    return best[1], best[2]


@dataclass
class Measured:
    times: dict[str, float]  # column -> median microseconds
    host_us: dict[str, float]  # column -> median microseconds the host took to issue a call (interleaved_times)
    exposed: list[str]  # columns whose calls found their timed window open in every attempt (interleaved_times)
    tutorial: str  # the tutorial config that gave its column ("" when none fits)
    baseline: str  # the cuBLAS call of the cuBLAS column (tune_gemm.measure.baselines label)
    failures: dict[str, str]  # column -> why it has no time
    before_config: str = ""  # the config of the "before" column (--before), "" without one


PEERS = ("cuBLAS", "max-autotune")  # what users would use instead; "vs best peer" takes the faster


@dataclass
class EntryColumns:
    calls: dict[str, object]  # column -> a call with no arguments, on the entry's inputs
    module: object  # the generated module of the entry's config and the tutorial configs
    operands: tuple
    baseline: Baseline  # the cuBLAS column's call; its label says which library call that is
    failures: dict[str, str]  # column -> why it has no call


def _checked_launcher(module, problem: GemmProblem, config):
    """The generated module's launcher of `config`, after its output matched float64 within the dtype's tolerance."""
    launcher = module.LAUNCHERS[str(config)]
    error = family.check_config(launcher, module.PROBLEM, "cuda")
    if error > problem.dtype_a.tolerance:
        raise SystemExit(f"{problem.label} {config}: relative error {error:.2e}, not benchmarking a wrong kernel")
    return launcher


def entry_columns(problem: GemmProblem, config, workdir: Path, before=None) -> EntryColumns:
    """The tune_gemm, cuBLAS and max-autotune calls of one entry (and `before`, another tuning's config for it),
    on the same inputs; the recorded configs are checked against float64 first (max-autotune autotunes here,
    outside any timing)."""
    extra = [before] if before is not None and before != config else []
    configs = [config, *extra, *(c for c in TUTORIAL_CONFIGS if c not in (config, *extra))]
    module = _load(write_module(problem, configs, workdir))
    operands = family.make_operands(module.PROBLEM, "cuda")
    launcher = _checked_launcher(module, problem, config)
    baseline = baseline_for([operands])
    calls = {"tune_gemm": lambda: launcher(*operands), "cuBLAS": lambda: baseline(0)}
    if before is not None:
        before_launcher = _checked_launcher(module, problem, before)
        calls["before"] = lambda: before_launcher(*operands)
    with baseline.precision():  # fp32: Inductor's templates and cuBLAS both run it as TF32, as the configs do
        compiled, failure = compiled_peer(*inductor_target(baseline.label, operands))
    failures = {}
    if compiled is not None:
        calls["max-autotune"] = compiled
    else:
        failures["max-autotune"] = f"failed to compile {baseline.label}: {failure}"
        print(f"{problem.label}: max-autotune {failures['max-autotune']}", flush=True)
    return EntryColumns(calls, module, operands, baseline, failures)


def compiled_peer(function, arguments: tuple):
    """(`function` compiled by max-autotune, autotuned on `arguments`, as a call with no arguments; None), or
    (None, why) when Inductor cannot compile it (e.g. a _scaled_mm layout its templates do not take): the
    column then stays empty and the other columns are still measured.

    Dynamo's caches are cleared first: inductor_target builds every entry's function from the same code, and Dynamo
    compiles one code object for at most `recompile_limit` (8) shapes, then runs it uncompiled. A ninth size's
    max-autotune column was so cuBLAS itself (H100, the nine public shapes: 8192x1024x65536)."""
    torch._dynamo.reset()
    compiled = _max_autotune(function)
    try:
        compiled(*arguments)  # autotunes here, outside any timing
    except Exception as error:  # Inductor wraps what went wrong in its own errors: any of them ends the column
        return None, " ".join(f"{type(error).__name__}: {error}".split())[:300]
    return (lambda: compiled(*arguments)), None


def bench_entry(problem: GemmProblem, config, workdir: Path, floors: bool = False, before=None) -> Measured:
    """Every column's median microseconds for one size (see the module docstring); with `floors`, the launch and
    memory floors of benchmarks/floors.py are timed in the same rounds; with `before`, that config too."""
    entry = entry_columns(problem, config, workdir, before)
    tutorial_call, tutorial = best_tutorial(entry.module, problem, entry.operands)
    calls = entry.calls | ({"triton tutorial": tutorial_call} if tutorial_call else {})
    if floors:
        calls |= floor_calls(*entry.operands[:3])
    with entry.baseline.precision():
        timed = interleaved_times(calls)
    if timed.exposed:
        print(f"{problem.label}: after {timed.attempts} attempts, more than {AT_RISK_SHARE:.0%} of the calls of "
              f"{', '.join(timed.exposed)} still found the GPU past the start of their timed window: their times may "
              "hold host time", flush=True)
    times = {name: math.inf for name in (*PEERS, "triton tutorial")} | timed.gpu_us
    return Measured(times, timed.host_us, timed.exposed, tutorial, entry.baseline.label, entry.failures,
                    "" if before is None else str(before))


def _ratio(peer_us: float, ours_us: float) -> float | str:
    """How many times faster tune_gemm is than a peer; "" when the peer has no time (it failed to compile)."""
    return round(peer_us / ours_us, 3) if math.isfinite(peer_us) else ""


FLOOR_COLUMNS = ("floor us", "floor", "tune_gemm / floor", "cuBLAS / floor", "max-autotune / floor",
                 "ceiling vs best peer")


def floor_fields(times: dict[str, float]) -> dict[str, object]:
    """The shape's floor (the higher of the launch and memory floors' times), each GEMM column's time over it, and
    the best peer's time over it: what a kernel at the floor would measure "vs best peer"."""
    floor_name = max((LAUNCH_FLOOR, MEMORY_FLOOR), key=times.__getitem__)
    floor_us = times[floor_name]
    fields = {"floor us": round(floor_us, 2), "floor": floor_name}
    for name in ("tune_gemm", *PEERS):
        fields[f"{name} / floor"] = round(times[name] / floor_us, 3) if math.isfinite(times[name]) else ""
    fields["ceiling vs best peer"] = _ratio(min(times[peer] for peer in PEERS), floor_us)
    return fields


def print_table(rows: list[dict], columns: list[str]) -> None:
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row.get(column, "")) for column in columns) + " |")


def geometric_mean(ratios: list) -> str:
    """Over the entries where the ratio exists, saying how many those are when some lack it."""
    present = [r for r in ratios if r != ""]
    if not present:
        return "n/a"
    mean = f"{math.exp(sum(math.log(r) for r in present) / len(present)):.3f}"
    return mean if len(present) == len(ratios) else f"{mean} (over {len(present)} of {len(ratios)} entries)"


def _write_csv(path: Path, rows: list[dict]) -> None:
    """The table so far as CSV, replaced atomically."""
    text = io.StringIO()
    fields = list(dict.fromkeys(field for row in rows for field in row))  # a later row may add one ("vs before")
    writer = csv.DictWriter(text, fieldnames=fields, restval="")
    writer.writeheader()
    writer.writerows(rows)
    write_text(path, text.getvalue(), "benchmark CSV")


def _split_at_dashes(argv: list[str]) -> tuple[list[str], str, list[str]]:
    """(this script's arguments, "--", the tuner's arguments)."""
    if "--" not in argv:
        return argv, "", []
    cut = argv.index("--")
    return argv[:cut], "--", argv[cut + 1:]


def starts_another(elapsed_s: float, slowest_s: float | None, budget_s: float | None) -> bool:
    """Whether a size may start `elapsed_s` seconds into the run: always without a budget or before any size has run
    (`slowest_s` None); else where it would end within the budget taking as long as the slowest size so far."""
    return budget_s is None or slowest_s is None or elapsed_s + slowest_s <= budget_s


def entry_row(problem: GemmProblem, config, measured: Measured, floors: bool) -> dict:
    """One size's row of the table and CSV: each column's µs and TFLOP/s, tune_gemm's ratios, the host costs."""
    times, tutorial = measured.times, measured.tutorial
    row = {"size": problem.label, "config": str(config), "cuBLAS call": measured.baseline}
    for name, us in times.items():
        finite = math.isfinite(us)
        row[f"{name} us"] = round(us, 2) if finite else ""
        row[f"{name} TFLOP/s"] = round(problem.tflops(us), 1) if finite else ""
    for peer in PEERS:
        row[f"vs {peer}"] = _ratio(times[peer], times["tune_gemm"])
    row["vs best peer"] = _ratio(min(times[peer] for peer in PEERS), times["tune_gemm"])
    row["vs tutorial"] = round(times["triton tutorial"] / times["tune_gemm"], 3) if tutorial else ""
    if "before" in times:
        row["before config"] = measured.before_config
        row["vs before"] = _ratio(times["before"], times["tune_gemm"])
    if floors:
        row |= floor_fields(times)
    # every column gets a host field, empty where it did not run, so that all rows have the fields of the first (the
    # CSV's header): at 16x16x16 fp8 max-autotune has no template, at 1024^3 it runs
    row |= {f"{name} host us": round(measured.host_us[name], 1) if name in measured.host_us else "" for name in times}
    row["host-bound columns"] = "; ".join(measured.exposed)
    row["tutorial config"] = tutorial
    row["failed columns"] = "; ".join(f"{name} {why}" for name, why in measured.failures.items())
    return row


INTERRUPTED = "interrupted"  # BenchRun.why_left of a run stopped by Ctrl-C


@dataclass
class BenchRun:
    rows: list[dict]  # one per size benchmarked (entry_row)
    left: list[SizeRequest]  # the sizes not benchmarked, in the file's order
    why_left: str  # "" when none were left, else INTERRUPTED or the time budget that left them

    @property
    def interrupted(self) -> bool:
        return self.why_left == INTERRUPTED


def before_configs(requests: list[SizeRequest], earlier: list[SizeRequest]) -> dict:
    """For each request, the config an earlier tuning (`earlier`) recorded for the same problem, by problem; a
    problem the earlier tuning lacks is left out (its rows then have no "before" column)."""
    recorded = {request.problem: request.config for request in earlier}
    return {request.problem: recorded[request.problem] for request in requests if request.problem in recorded}


def bench_sizes(requests: list[SizeRequest], floors: bool, budget_s: float | None, csv_path: Path | None,
                clock: Callable[[], float] = time.monotonic, before: dict | None = None) -> BenchRun:
    """Benchmark each size in turn (bench_entry), as --time_budget allows (starts_another); Ctrl-C stops the run with
    the sizes measured. The CSV is rewritten after each size, so that a run killed keeps what it measured. `before`
    maps a problem to another tuning's config for it (before_configs), timed beside the entry's."""
    before = before or {}
    rows: list[dict] = []
    started, slowest_s = clock(), None
    with tempfile.TemporaryDirectory() as workdir:
        for index, request in enumerate(requests):
            if not starts_another(clock() - started, slowest_s, budget_s):
                return BenchRun(rows, requests[index:], f"time budget of {budget_s:g} s")
            begun = clock()
            try:
                measured = bench_entry(request.problem, request.config, Path(workdir), floors,
                                       before.get(request.problem))
            except KeyboardInterrupt:
                return BenchRun(rows, requests[index:], INTERRUPTED)
            slowest_s = max(slowest_s or 0.0, clock() - begun)
            rows.append(entry_row(request.problem, request.config, measured, floors))
            print(rows[-1], flush=True)
            if csv_path:
                _write_csv(csv_path, rows)
    return BenchRun(rows, [], "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path,
                        help="a tune_gemm results file; with --tune, where the tuning writes its results")
    parser.add_argument("--tune", type=Path, metavar="SIZES",
                        help="tune every size of this sizes file first (tune_gemm --compare, sizes already in "
                             "RESULTS are kept), then benchmark; arguments after -- go to tune_gemm")
    parser.add_argument("--csv", type=Path, help="write the table as CSV too")
    parser.add_argument("--png", type=Path, help="write a bar chart of TFLOP/s per shape and column")
    parser.add_argument("--floors", action="store_true",
                        help="time the launch and memory floors beside the columns (benchmarks/floors.py)")
    parser.add_argument("--before", type=Path, metavar="RESULTS",
                        help="another tuning's results file: its config for each entry's problem is timed beside "
                             "the entry's, with the ratio in \"vs before\"")
    parser.add_argument("--time_budget", type=float, metavar="SECONDS",
                        help="start a size only where it would end within this many seconds of the first, at the "
                             "pace of the slowest so far: fewer sizes, never fewer columns")
    own, _, tuner_args = _split_at_dashes(sys.argv[1:])
    args = parser.parse_args(own)
    if args.time_budget is not None and not args.time_budget > 0:
        parser.error(f"--time_budget must be a positive number of seconds, got {args.time_budget:g}")
    if args.tune:
        require_gpu()  # before the tuning, which would otherwise run to find no GPU to benchmark on
        from tune_gemm.cli import main as tune_gemm

        code = tune_gemm(["--gemm_size_file", str(args.tune), "--tuning_results_file", str(args.results), "--compare",
                          *tuner_args])
        if code:
            print(f"bench_gemm: tuning exited {code}; benchmarking what was recorded", file=sys.stderr)
    requests = recorded_winners(args.results, "bench_gemm")
    before = before_configs(requests, recorded_winners(args.before, "bench_gemm")) if args.before else {}
    require_gpu()
    run = bench_sizes(requests, args.floors, args.time_budget, args.csv, before=before)
    rows = run.rows
    if run.left:
        print(f"bench_gemm: {run.why_left}: {len(rows)} of {len(requests)} sizes benchmarked; not benchmarked: "
              f"{', '.join(request.problem.label for request in run.left)}", flush=True)
    if not rows:  # interrupted during the first size: the first always starts
        return 130
    print(f"GPU: {torch.cuda.get_device_name()}; torch {torch.__version__}, triton {triton.__version__}")
    columns = ["size", "config", "cuBLAS call", "tune_gemm TFLOP/s", "cuBLAS TFLOP/s", "max-autotune TFLOP/s",
               "triton tutorial TFLOP/s", "vs cuBLAS", "vs max-autotune", "vs best peer", "vs tutorial"]
    print_table(rows, columns)
    if before:
        print_table(rows, ["size", "config", "before config", "tune_gemm us", "before us", "vs before"])
    if args.floors:
        print_table(rows, ["size", f"{LAUNCH_FLOOR} us", f"{MEMORY_FLOOR} us", *FLOOR_COLUMNS])
    for column in ("vs cuBLAS", "vs max-autotune", "vs best peer", *(["ceiling vs best peer"] if args.floors else []),
                   *(["vs before"] if before else [])):
        print(f"geometric mean {column}: {geometric_mean([r.get(column, '') for r in rows])}")
    if args.png:
        from tune_gemm.outputs.plots import plot_tflops

        series = {name: [r[f"{name} TFLOP/s"] or math.nan for r in rows]
                  for name in ("tune_gemm", "cuBLAS", "max-autotune", "triton tutorial")}
        plot_tflops([r["size"] for r in rows], series, f"{torch.cuda.get_device_name()}: TFLOP/s", args.png)
    return 130 if run.interrupted else 0


if __name__ == "__main__":
    sys.exit(run_script("bench_gemm", main))
