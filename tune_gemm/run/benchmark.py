"""`--benchmark` and `--config_str`: run given configs as they are (no search), beside torch.matmul, checked.

Per entry, the config (as `Config.for_vendor` makes it for this GPU) is generated alone, compiled, timed
with torch.matmul on the same inputs by the run's timer (`--iters` launches after the warm-up), then
checked against float64 on fresh random inputs. The run prints a table and writes a report: a results
file (usable again as --gemm_size_file) whose entries add the check's relative error, `correct` and
`iters`, or `failure` for an entry that did not run. `--reference` and `--junit`: tune_gemm.files.regression.
"""

from __future__ import annotations

import argparse
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tune_gemm.compile.pool import compile_all
from tune_gemm.core.config import Config, ConfigNameError
from tune_gemm.core.device import DeviceProfile
from tune_gemm.core.errors import EXIT_OK, EXIT_WRONG_RESULT, UserError
from tune_gemm.core.problem import GemmProblem
from tune_gemm.files.regression import (
    DEFAULT_THRESHOLD,
    Measured,
    compare,
    load_reference,
    write_junit,
)
from tune_gemm.files.results import (
    ResultEntry,
    check_writable,
    exclusive,
    problem_fields,
    write_entries,
)
from tune_gemm.files.rocm_files import vendor_note
from tune_gemm.files.sizes import SizeRequest, check_size
from tune_gemm.generate import write_module
from tune_gemm.run.pipeline import (
    SizeFailed,
    TuneSettings,
    check_configs,
    clean_up,
    profile_configs,
    require_config,
    scratch_dir,
)

DEFAULT_REPORT = Path("benchmark_results.yaml")


def add_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--benchmark", action="store_true",
                        help="run the configs of --gemm_size_file as they are (no search), beside torch.matmul")
    parser.add_argument("--benchmark_results_file", type=Path,
                        help=f"report of --benchmark / --config_str (default for --benchmark: {DEFAULT_REPORT}; "
                             "--o names it too, as in the ROCm script)")
    parser.add_argument("--config_str", metavar="NAME",
                        help="compile, check and time this one config, e.g. M16_N8_K128_BM64_BN64_BK64_GM1_SK2_nW2_nS0 "
                             "(size from the name or -m -n -k)")
    parser.add_argument("--reference", type=Path,
                        help="earlier report: exit 1 if an entry or the geometric mean falls below --threshold of it")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                        help=f"slowest allowed TFLOP/s ratio to the --reference (default {DEFAULT_THRESHOLD})")
    parser.add_argument("--junit", type=Path, help="write the benchmark's verdicts as JUnit XML here")


def check_flags(args: argparse.Namespace) -> None:
    """Refuse benchmark flags that contradict the rest of the command line."""
    # --compare is allowed, as in the ROCm script: every entry is checked anyway
    modes = [flag for flag, on in (("--benchmark", args.benchmark), ("--config_str", args.config_str),
                                   ("--compare_wo_tuning", args.compare_wo_tuning)) if on]
    if len(modes) > 1:
        raise UserError(f"{' and '.join(modes)} exclude each other")
    if args.benchmark and not args.gemm_size_file:
        raise UserError("--benchmark needs --gemm_size_file (a results file with configs); for one config use "
                        "--config_str")
    if args.config_str and args.gemm_size_file:
        raise UserError("--config_str takes its size from the name or -m -n -k, not from --gemm_size_file")
    if not (args.benchmark or args.config_str):
        for flag, value in (("--benchmark_results_file", args.benchmark_results_file),
                            ("--reference", args.reference), ("--junit", args.junit)):
            if value is not None:
                raise UserError(f"{flag} needs --benchmark or --config_str")
    if not 0 < args.threshold <= 1:
        raise UserError(f"--threshold must be in (0, 1], got {args.threshold}")


