"""Profiling: time every config of a generated module in a child process and reduce the CSV to one time each.

The profilers to time with are in tune_gemm.measure.profilers; what the command line and the search need of them is
here."""

from __future__ import annotations

from tune_gemm.measure.profilers import CHOICES, PROFILERS, Profiler, ProfilerChoice, choose_profiler

__all__ = ["CHOICES", "PROFILERS", "Profiler", "ProfilerChoice", "choose_profiler"]
