"""tune_gemm.measure.profilers: the registry of profilers, what each --profiler choice means, and clear refusals."""

from __future__ import annotations

import pytest

import tune_gemm.measure as profiling
from tune_gemm.core.errors import UserError
from tune_gemm.measure import CHOICES, PROFILERS, choose_profiler
from tune_gemm.measure.backends import TIMERS
from tune_gemm.measure.external import PROFILERS as EXTERNAL
from tune_gemm.measure.profilers import AUTO, HOST, Runs


def _cupti_in_torch(monkeypatch, available: bool) -> None:
    monkeypatch.setattr("torch.autograd.kineto_available", lambda: available)


@pytest.mark.parametrize("requested,vendor,timer", [
    ("auto", "nvidia", "cupti"), ("auto", "amd", "events"), ("auto", "interpreter", "host"),
    ("events", "nvidia", "events"), ("cupti", "nvidia", "cupti"), ("events", "amd", "events"),
])
def test_choices(monkeypatch, requested, vendor, timer):
    _cupti_in_torch(monkeypatch, True)
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


@pytest.mark.parametrize("requested,vendor,message", [  # each refusal's whole line
    ("vtune", "nvidia", "--profiler 'vtune' is not known; use one of auto, cupti, events, ncu, nsys, rocprof, rocprofv3"),
    ("cupti", "amd", "--profiler cupti needs an NVIDIA GPU; use --profiler events"),
    ("cupti", "nvidia", "--profiler cupti is not available: this torch build has no CUPTI (kineto); "
                        "use --profiler events"),
    ("ncu", "interpreter", "--profiler ncu needs a GPU; under --interpret only the host clock exists"),
    ("rocprof", "nvidia", "--profiler rocprof profiles AMD GPUs, not this nvidia one"),
    ("rocprofv3", "amd", "--profiler rocprofv3: rocprofv3 is not installed (not on PATH); use one of events, rocprof"),
])
def test_refusal_lines(monkeypatch, requested, vendor, message):
    _cupti_in_torch(monkeypatch, False)
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/rocprof" if name == "rocprof" else None)
    with pytest.raises(UserError) as refused:
        choose_profiler(requested, vendor)
    assert str(refused.value) == message


def test_installed_external_profilers(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}" if name in ("ncu", "rocprof") else None)
    assert choose_profiler("ncu", "nvidia") == profiling.ProfilerChoice("ncu", "launch", EXTERNAL["ncu"])
    assert choose_profiler("auto", "amd") == profiling.ProfilerChoice("rocprof", "launch", EXTERNAL["rocprof"])
    with pytest.raises(UserError, match="nsys is not installed .*use one of events, cupti, ncu"):
        choose_profiler("nsys", "nvidia")


def test_auto_prefers_rocprofv3_on_amd(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    assert choose_profiler("auto", "amd") == profiling.ProfilerChoice("rocprofv3", "launch", EXTERNAL["rocprofv3"])


def test_cupti_missing_from_torch(monkeypatch):
    _cupti_in_torch(monkeypatch, False)
    with pytest.raises(UserError, match="cupti is not available.*--profiler events"):
        choose_profiler("cupti", "nvidia")
    assert choose_profiler("auto", "nvidia").timer == "events"


def test_registry_is_what_the_command_line_and_the_child_read():
    assert CHOICES == ("auto", "cupti", "events", "ncu", "nsys", "rocprof", "rocprofv3")
    assert [name for name, p in PROFILERS.items() if p.runs is Runs.AROUND_CHILD] == list(EXTERNAL)
    for profiler in [*PROFILERS.values(), HOST]:
        assert TIMERS[profiler.timer.name] is profiler.timer  # the child finds the timer a job names
        in_child = profiler.runs is Runs.IN_CHILD
        assert profiler.choice() == profiling.ProfilerChoice(profiler.name, profiler.name if in_child else "launch",
                                                             profiler.external)
    assert set(AUTO) == {"nvidia", "amd", "interpreter"}  # every vendor tune_gemm.core.device reports
    assert all(vendor in profiler.vendors for vendor, order in AUTO.items() for profiler in order)
    assert all(order[-1].detect() for order in AUTO.values())  # auto always finds one: the last needs nothing
