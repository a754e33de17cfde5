"""A size's time budget (`--time_budget S`) as the search's rounds share it, and the clock that stops them.

The rounds that choose finalists stop once all but a reserve of S is spent (CLOSING_SHARE of it, at most
CLOSING_MAX_SECONDS), which the closing round then times in; refine's round 0 stops earlier still, leaving round 1 a
reserve of its own (REFINING_SHARE of S, at most REFINING_MAX_SECONDS). See tune_gemm.search.search.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from tune_gemm.measure.stream import request_stop

# The closing round's reserve of a time budget: it times `final` (8) compiled configs, in 0.2-0.5 s from the end of
# round 1 in round 1's own child, reused (H200; 2.0-2.7 s in a child warm in standby,
# forty-fourth, up to 11.6 s where the child was still starting). The rest covers the cut round's overrun: its child
# stops between batches (at most CUPTI_BATCH configs, about 1.6 s at 20 configs/s) and then times torch.matmul. A
# child that overruns more, and is killed STOP_GRACE_SECONDS after the stop, leaves the closing round to a child in
# standby and less time than it needs. A long budget needs no more reserve than a short one.
CLOSING_SHARE = 0.2
CLOSING_MAX_SECONDS = 3.0
# Refine's round 1 reserve when a budget cuts round 0: the variants of the best shapes sampled, nearest first. 6 s of
# a 40-second budget cost round 0 about a fifth of its sample; round 1 timed 2-47 variants in them, and the picks of
# six sizes ran 2.8% faster in geometric mean.
REFINING_SHARE = 0.15
REFINING_MAX_SECONDS = 10.0


def finalist_seconds(budget: float) -> float:
    """The share of a size's time budget the rounds that choose finalists may spend: all but the closing round's
    reserve."""
    return budget - min(CLOSING_SHARE * budget, CLOSING_MAX_SECONDS)


def sample_seconds(budget: float) -> float:
    """The share of a size's time budget refine's round 0 may spend: the finalist rounds' share but round 1's
    reserve."""
    return finalist_seconds(budget) - min(REFINING_SHARE * budget, REFINING_MAX_SECONDS)


class Budget:
    """Seconds since `started` that the rounds it watches may spend: once spent, their children are told to stop
    (through `stop_path`) and their compile stream is cancelled."""

    def __init__(self, seconds: float | None, stop_path: Path, started: float | None = None):
        self.seconds, self.stop_path = seconds, stop_path
        self.started = time.perf_counter() if started is None else started
        self.spent = False
        self.on_spent: list[Callable[[], None]] = []

    def check(self) -> None:
        if self.spent or self.seconds is None or time.perf_counter() - self.started < self.seconds:
            return
        self.spent = True
        request_stop(self.stop_path)
        for action in self.on_spent:
            action()
