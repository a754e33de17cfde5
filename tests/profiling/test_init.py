"""profiling.choose_profiler: what each --profiler choice means, and clear refusals."""

from __future__ import annotations

import pytest

import tune_gemm.measure as profiling
from tune_gemm.core.errors import UserError
from tune_gemm.measure import choose_profiler
from tune_gemm.measure.external import PROFILERS as EXTERNAL


@pytest.mark.parametrize("requested,vendor,timer", [
    ("auto", "nvidia", "cupti"), ("auto", "amd", "events"), ("auto", "interpreter", "host"),
    ("events", "nvidia", "events"), ("cupti", "nvidia", "cupti"), ("events", "amd", "events"),
])
def test_choices(monkeypatch, requested, vendor, timer):
    monkeypatch.setattr(profiling, "_cupti_available", lambda: True)
    monkeypatch.setattr("shutil.which", lambda name: None)
    choice = choose_profiler(requested, vendor)
    assert (choice.timer, choice.name, choice.external) == (timer, timer, None)


@pytest.mark.parametrize("requested,vendor,message", [
    ("vtune", "nvidia", "not known"), ("cupti", "amd", "needs an NVIDIA GPU"), ("events", "interpreter", "needs a GPU"),
    ("ncu", "amd", "profiles NVIDIA GPUs"), ("rocprof", "nvidia", "profiles AMD GPUs"),
    ("nsys", "nvidia", "nsys is not installed .*use one of events, cupti"),
    ("ncu", "interpreter", "needs a GPU"),
])
def test_refusals(monkeypatch, requested, vendor, message):
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(UserError, match=message):
        choose_profiler(requested, vendor)


def test_installed_external_profilers(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}" if name in ("ncu", "rocprof") else None)
    assert choose_profiler("ncu", "nvidia") == profiling.ProfilerChoice("ncu", "launch", EXTERNAL["ncu"])
    assert choose_profiler("auto", "amd") == profiling.ProfilerChoice("rocprof", "launch", EXTERNAL["rocprof"])
    with pytest.raises(UserError, match="nsys is not installed .*use one of events, cupti, ncu"):
        choose_profiler("nsys", "nvidia")


def test_cupti_missing_from_torch(monkeypatch):
    monkeypatch.setattr(profiling, "_cupti_available", lambda: False)
    with pytest.raises(UserError, match="cupti is not available.*--profiler events"):
        choose_profiler("cupti", "nvidia")
    assert choose_profiler("auto", "nvidia").timer == "events"
