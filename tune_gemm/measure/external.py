"""External profilers (ncu, nsys, rocprof): the child runs under them and their own files are parsed.

The child only launches (timer "launch"); the profiler's output is parsed by tune_gemm.measure.formats and
attributed to configs by kernel name. torch.matmul's kernels (whatever the vendor BLAS calls
them) are the ones between two marker kernels the child launches around the baseline.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tune_gemm.generate.naming import config_of_kernel
from tune_gemm.measure.cache_flush import FLUSH_KERNEL
from tune_gemm.measure.schema import BASELINE_NAME, KernelTiming, per_launch_totals

MARKER_BEGIN = "tune_gemm_baseline_begin"
MARKER_END = "tune_gemm_baseline_end"


@dataclass(frozen=True)
class ExternalProfiler:
    name: str  # --profiler value and results-file spelling
    executable: str
    vendor: str  # nvidia or amd
    parser: str  # key of tune_gemm.measure.formats.PARSERS for its CSV

    def installed(self) -> bool:
        return shutil.which(self.executable) is not None

    def wrap(self, command: list[str], output: Path) -> list[str]:
        """`command` run under this profiler, its raw output going to files named after `output`."""
        if self.name == "ncu":
            return ["ncu", "--csv", "--log-file", str(output.with_suffix(".csv")), "--clock-control", "none",
                    "--metrics", "gpu__time_duration.sum", "--target-processes", "all", *command]
        if self.name == "nsys":
            return ["nsys", "profile", "--trace", "cuda", "--force-overwrite", "true", "--output",
                    str(output.with_suffix("")), *command]
        if self.name == "rocprofv3":
            return ["rocprofv3", "--kernel-trace", "--output-format", "csv", "--output-directory", str(output.parent),
                    "--output-file", output.stem, "--", *command]
        return ["rocprof", "--timestamp", "on", "-o", str(output.with_suffix(".csv")), *command]

    def trace_csv(self, output: Path) -> Path | None:
        """The CSV of kernel records that a run with `output` left (None when it left none)."""
        if self.name == "nsys":
            report = output.with_suffix(".nsys-rep")
            if not report.exists():
                return None
            prefix = output.with_name(output.stem + "_stats")
            subprocess.run(["nsys", "stats", "--report", "cuda_gpu_trace", "--format", "csv", "--force-export", "true",
                            "--output", str(prefix), str(report)], check=False, capture_output=True)
            found = sorted(output.parent.glob(f"{prefix.name}*cuda_gpu_trace*.csv"))
            return found[0] if found else None
        if self.name == "rocprofv3":
            found = sorted(output.parent.rglob(f"{output.stem}*kernel_trace.csv"))
            return found[0] if found else None
        path = output.with_suffix(".csv")
        return path if path.exists() else None


PROFILERS = {
    profiler.name: profiler
    for profiler in (
        ExternalProfiler("ncu", "ncu", "nvidia", "ncu"),
        ExternalProfiler("nsys", "nsys", "nvidia", "nsys"),
        ExternalProfiler("rocprof", "rocprof", "amd", "rocprof"),
        ExternalProfiler("rocprofv3", "rocprofv3", "amd", "rocprofv3"),
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
