"""tuner.compile: both pools report every config once, agree on which compile, and stream as they go.

Without a GPU (and without the interpreter) every config fails to compile (no active driver): the
failures are recorded with their reason, never raised. On a GPU the same test compares the pools."""

from __future__ import annotations

import pytest

from gen import write_module
from helpers import problem
from prune.config import Config
from tuner.compile import compile_all, compile_stream

NAMES = ["BM16_BN16_BK16_GM1_SK1_nW1_nS1", "BM32_BN32_BK32_GM1_SK1_nW4_nS2", "BM64_BN32_BK32_GM1_SK2_nW4_nS2"]


@pytest.fixture
def module(tmp_path, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    return write_module(problem(64, 64, 64), [Config.parse(name) for name in NAMES], tmp_path)


def test_process_and_thread_pools_report_the_same_outcome(module):
    outcomes = {pool: compile_all(module, NAMES, 2, interpret=False, pool=pool) for pool in ("process", "thread")}
    for outcome in outcomes.values():
        assert sorted([*outcome.compiled, *outcome.failed]) == sorted(NAMES)
        assert all(reason for reason in outcome.failed.values())
    assert sorted(outcomes["process"].compiled) == sorted(outcomes["thread"].compiled)


def test_the_stream_yields_each_result_and_can_be_closed_early(module):
    stream = compile_stream(module, NAMES, 1, interpret=False, pool="thread")
    first = next(stream)
    assert first[0] in NAMES
    stream.close()  # the search closes it when a time budget runs out


def test_an_unknown_pool_is_refused(module):
    with pytest.raises(ValueError, match="compile pool must be one of"):
        next(compile_stream(module, NAMES, 1, interpret=False, pool="fork"))