def config_str_request(args: argparse.Namespace, defaults: GemmProblem) -> SizeRequest:
    """The size and config of --config_str: the size from the name's M.._N.._K.._ prefix or from -m -n -k."""
    try:
        config, size = Config.parse_sized(args.config_str)
    except ConfigNameError as error:
        raise UserError(f"--config_str: {error}") from None
    given = (args.m, args.n, args.k)
    if any(value is not None for value in given):
        if None in given:
            raise UserError("give all of -m -n -k, or none and a --config_str with M.._N.._K.._")
        if size is not None and size != given:
            raise UserError(f"--config_str names size {'x'.join(map(str, size))} but -m -n -k give "
                            f"{'x'.join(map(str, given))}")
        size = given
    if size is None:
        raise UserError(f"--config_str {args.config_str} names no size (M.._N.._K.._): give -m -n -k")
    for flag, value in zip(("-m", "-n", "-k"), size):
        if value < 1:
            raise UserError(f"{flag} must be positive, got {value}")
    check_size(*size, "size")
    return SizeRequest(replace(defaults, M=size[0], N=size[1], K=size[2]), config)


def report_path(args: argparse.Namespace) -> Path | None:
    """Where the report goes: --o (the ROCm script's benchmark output) or --benchmark_results_file."""
    named = {path for path in (args.o, args.benchmark_results_file) if path is not None}
    if len(named) > 1:
        raise UserError(f"--o {args.o} and --benchmark_results_file {args.benchmark_results_file} name different "
                        "reports; give one")
    if named:
        return named.pop()
    return DEFAULT_REPORT if args.benchmark else None


@dataclass(frozen=True)
class BenchmarkRow:
    problem: GemmProblem
    config: Config  # as it ran on this device
    time_us: float | None = None  # None: it did not run (failure says why)
    matmul_time_us: float | None = None
    error: float = float("inf")  # relative error against float64
    failure: str = ""

    @property
    def correct(self) -> bool:
        return not self.failure and self.error <= self.problem.dtype_a.tolerance

    def measured(self) -> Measured:
        if self.failure:
            return Measured(self.problem, self.config, None, f"did not run: {self.failure}")
        if not self.correct:
            return Measured(self.problem, self.config, None, f"wrong result: relative error {self.error:.2e}")
        return Measured(self.problem, self.config, self.problem.tflops(self.time_us))


def benchmark_config(problem: GemmProblem, config: Config, settings: TuneSettings, device: DeviceProfile,
                     log=print) -> BenchmarkRow:
    """Compile, time and check one config for one size; a failure is a row, never an exception."""
    config = config.for_vendor(device.vendor)
    name = str(config)
    scratch = scratch_dir(settings, problem, "bench")
    module = write_module(problem, [config], Path(settings.workdir).resolve())
    try:
        compiled = compile_all(module, [name], 1, settings.interpret)
        if compiled.failed:
            return BenchmarkRow(problem, config, failure=f"does not compile: {compiled.failed[name]}")
        measured = profile_configs(module, [name], scratch, settings, device, log)
        if measured.timings.empty:
            return BenchmarkRow(problem, config, matmul_time_us=measured.matmul_time_us,
                                failure=measured.outcome.failed.get(name, "no timing"))
        error = check_configs(module, [config], scratch, settings)[name]
        return BenchmarkRow(problem, config, float(measured.timings.loc[0, "time_us"]), measured.matmul_time_us,
                            error)
    except SizeFailed as failure:
        return BenchmarkRow(problem, config, failure=str(failure))
    finally:
        clean_up(settings, module, scratch)


def report_entry(row: BenchmarkRow, gpu: str, profiler: str, iters: int, l2_flushed: bool) -> dict:
    """One report entry: a results-file entry plus the check, or the size, config and failure."""
    if row.time_us is None:
        size, dtypes = problem_fields(row.problem)
        return {**size, **row.config.as_dict(), **dtypes, "gpu": gpu, "profiler": profiler, "failure": row.failure}
    mapping = ResultEntry(row.problem, row.config, row.time_us, row.problem.tflops(row.time_us), gpu, profiler,
                          row.matmul_time_us, l2_flushed).to_mapping()
    return {**mapping, "iters": iters, "relative_error": float(f"{row.error:.3g}"), "correct": row.correct}


