"""Profiling: time every config of a generated module in a child process and reduce the CSV to one time each."""

from __future__ import annotations

from tuner.errors import UserError

PROFILERS = ("auto", "cupti", "events")


def choose_timer(requested: str, vendor: str) -> str:
    """The timer a `--profiler` choice means on this device (`vendor` 'interpreter' for --interpret)."""
    if requested not in PROFILERS:
        raise UserError(f"--profiler {requested!r} is not known; use one of {', '.join(PROFILERS)}")
    if vendor == "interpreter":
        if requested != "auto":
            raise UserError(f"--profiler {requested} needs a GPU; under --interpret only the host clock exists")
        return "host"
    if requested == "auto":
        return "cupti" if vendor == "nvidia" and _cupti_available() else "events"
    if requested == "cupti" and vendor != "nvidia":
        raise UserError("--profiler cupti needs an NVIDIA GPU; use --profiler events")
    if requested == "cupti" and not _cupti_available():
        raise UserError("--profiler cupti is not available: this torch build has no CUPTI (kineto); "
                        "use --profiler events")
    return requested


def _cupti_available() -> bool:
    import torch

    return torch.autograd.kineto_available()
