"""The profilers a run can time with, in one registry: `--profiler`'s choices, their detection, which one `auto`
picks on each device, and what the child and the runner do for the one chosen.

A profiler runs in the child (a timer of tune_gemm.measure.backends measures the launches: cupti, events, and the
interpreter's host clock) or around it (the child only launches, under an external tool of
tune_gemm.measure.external whose trace is parsed: ncu, nsys, rocprof, rocprofv3).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from tune_gemm.core.errors import UserError
from tune_gemm.measure.backends import CuptiTimer, EventsTimer, HostTimer, LaunchOnly, Timer
from tune_gemm.measure.external import PROFILERS as EXTERNAL
from tune_gemm.measure.external import ExternalProfiler

INTERPRETER = "interpreter"  # the vendor of --interpret's device (tune_gemm.core.device.INTERPRETER_PROFILE)


class Runs(Enum):
    IN_CHILD = "in the child"  # its timer measures the launches
    AROUND_CHILD = "around the child"  # the child runs under it and only launches


@dataclass(frozen=True)
class ProfilerChoice:
    """What a run times with: passed to the search, the child jobs and the workers."""

    name: str  # what the results file records
    timer: str  # the child's timer (tune_gemm.measure.backends.TIMERS)
    external: ExternalProfiler | None = None  # the tool the child runs under


def _always() -> bool:
    return True


def _cupti_in_torch() -> bool:
    import torch

    return torch.autograd.kineto_available()


@dataclass(frozen=True)
class Profiler:
    name: str  # --profiler value and results-file spelling
    vendors: tuple[str, ...]  # the devices it times
    timer: type[Timer]  # what the child runs: its own timer, or LaunchOnly under a tool around it
    detect: Callable[[], bool] = _always  # whether it is there to use
    missing: str = ""  # why it is not there, when detect() says so (profilers in the child)
    external: ExternalProfiler | None = None  # the tool that runs around the child

    @property
    def runs(self) -> Runs:
        return Runs.IN_CHILD if self.external is None else Runs.AROUND_CHILD

    def choice(self) -> ProfilerChoice:
        return ProfilerChoice(self.name, self.timer.name, self.external)


def _around(tool: ExternalProfiler) -> Profiler:
    return Profiler(tool.name, (tool.vendor,), LaunchOnly, tool.installed, external=tool)


HOST = Profiler("host", (INTERPRETER,), HostTimer)  # --interpret's only clock; not a --profiler choice
CUPTI = Profiler("cupti", ("nvidia",), CuptiTimer, _cupti_in_torch, missing="this torch build has no CUPTI (kineto)")
EVENTS = Profiler("events", ("nvidia", "amd"), EventsTimer)  # on every GPU: what a refusal offers first
PROFILERS: dict[str, Profiler] = {profiler.name: profiler
                                  for profiler in (CUPTI, EVENTS, *map(_around, EXTERNAL.values()))}
CHOICES = ("auto", *PROFILERS)  # --profiler's values
# `auto`: the first of these that detect() finds on the device
AUTO = {
    "nvidia": (CUPTI, EVENTS),
    "amd": (PROFILERS["rocprofv3"], PROFILERS["rocprof"], EVENTS),
    INTERPRETER: (HOST,),
}


def choose_profiler(requested: str, vendor: str) -> ProfilerChoice:
    """What a `--profiler` choice means on this device (`vendor` 'interpreter' for --interpret)."""
    if requested not in CHOICES:
        raise UserError(f"--profiler {requested!r} is not known; use one of {', '.join(CHOICES)}")
    if vendor == INTERPRETER and requested != "auto":
        raise UserError(f"--profiler {requested} needs a GPU; under --interpret only the host clock exists")
    if requested == "auto":
        return next(profiler for profiler in AUTO[vendor] if profiler.detect()).choice()
    profiler = PROFILERS[requested]
    refusal = _refusal(profiler, vendor)
    if refusal:
        raise UserError(refusal)
    return profiler.choice()


def _refusal(profiler: Profiler, vendor: str) -> str | None:
    """Why `profiler` cannot time on a `vendor` GPU here (None: it can)."""
    if profiler.runs is Runs.AROUND_CHILD:
        tool = profiler.external
        if vendor not in profiler.vendors:
            return f"--profiler {profiler.name} profiles {tool.vendor.upper()} GPUs, not this {vendor} one"
        if not profiler.detect():
            return (f"--profiler {profiler.name}: {tool.executable} is not installed (not on PATH); "
                    f"use one of {', '.join(_alternatives(vendor))}")
        return None
    if vendor not in profiler.vendors:
        return (f"--profiler {profiler.name} needs an {' or '.join(v.upper() for v in profiler.vendors)} GPU; "
                f"use --profiler {EVENTS.name}")
    if not profiler.detect():
        return f"--profiler {profiler.name} is not available: {profiler.missing}; use --profiler {EVENTS.name}"
    return None


def _alternatives(vendor: str) -> list[str]:
    """What a refusal offers on a `vendor` GPU: events, the other timers in the child, the tools installed."""
    in_child = [p.name for p in PROFILERS.values() if p.runs is Runs.IN_CHILD and vendor in p.vendors and p != EVENTS]
    around = [p.name for p in PROFILERS.values() if p.runs is Runs.AROUND_CHILD and vendor in p.vendors and p.detect()]
    return [EVENTS.name, *in_child, *around]
