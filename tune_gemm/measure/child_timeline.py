"""Where a timing child's start-up goes: seconds from its launch (the runner's clock) to each milestone.

The child prints one line at its end, `child timeline (s since launch): imports 1.9, module 2.4, ...`, on its
output, which `--verbose` shows. A round of a few configs costs mostly this start-up, so the line says which
part to cut: the interpreter and its imports, loading the generated module (and the GPU context), building the
input sets, or the timer's first session. A standby child reused for a later job (tune_gemm.measure.standby) counts
that job's marks from when it was handed over: `child timeline (s since its job, a reused child): job 0.0, ...`.
"""

from __future__ import annotations

import math
import os
import time

LAUNCHED_ENV = "TUNE_GEMM_CHILD_LAUNCHED"  # time.time() when the runner started the child
TIMELINE_PREFIX = "child timeline "
REUSED_ORIGIN = "its job, a reused child"  # a standby child's later jobs count from when each was handed over


class Timeline:
    def __init__(self, origin: float | None = None, since: str = "launch"):
        if origin is None:
            origin = float(os.environ.get(LAUNCHED_ENV, "nan"))
        self.origin = origin  # time.time() the marks count from: the launch, unless `since` says otherwise
        self.since = since
        self.marks: list[tuple[str, float]] = []

    def mark(self, label: str) -> None:
        """Record `label` now; a label already recorded keeps its first time."""
        if all(existing != label for existing, _ in self.marks):
            self.marks.append((label, time.time()))

    def line(self) -> str:
        if math.isnan(self.origin):  # run by hand, not by the runner: times from the first mark
            start = self.marks[0][1] if self.marks else 0.0
            counted_from = "since its first mark"
        else:
            start, counted_from = self.origin, f"since {self.since}"
        marks = ", ".join(f"{label} {at - start:.1f}" for label, at in self.marks)
        return f"{TIMELINE_PREFIX}(s {counted_from}): {marks}"
