"""profiling.choose_timer: which timer each --profiler choice means, and clear refusals."""

from __future__ import annotations

import pytest

import profiling
from profiling import choose_timer
from tuner.errors import UserError


@pytest.mark.parametrize("requested,vendor,timer", [
    ("auto", "nvidia", "cupti"), ("auto", "amd", "events"), ("auto", "interpreter", "host"),
    ("events", "nvidia", "events"), ("cupti", "nvidia", "cupti"), ("events", "amd", "events"),
])
def test_choices(monkeypatch, requested, vendor, timer):
    monkeypatch.setattr(profiling, "_cupti_available", lambda: True)
    assert choose_timer(requested, vendor) == timer


@pytest.mark.parametrize("requested,vendor,message", [
    ("nsys", "nvidia", "not known"), ("cupti", "amd", "needs an NVIDIA GPU"), ("events", "interpreter", "needs a GPU"),
])
def test_refusals(requested, vendor, message):
    with pytest.raises(UserError, match=message):
        choose_timer(requested, vendor)


def test_cupti_missing_from_torch(monkeypatch):
    monkeypatch.setattr(profiling, "_cupti_available", lambda: False)
    with pytest.raises(UserError, match="cupti is not available.*--profiler events"):
        choose_timer("cupti", "nvidia")
    assert choose_timer("auto", "nvidia") == "events"
