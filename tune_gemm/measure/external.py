"""External profilers (ncu, nsys, rocprof, rocprofv3): the child runs under them and their own files are parsed.

The child only launches (timer "launch"); the profiler's output is parsed by tune_gemm.measure.formats and
attributed to configs by kernel name. torch.matmul's kernels (whatever the vendor BLAS calls
them) are the ones between two marker kernels the child launches around the baseline.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tune_gemm.generate.naming import config_of_kernel
from tune_gemm.measure.cache_flush import FLUSH_KERNEL
from tune_gemm.measure.formats import (
    NCU_DURATION_METRIC,
    parse_ncu_csv,
    parse_nsys_gpu_trace,
    parse_rocprof_stats,
    parse_rocprofv3_kernel_trace,
)
from tune_gemm.measure.schema import BASELINE_NAME, KernelTiming, per_launch_totals

MARKER_BEGIN = "tune_gemm_baseline_begin"
MARKER_END = "tune_gemm_baseline_end"


def _ncu_command(command: list[str], output: Path) -> list[str]:
    return ["ncu", "--csv", "--log-file", str(output.with_suffix(".csv")), "--clock-control", "none",
            "--metrics", NCU_DURATION_METRIC, "--target-processes", "all", *command]


def _nsys_command(command: list[str], output: Path) -> list[str]:
    return ["nsys", "profile", "--trace", "cuda", "--force-overwrite", "true", "--output", str(output.with_suffix("")),
            *command]


def _rocprof_command(command: list[str], output: Path) -> list[str]:
    return ["rocprof", "--timestamp", "on", "-o", str(output.with_suffix(".csv")), *command]


def _rocprofv3_command(command: list[str], output: Path) -> list[str]:
    return ["rocprofv3", "--kernel-trace", "--output-format", "csv", "--output-directory", str(output.parent),
            "--output-file", output.stem, "--", *command]


def _csv_beside(output: Path) -> Path | None:
    """ncu's and rocprof's trace: the CSV they were told to write."""
    path = output.with_suffix(".csv")
    return path if path.exists() else None


def _nsys_trace(output: Path) -> Path | None:
    """nsys writes a report; `nsys stats` exports its kernel records as CSV."""
    report = output.with_suffix(".nsys-rep")
    if not report.exists():
        return None
    prefix = output.with_name(output.stem + "_stats")
    subprocess.run(["nsys", "stats", "--report", "cuda_gpu_trace", "--format", "csv", "--force-export", "true",
                    "--output", str(prefix), str(report)], check=False, capture_output=True)
    found = sorted(output.parent.glob(f"{prefix.name}*cuda_gpu_trace*.csv"))
    return found[0] if found else None


def _rocprofv3_trace(output: Path) -> Path | None:
    """rocprofv3 writes its kernel trace in a folder of its own under the output directory."""
    found = sorted(output.parent.rglob(f"{output.stem}*kernel_trace.csv"))
    return found[0] if found else None


@dataclass(frozen=True)
class ExternalProfiler:
    """A profiler the child runs under: how it is found, how it wraps the child's command and where its kernel
    records end up, and the parser of those records (tune_gemm.measure.formats)."""

    name: str  # --profiler value and results-file spelling
    executable: str
    vendor: str  # nvidia or amd
    # wrap(command, output): `command` run under it, its raw output going to files named after `output`
    wrap: Callable[[list[str], Path], list[str]]
    trace_csv: Callable[[Path], Path | None]  # the CSV of kernel records a run with `output` left (None: none)
    parse: Callable[[Path | str], list[KernelTiming]]  # that CSV's rows, in launch order

    def installed(self) -> bool:
        return shutil.which(self.executable) is not None

    def kernel_rows(self, output: Path) -> list[KernelTiming] | None:
        """Schema rows of the run with `output`: its kernel records attributed to configs and the baseline (None
        when it left no trace)."""
        path = self.trace_csv(output)
        return None if path is None else attribute(self.parse(path))


PROFILERS = {
    profiler.name: profiler
    for profiler in (
        ExternalProfiler("ncu", "ncu", "nvidia", _ncu_command, _csv_beside, parse_ncu_csv),
        ExternalProfiler("nsys", "nsys", "nvidia", _nsys_command, _nsys_trace, parse_nsys_gpu_trace),
        ExternalProfiler("rocprof", "rocprof", "amd", _rocprof_command, _csv_beside, parse_rocprof_stats),
        ExternalProfiler("rocprofv3", "rocprofv3", "amd", _rocprofv3_command, _rocprofv3_trace,
                         parse_rocprofv3_kernel_trace),
    )
}


def attribute(rows: list[KernelTiming]) -> list[KernelTiming]:
    """Schema rows from a profiler's kernel records in launch order: our kernels by name, the vendor
    BLAS kernels between the markers as torch.matmul launches, everything else (input set-up) dropped."""
    ours, baseline, inside = [], [], False
    for row in rows:
        if row.kernel_name == MARKER_BEGIN:
            inside = True
        elif row.kernel_name == MARKER_END:
            inside = False
        elif row.kernel_name == FLUSH_KERNEL:  # --icache_flush between launches, never part of one
            continue
        elif config_of_kernel(row.kernel_name) is not None:
            ours.append(row)
        elif inside:
            baseline.append(row)
    seen: dict[str, int] = {}  # launch numbers counted inside the baseline only
    renumbered = []
    for row in baseline:
        renumbered.append(KernelTiming(row.kernel_name, seen.get(row.kernel_name, 0), row.duration_ns))
        seen[row.kernel_name] = seen.get(row.kernel_name, 0) + 1
    return ours + per_launch_totals(renumbered, BASELINE_NAME)
