"""tuner.compile: both pools report every config once, agree on which compile, and stream as they go.

Without a GPU (and without the interpreter) every config fails to compile (no active driver): the
failures are recorded with their reason, never raised. On a GPU the same test compares the pools."""

from __future__ import annotations

import pytest
from helpers import problem

import gen.loader
from gen import write_module
from gen.parts import write_parts
from profiling.faults import ENV_VAR
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


MORE = [*NAMES, "BM16_BN32_BK16_GM1_SK1_nW1_nS1", "BM32_BN16_BK16_GM1_SK2_nW1_nS1"]


@pytest.fixture
def parts(tmp_path):
    return write_parts(problem(64, 64, 64), [Config.parse(name) for name in MORE], tmp_path, size=2)  # 3 parts


@pytest.fixture
def loads(monkeypatch) -> list[str]:
    """Every module path loaded in this process."""
    loaded, real = [], gen.loader.load_module
    monkeypatch.setattr(gen.loader, "load_module", lambda path: loaded.append(str(path)) or real(path))
    return loaded


def test_configs_of_several_parts_each_compile_from_their_part_loaded_once(tmp_path, parts, loads, monkeypatch,
                                                                          interpreter_env):
    monkeypatch.setenv(ENV_VAR, f"{MORE[3]}=compile")
    # the whole module is never written: every config must come from its part
    outcome = compile_all(tmp_path / "generated_kernel_absent.py", MORE, 1, interpret=True, parts=parts)
    assert outcome.compiled == [name for name in MORE if name != MORE[3]]
    assert "InjectedFault" in outcome.failed[MORE[3]]
    assert sorted(loads) == sorted({str(path) for path in parts.values()})  # each part once


def test_threads_share_one_load_of_each_part(tmp_path, parts, loads, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # compiled kernels: without a GPU, each fails to compile
    outcome = compile_all(tmp_path / "generated_kernel_absent.py", MORE, 3, interpret=False, pool="thread",
                          parts=parts)
    assert sorted([*outcome.compiled, *outcome.failed]) == sorted(MORE)
    assert sorted(loads) == sorted({str(path) for path in parts.values()})


def test_process_workers_load_configs_from_their_parts(tmp_path, parts, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    # loading the absent whole module would raise out of the stream: every result here came from a part
    outcome = compile_all(tmp_path / "generated_kernel_absent.py", MORE, 2, interpret=False, parts=parts)
    assert sorted([*outcome.compiled, *outcome.failed]) == sorted(MORE)


def test_configs_without_a_part_come_from_the_module(module, parts, loads, interpreter_env):
    outcome = compile_all(module, MORE, 1, interpret=True, parts={name: parts[name] for name in MORE[3:]})
    assert outcome.compiled == MORE
    assert sorted(loads) == sorted({str(module), *(str(parts[name]) for name in MORE[3:])})
