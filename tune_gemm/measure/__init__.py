"""Profiling: time every config of a generated module in a child process and reduce the CSV to one time each."""

from __future__ import annotations

from dataclasses import dataclass

from tune_gemm.core.errors import UserError
from tune_gemm.measure.external import PROFILERS as EXTERNAL
from tune_gemm.measure.external import ExternalProfiler

PROFILERS = ("auto", "cupti", "events", *EXTERNAL)


@dataclass(frozen=True)
class ProfilerChoice:
    name: str  # what the results file records
    timer: str  # the child's timer (tune_gemm.measure.backends.TIMERS)
    external: ExternalProfiler | None = None


def choose_profiler(requested: str, vendor: str) -> ProfilerChoice:
    """What a `--profiler` choice means on this device (`vendor` 'interpreter' for --interpret)."""
    if requested not in PROFILERS:
        raise UserError(f"--profiler {requested!r} is not known; use one of {', '.join(PROFILERS)}")
    if vendor == "interpreter":
        if requested != "auto":
            raise UserError(f"--profiler {requested} needs a GPU; under --interpret only the host clock exists")
        return ProfilerChoice("host", "host")
    if requested == "auto":
        if vendor == "amd":
            rocprof = next((p for p in (EXTERNAL["rocprofv3"], EXTERNAL["rocprof"]) if p.installed()), None)
            return ProfilerChoice(rocprof.name, "launch", rocprof) if rocprof else ProfilerChoice("events", "events")
        return ProfilerChoice("cupti", "cupti") if _cupti_available() else ProfilerChoice("events", "events")
    if requested in EXTERNAL:
        return _external(EXTERNAL[requested], vendor)
    if requested == "cupti" and vendor != "nvidia":
        raise UserError("--profiler cupti needs an NVIDIA GPU; use --profiler events")
    if requested == "cupti" and not _cupti_available():
        raise UserError("--profiler cupti is not available: this torch build has no CUPTI (kineto); "
                        "use --profiler events")
    return ProfilerChoice(requested, requested)


def _external(profiler: ExternalProfiler, vendor: str) -> ProfilerChoice:
    if profiler.vendor != vendor:
        raise UserError(f"--profiler {profiler.name} profiles {profiler.vendor.upper()} GPUs, not this {vendor} one")
    if not profiler.installed():
        others = [name for name, p in EXTERNAL.items() if p.vendor == vendor and p.installed()]
        alternatives = ", ".join(["events", *(["cupti"] if vendor == "nvidia" else []), *others])
        raise UserError(f"--profiler {profiler.name}: {profiler.executable} is not installed (not on PATH); "
                        f"use one of {alternatives}")
    return ProfilerChoice(profiler.name, "launch", profiler)


def _cupti_available() -> bool:
    import torch

    return torch.autograd.kineto_available()
