"""Command line of tune_gemm (flag names as in the ROCm tuning script) and the run it drives."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from tune_gemm.compile.pool import POOLS, default_workers
from tune_gemm.core.device import INTERPRETER_PROFILE, DeviceProfile, detect_device
from tune_gemm.core.dtypes import (
    DTYPES,
    check_combination,
    check_device_runs,
    dtype_named,
)
from tune_gemm.core.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_WRONG_RESULT, UserError
from tune_gemm.core.problem import GemmProblem
from tune_gemm.files.results import (
    ResultEntry,
    check_writable,
    exclusive,
    read_entries,
    record,
    recorded,
)
from tune_gemm.files.rocm_files import vendor_note
from tune_gemm.files.sizes import SizeRequest, check_fits, check_size, load_sizes
from tune_gemm.measure import CHOICES, choose_profiler, run_knobs
from tune_gemm.measure.postprocess import STATISTICS
from tune_gemm.outputs.console import print_outcome, time_breakdown
from tune_gemm.outputs.outputs import (
    EXPORTERS,
    keep_timings,
    plan_outputs,
    write_outputs,
)
from tune_gemm.run import benchmark
from tune_gemm.run.gpus import GpuSelection, gpus_for_run, pinning_env
from tune_gemm.run.items import SizeDone, tune_one
from tune_gemm.run.pipeline import SizeFailed, check_recorded, require_config
from tune_gemm.run.ray_workers import check_ray_flags, tune_on_ray
from tune_gemm.run.start_up import start_helpers
from tune_gemm.run.workers import slots_for, tune_on_workers
from tune_gemm.search.checkpoint import Checkpoint, discard
from tune_gemm.search.progress import stages_for
from tune_gemm.search.search import SEARCHES
from tune_gemm.search.settings import TuneSettings, config_timeout_for
from tune_gemm.space.ranges import RangeSpace, deterministic


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tune_gemm", description="Find the fastest Triton GEMM config per size.")
    parser.add_argument("-m", type=int, help="M of C[M,N] = A[M,K] @ B[K,N]")
    parser.add_argument("-n", type=int, help="N")
    parser.add_argument("-k", type=int, help="K")
    parser.add_argument("--gemm_size_file", type=Path, help="YAML list of {M, N, K} entries (a results file works)")
    parser.add_argument("--tuning_results_file", type=Path, help="results YAML, one entry per size, rewritten "
                        f"after each size (default {run_knobs.DEFAULT_RESULTS_FILE})")
    parser.add_argument("--o", type=Path, help="same as --tuning_results_file (the ROCm script's name)")
    parser.add_argument("--compare", action="store_true", help="check each winner against a float64 reference")
    parser.add_argument("--compare_wo_tuning", action="store_true",
                        help="check the configs recorded in --gemm_size_file, no tuning; exit 1 if any fails")
    for operand in ("a", "b", "c"):
        parser.add_argument(f"-dtype_{operand}", f"--dtype_{operand}", default="fp16",
                            help=f"element type of {operand.upper()}: {', '.join(DTYPES)}")
    parser.add_argument("-col_a", "--col_a", action="store_true", help="A is column-major")
    parser.add_argument("-col_b", "--col_b", action="store_true", help="B is column-major")
    parser.add_argument("--num_threads", type=int, default=default_workers(), help="compile workers (default: CPU count)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="child runs the configs are timed in, each as soon as its configs compiled (default 1)")
    parser.add_argument("--compile_pool", choices=POOLS, default="process",
                        help="compile workers are processes (default) or threads of the tuner")
    parser.add_argument("--search", choices=SEARCHES, default="refine",
                        help="refine (default): one config per kernel shape, then every variant of the best shapes; "
                             "exhaustive: every config fully; halving: rounds that keep the best")
    parser.add_argument("--time_budget", type=float, metavar="SECONDS",
                        help="per size, from when the run's compile workers and timing child are up: once spent, time "
                             "no more configs and pick from those timed")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bars, one line per stage (also when the output is not a terminal)")
    parser.add_argument("--profiler", default="auto", help=f"timer: {', '.join(CHOICES)} (auto: cupti on NVIDIA, rocprof on AMD if installed)")
    parser.add_argument("--iters", type=int, default=20, help="timed launches per config (after warm-up)")
    parser.add_argument("--warmup", type=int,
                        help=f"warm-up launches per config, dropped (default {run_knobs.DEFAULT_WARMUP})")
    parser.add_argument("--no_warmup", action="store_true",
                        help="no warm-up launches and no compile stage: kernels compile on their first launch")
    parser.add_argument("--ngpus", type=int, help="use GPUs 0..N-1, one worker process each (with --interpret: N "
                        "interpreter workers)")
    parser.add_argument("--gpu_ids", help="comma-separated GPU ids to use, e.g. 0,1,3, one worker process each")
    parser.add_argument("--ray", metavar="ADDRESS",
                        help="tune the sizes as tasks on a Ray cluster, one GPU each ('auto': this host's cluster)")
    parser.add_argument("--init_type", choices=run_knobs.INIT_TYPES, default="randn",
                        help="how timing inputs are filled (checks always use randn)")
    parser.add_argument("--rotating_tensor", type=int, metavar="MB",
                        help="total MB of the input sets launches rotate over (0: one set; default: past twice the L2)")
    parser.add_argument("--flush", choices=run_knobs.FLUSHES,
                        help="which timed launches run right after an L2 flush (overwriting twice its size): final: "
                             "those of the round that picks the winner, and --benchmark's; all: every round's; none; "
                             f"auto (default): all for a size bound by memory (under "
                             f"{run_knobs.STREAMING_INTENSITY:g} flops per byte of A, B and C, as a decoding step), "
                             "final for the others")
    parser.add_argument("--icache_flush", action="store_true",
                        help="the ROCm script's flag: flush before every timed launch of every round (--flush all)")
    parser.add_argument("--bias_vector", action="store_true", help="C = A @ B + bias, one bias value per row of C")
    parser.add_argument("--time_breakdown", action="store_true",
                        help="print each size's compile / profile / post-process seconds")
    parser.add_argument("--statistic", choices=STATISTICS, default="median",
                        help="median of the timed launches, or the seed's 'last' launch")
    parser.add_argument("--space", type=Path, help="YAML mapping config field -> values replacing the full space")
    parser.add_argument("--deterministic", action="store_true",
                        help="only configs whose C is the same bit for bit every launch: no split-K partials added "
                             "atomically into a running sum (FUSED_REDUCE 2)")
    parser.add_argument("--config_timeout", type=float,
                        help="seconds a config may run without progress before it is killed as hung "
                             "(default 60; 300 with --no_warmup or --interpret, where the child compiles or interprets)")
    parser.add_argument("--retune", action="store_true",
                        help="tune sizes the results file already holds (default: skip them, so a rerun resumes)")
    parser.add_argument("--keep", action="store_true", help="keep generated kernel files and profiler CSVs")
    parser.add_argument("--verbose", action="store_true",
                        help="print failures, the child's output and the time breakdown")
    parser.add_argument("--interpret", action="store_true",
                        help="run on the CPU under the Triton interpreter: correctness only, times not meaningful")
    parser.add_argument("--export", action="append", metavar="FORMAT",
                        help="after the run (alone when no size is given), write the results file's winners beside "
                        f"it as {' / '.join(EXPORTERS)}; repeatable or comma-separated")
    parser.add_argument("--report", type=Path, metavar="DIR",
                        help="after the run (alone when no size is given), write DIR/report.md and PNG plots")
    benchmark.add_flags(parser)
    return parser


def _defaults(args: argparse.Namespace) -> GemmProblem:
    dtype_a, dtype_b, dtype_c = (dtype_named(getattr(args, f"dtype_{x}"), f"-dtype_{x}") for x in "abc")
    check_combination(dtype_a, dtype_b, dtype_c)
    return GemmProblem(1, 1, 1, dtype_a, dtype_b, dtype_c, col_a=args.col_a, col_b=args.col_b, bias=args.bias_vector)


def _requests(args: argparse.Namespace, defaults: GemmProblem) -> list[SizeRequest]:
    if args.config_str:
        return [benchmark.config_str_request(args, defaults)]
    sizes_given = [value is not None for value in (args.m, args.n, args.k)]
    if args.gemm_size_file and any(sizes_given):
        raise UserError("give either -m -n -k or --gemm_size_file, not both")
    if args.gemm_size_file:
        return load_sizes(args.gemm_size_file, defaults)
    if args.compare_wo_tuning:
        raise UserError("--compare_wo_tuning needs --gemm_size_file (a results file with configs)")
    if not all(sizes_given):
        raise UserError("give the size as -m M -n N -k K, or a --gemm_size_file")
    for flag, value in (("-m", args.m), ("-n", args.n), ("-k", args.k)):
        if value < 1:
            raise UserError(f"{flag} must be positive, got {value}")
    check_size(args.m, args.n, args.k, "size")
    return [SizeRequest(replace(defaults, M=args.m, N=args.n, K=args.k), None)]


def _space(path: Path | None, vendor: str, bitwise_repeatable: bool) -> RangeSpace:
    from tune_gemm.space.space_file import read_space  # and YAML's parser: not needed before the device is known

    space = read_space(path, vendor)
    try:
        return deterministic(space) if bitwise_repeatable else space
    except ValueError as error:
        raise UserError(f"--deterministic: {error}") from None


def _check_numbers(args: argparse.Namespace) -> None:
    if args.compare and args.compare_wo_tuning:
        raise UserError("--compare and --compare_wo_tuning exclude each other")
    for flag, value, least in (("--num_threads", args.num_threads, 1), ("--jobs", args.jobs, 1),
                               ("--iters", args.iters, 1), ("--warmup", args.warmup, 0)):
        if value < least:
            raise UserError(f"{flag} must be at least {least}, got {value}")
    if args.time_budget is not None and args.time_budget <= 0:
        raise UserError(f"--time_budget must be positive (seconds), got {args.time_budget}")
    if args.config_timeout is not None and args.config_timeout <= 0:
        raise UserError(f"--config_timeout must be positive, got {args.config_timeout}")


def _device(args: argparse.Namespace) -> tuple[DeviceProfile, GpuSelection]:
    gpus = gpus_for_run(args.ngpus, args.gpu_ids, args.interpret)
    if args.interpret:
        os.environ["TRITON_INTERPRET"] = "1"
        return INTERPRETER_PROFILE, gpus
    return detect_device(gpus.first), gpus


def _compare_wo_tuning(requests: list[SizeRequest], settings: TuneSettings, console: Console, where: Path,
                       vendor: str) -> int:
    configs = [require_config(r.config, f"{where} entry {i + 1}") for i, r in enumerate(requests)]
    note = vendor_note(configs, vendor, str(where))
    if note:
        console.print(note, markup=False)
    failures = 0
    for request, config in zip(requests, configs):
        try:
            error = check_recorded(request.problem, config, settings, vendor)
        except SizeFailed as failure:
            error, note = float("inf"), f" ({failure})"
        else:
            note = ""
        ok = error <= request.problem.dtype_a.tolerance
        failures += not ok
        console.print(f"{'PASS' if ok else 'FAIL'} {request.problem.label} {config}: relative error {error:.2e} "
                      f"(tolerance {request.problem.dtype_a.tolerance:.0e}){note}", markup=False)
    console.print(f"{len(requests) - failures} passed, {failures} failed")
    return EXIT_WRONG_RESULT if failures else EXIT_OK


def _tune(requests: list[SizeRequest], args: argparse.Namespace, settings: TuneSettings, device: DeviceProfile,
          console: Console, gpus: GpuSelection) -> int:
    check_writable(args.tuning_results_file)
    with exclusive(args.tuning_results_file):
        if not args.retune:
            entries = read_entries(args.tuning_results_file)
            todo = []
            for request in requests:
                if not recorded(entries, request.problem):
                    todo.append(request)
                else:  # a run killed between recording the size and discarding its checkpoint left that file
                    discard(Checkpoint.path_for(settings.workdir, request.problem.file_tag))
            if len(todo) < len(requests):
                console.print(f"skipping {len(requests) - len(todo)} size(s) already in {args.tuning_results_file} "
                              "(--retune to tune them again)")
            requests = todo
        return _tune_sizes(requests, args, settings, device, console, gpus)


def _sizes_done(requests: list[SizeRequest], args: argparse.Namespace, settings: TuneSettings,
                device: DeviceProfile, console: Console, gpus: GpuSelection) -> Iterator[SizeDone]:
    """Each size tuned, as it completes: in this process, on one worker per GPU, or on a Ray cluster."""
    # a size listed twice is tuned once: two workers on it at once would share its scratch files
    problems = list(dict.fromkeys(request.problem for request in requests))
    if args.ray:
        return tune_on_ray(problems, args.ray, settings, args.compare)
    if len(gpus.ids) > 1:
        return tune_on_workers(problems, slots_for(gpus, device.vendor, args.interpret), settings, args.compare)
    if problems:
        start_helpers(settings)  # they start while the first size is pruned and generated
    return (tune_one(problem, device, settings, args.compare, "", console.print,
                     stages_for(console, problem.label, args.quiet)) for problem in problems)


def _tune_sizes(requests: list[SizeRequest], args: argparse.Namespace, settings: TuneSettings,
                device: DeviceProfile, console: Console, gpus: GpuSelection) -> int:
    exit_code, timed, started = EXIT_OK, 0, time.perf_counter()
    for done in _sizes_done(requests, args, settings, device, console, gpus):
        problem, outcome = done.problem, done.outcome
        if outcome is None:
            console.print(f"FAILED {problem.label}{f' (on {done.where})' if done.where else ''}: {done.error}",
                          markup=False)
            exit_code = EXIT_WRONG_RESULT
            continue
        record(args.tuning_results_file, ResultEntry(
            problem, outcome.winner, outcome.winner_time_us, problem.tflops(outcome.winner_time_us), done.gpu,
            settings.profiler.name, outcome.matmul_time_us, outcome.searched.flushed))
        discard(outcome.checkpoint)  # recorded: nothing left to resume
        keep_timings(args.report, outcome)
        timed += outcome.searched.timed
        print_outcome(console, outcome, meaningful=not settings.interpret, verbose=settings.verbose)
        if args.time_breakdown or args.verbose:
            console.print(time_breakdown(outcome), markup=False)
        if outcome.check_error is not None:
            ok = outcome.check_error <= problem.dtype_a.tolerance
            console.print(f"{'PASS' if ok else 'FAIL'} {problem.label} winner {outcome.winner}: relative error "
                          f"{outcome.check_error:.2e} (tolerance {problem.dtype_a.tolerance:.0e})", markup=False)
            exit_code = exit_code or (EXIT_OK if ok else EXIT_WRONG_RESULT)
    seconds = time.perf_counter() - started
    console.print(f"tuned {len(requests)} size(s), {timed} configs timed in {seconds:.1f} s "
                  f"({timed / max(seconds, 1e-9):.1f} configs/s); results in {args.tuning_results_file}")
    return exit_code


def _where(args: argparse.Namespace, gpus: GpuSelection, pinned: bool) -> str:
    """What the device line adds: the cluster, the workers or the pinned GPU the sizes are tuned on."""
    listed = ",".join(map(str, gpus.ids))
    if args.ray:
        return f" (Ray cluster {args.ray})"
    if len(gpus.ids) > 1:
        return f" ({'interpreter workers' if args.interpret else 'GPUs'} {listed})"
    return f" (GPU {listed})" if pinned else ""


def run(args: argparse.Namespace, console: Console) -> int:
    args.tuning_results_file = run_knobs.results_file(args.o, args.tuning_results_file)
    args.warmup = run_knobs.warmup_launches(args.warmup, args.no_warmup)
    _check_numbers(args)
    benchmark.check_flags(args)
    check_ray_flags(args.ray, args.ngpus, args.gpu_ids, args.benchmark or args.config_str or args.compare_wo_tuning)
    outputs = plan_outputs(args.export, args.report, args.compare_wo_tuning)
    if outputs.wanted and not args.gemm_size_file and (args.m, args.n, args.k) == (None, None, None):
        write_outputs(outputs, args.tuning_results_file, lambda line: console.print(line, markup=False))  # no size
        return EXIT_OK
    defaults = _defaults(args)
    requests = _requests(args, defaults)
    device, gpus = _device(args)
    pinned = not args.interpret and (args.ngpus is not None or args.gpu_ids is not None)
    space = _space(args.space, device.vendor, args.deterministic)
    for index, request in enumerate(requests):
        where = f"{args.gemm_size_file} entry {index + 1}" if args.gemm_size_file else "size"
        check_fits(request.problem, device.memory_bytes, where)
        check_device_runs(request.problem.dtype_a, device, where)
    settings = TuneSettings(
        profiler=choose_profiler(args.profiler, device.vendor), num_threads=args.num_threads, jobs=args.jobs,
        compile_pool=args.compile_pool, search=args.search, time_budget=args.time_budget, warmup=args.warmup,
        iters=args.iters,
        statistic=args.statistic, interpret=args.interpret, keep=args.keep, space=space,
        config_timeout=args.config_timeout or config_timeout_for(args.interpret, not args.no_warmup),
        verbose=args.verbose, precompile=not args.no_warmup,
        init_type=args.init_type, rotating_bytes=run_knobs.rotating_bytes(args.rotating_tensor, device.memory_bytes),
        cache_flush=run_knobs.flush_rounds(args.flush, args.icache_flush),
        child_env=pinning_env(gpus.first, device.vendor) if pinned else {},
    )
    for line in (gpus.note, run_knobs.ZEROS_WARNING if args.init_type == "zeros" else None):
        if line:
            console.print(line, markup=False)
    if args.benchmark or args.config_str:
        return benchmark.run_benchmark(requests, args, defaults, settings, device, console)
    if args.compare_wo_tuning:
        return _compare_wo_tuning(requests, settings, console, args.gemm_size_file, device.vendor)
    console.print(f"device: {device.name}{_where(args, gpus, pinned)}; profiler: {settings.profiler.name}")
    exit_code = _tune(requests, args, settings, device, console, gpus)
    if outputs.wanted and args.tuning_results_file.exists():  # absent when every size failed
        write_outputs(outputs, args.tuning_results_file, lambda line: console.print(line, markup=False))
    return exit_code


def main(argv: list[str] | None = None) -> int:
    console = Console(highlight=False, soft_wrap=True)
    try:
        return run(build_parser().parse_args(argv), console)
    except UserError as error:
        print(f"tune_gemm: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print("tune_gemm: interrupted; sizes finished so far are in the results file, and the same command "
              "resumes the size in progress from its checkpoint", file=sys.stderr)
        return 130