def entry_line(row: BenchmarkRow) -> str:
    """One line per finished entry, whole whatever the terminal's width."""
    head = f"{'PASS' if row.correct else 'FAIL'} {row.problem.label} {row.config}"
    if row.failure:
        return f"{head}: {row.failure}"
    matmul = f", torch.matmul {row.matmul_time_us:.2f} us" if row.matmul_time_us else ""
    return (f"{head}: {row.time_us:.2f} us, {row.problem.tflops(row.time_us):.2f} TFLOP/s{matmul}, relative error "
            f"{row.error:.2e} (tolerance {row.problem.dtype_a.tolerance:.0e})")


def benchmark_table(rows: list[BenchmarkRow]) -> Table:
    table = Table(title=f"benchmark: {len(rows)} config(s)")
    for column in ("size", "config", "time (us)", "TFLOP/s", "torch.matmul (us)", "vs torch.matmul", "check"):
        text = column in ("size", "config", "check")  # folded, never cut: a log must hold the whole name
        table.add_column(column, justify="left" if text else "right", overflow="fold" if text else "ellipsis")
    for row in rows:
        problem, baseline = row.problem, row.matmul_time_us
        timed = ["-", "-"] if row.time_us is None else [f"{row.time_us:.2f}", f"{problem.tflops(row.time_us):.2f}"]
        matmul = "-" if baseline is None else f"{baseline:.2f}"
        ratio = f"{baseline / row.time_us:.2f}x" if baseline and row.time_us else "-"
        table.add_row(problem.label, str(row.config), *timed, matmul, ratio, "PASS" if row.correct else "FAIL")
    return table


def run_benchmark(requests: list[SizeRequest], args: argparse.Namespace, defaults: GemmProblem,
                  settings: TuneSettings, device: DeviceProfile, console: Console) -> int:
    """--benchmark / --config_str from the command line to the exit code (1: a wrong result or a regression)."""
    source = args.gemm_size_file or "--config_str"
    configs = [require_config(request.config, f"{source} entry {index + 1}", "--benchmark")
               for index, request in enumerate(requests)]
    reference = load_reference(args.reference, defaults) if args.reference else []
    report = report_path(args)
    if report is not None:
        if args.reference is not None and report.resolve() == args.reference.resolve():
            raise UserError(f"the report {report} would replace its own --reference; name another report")
        check_writable(report)
    note = vendor_note(configs, device.vendor, str(source))
    if note:
        console.print(note, markup=False)
    console.print(f"device: {device.name}; profiler: {settings.profiler.name}; {settings.iters} timed launches each")
    rows: list[BenchmarkRow] = []
    with exclusive(report) if report is not None else nullcontext():
        for request, config in zip(requests, configs):
            with console.status(f"benchmark {request.problem.label} {config}"):
                rows.append(benchmark_config(request.problem, config, settings, device, console.print))
            console.print(entry_line(rows[-1]), markup=False)
            if report is not None:  # rewritten after each entry: an interrupted run keeps what it measured
                flushed = settings.flushes(final=True)
                write_entries(report, [report_entry(row, device.name, settings.profiler.name, settings.iters, flushed)
                                       for row in rows])
    console.print(benchmark_table(rows))
    if settings.interpret:
        console.print("times are host times under the Triton interpreter: NOT meaningful, correctness only")
    wrong = sum(not row.correct for row in rows)
    console.print(f"{len(rows) - wrong} correct, {wrong} wrong or not run" + (f"; report in {report}" if report else ""))
    exit_code = EXIT_WRONG_RESULT if wrong else EXIT_OK
    if args.reference or args.junit:
        verdict = compare([row.measured() for row in rows], reference, args.threshold)
        if args.reference:
            for line in verdict.lines():
                console.print(line, markup=False)
        if args.junit:
            write_junit(args.junit, verdict)
        if verdict.failed:
            exit_code = EXIT_WRONG_RESULT
    return exit_code
