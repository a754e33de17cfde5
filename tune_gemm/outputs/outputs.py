"""What the command line does with `--export` and `--report`: check them before any tuning, keep each size's
timings while tuning, then write the exports and the report from the results file and print their paths.

Both work on the run's results file (`--tuning_results_file`): after the tuning of a run that gives sizes, or
alone, with no tuning and no GPU, when the command gives no size (`tune_gemm.py --tuning_results_file F
--export json`). Exports go beside the results file; the report into its own directory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tune_gemm.core.errors import UserError
from tune_gemm.outputs.export_json import write_json
from tune_gemm.outputs.export_triton import write_triton
from tune_gemm.outputs.report import write_report
from tune_gemm.outputs.timings import save_timings
from tune_gemm.runtime.table import read_tuned

EXPORTERS = {"triton": write_triton, "json": write_json}


@dataclass(frozen=True)
class Outputs:
    exports: tuple[str, ...] = ()  # names in EXPORTERS
    report_dir: Path | None = None

    @property
    def wanted(self) -> bool:
        return bool(self.exports or self.report_dir)


def plan_outputs(export_values: list[str] | None, report_dir: Path | None, compare_wo_tuning: bool) -> Outputs:
    """Check the flags (`--export` repeatable or comma-separated) and create the report directory, before tuning."""
    if compare_wo_tuning and (export_values or report_dir):
        raise UserError("--export and --report write from the results file of a tuning run, not with --compare_wo_tuning")
    exports: list[str] = []
    for value in export_values or []:
        for name in filter(None, (part.strip() for part in value.split(","))):
            if name not in EXPORTERS:
                raise UserError(f"--export {name!r} is not known; use {', '.join(EXPORTERS)}")
            if name not in exports:
                exports.append(name)
    if report_dir is not None:
        if report_dir.exists() and not report_dir.is_dir():
            raise UserError(f"--report {report_dir} is a file, not a directory")
        try:
            report_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UserError(f"--report {report_dir}: cannot create the directory ({error.strerror})") from None
    return Outputs(tuple(exports), report_dir)


def keep_timings(report_dir: Path | None, outcome) -> None:
    """After a size is tuned with --report: keep every config's time (outcome: tune_gemm.run.pipeline.SizeOutcome)."""
    if report_dir is not None:
        save_timings(report_dir, outcome.problem, outcome.timings)


def write_outputs(outputs: Outputs, results: Path, log: Callable[[str], object]) -> None:
    """Write the exports and the report for `results`, printing each file's path; UserError when it holds nothing."""
    if not Path(results).is_file():
        raise UserError(f"results file {results} does not exist: nothing to export or report")
    entries = read_tuned(results)
    if not entries:
        raise UserError(f"results file {results} holds no entries: nothing to export or report")
    for name in outputs.exports:
        for path in EXPORTERS[name](entries, results, Path(results).parent):
            log(f"exported ({name}): {path}")
    if outputs.report_dir is not None:
        for path in write_report(results, outputs.report_dir):
            log(f"report: {path}")
