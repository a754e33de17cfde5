"""The one CSV schema every profiler backend writes: one row per kernel launch.

kernel_name  the kernel's name as the profiler saw it (matmul_kernel_<config>[_reduce]), or
             `torch.matmul` for the vendor-BLAS baseline (its kernels summed per launch)
instance     0-based launch number of that kernel within its measurement, warm-up launches included
duration_ns  device time of the launch (host time under the interpreter)
"""

from __future__ import annotations

import csv
from dataclasses import astuple, dataclass
from pathlib import Path

COLUMNS = ("kernel_name", "instance", "duration_ns")
BASELINE_NAME = "torch.matmul"


@dataclass(frozen=True)
class KernelTiming:
    kernel_name: str
    instance: int
    duration_ns: float


def append_rows(path: Path, rows: list[KernelTiming]) -> None:
    """Append rows (writing the header first if the file is new) and flush them to disk."""
    new = not Path(path).exists() or Path(path).stat().st_size == 0
    with open(path, "a", newline="") as handle:
        writer = csv.writer(handle)
        if new:
            writer.writerow(COLUMNS)
        writer.writerows(astuple(row) for row in rows)


def per_launch_totals(rows: list[KernelTiming], name: str) -> list[KernelTiming]:
    """Collapse the kernels of a multi-kernel launch (e.g. a BLAS call) into one row per launch."""
    totals: dict[int, float] = {}
    for row in rows:
        totals[row.instance] = totals.get(row.instance, 0.0) + row.duration_ns
    return [KernelTiming(name, instance, total) for instance, total in sorted(totals.items())]
