"""tune_gemm.run.pipeline: one size end to end on the CPU, and survival of configs that fault in every way."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import problem

import tune_gemm.run.pipeline
from tune_gemm.compile.faults import ENV_VAR
from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.measure import ProfilerChoice
from tune_gemm.run.pipeline import SizeFailed, tune_size
from tune_gemm.search.settings import TuneSettings, config_timeout_for
from tune_gemm.space.ranges import RangeSpace

SPACE = RangeSpace(block_m=(16, 32), block_n=(16, 32), block_k=(16,), group_m=(1,), split_k=(1,), num_warps=(1,),
                   num_stages=(1,))
FAULTY = {  # config -> fault
    "BM16_BN16_BK16_GM1_SK1_nW1_nS1": "raise",
    "BM16_BN32_BK16_GM1_SK1_nW1_nS1": "crash",
    "BM32_BN16_BK16_GM1_SK1_nW1_nS1": "memory",
}


def _settings(tmp_path, **overrides) -> TuneSettings:
    fields = dict(profiler=ProfilerChoice("host", "host"), warmup=1, iters=2, interpret=True, workdir=tmp_path, space=SPACE, config_timeout=5)
    return TuneSettings(**{**fields, **overrides})


@pytest.fixture
def interpreted(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def test_faulty_configs_are_recorded_and_the_healthy_one_wins(tmp_path, monkeypatch, interpreted):
    monkeypatch.setenv(ENV_VAR, ",".join(f"{name}={fault}" for name, fault in FAULTY.items()))
    outcome = tune_size(problem(32, 32, 32), INTERPRETER_PROFILE, _settings(tmp_path), compare=True)
    assert str(outcome.winner) == "BM32_BN32_BK16_GM1_SK1_nW1_nS1"
    assert set(outcome.failed) == set(FAULTY)
    assert "InjectedFault" in outcome.failed["BM16_BN16_BK16_GM1_SK1_nW1_nS1"]  # caught in the child
    assert "exit -6" in outcome.failed["BM16_BN32_BK16_GM1_SK1_nW1_nS1"]  # SIGABRT
    assert "exit -11" in outcome.failed["BM32_BN16_BK16_GM1_SK1_nW1_nS1"]  # SIGSEGV
    assert outcome.check_error is not None and outcome.check_error < 1e-2
    assert outcome.matmul_time_us is not None


def test_hanging_and_uncompilable_configs(tmp_path, monkeypatch, interpreted):
    monkeypatch.setenv(ENV_VAR, "BM16_BN16_BK16_GM1_SK1_nW1_nS1=hang,BM32_BN32_BK16_GM1_SK1_nW1_nS1=compile")
    outcome = tune_size(problem(32, 32, 32), INTERPRETER_PROFILE, _settings(tmp_path, config_timeout=2),
                        compare=False)
    assert "hang" in outcome.failed["BM16_BN16_BK16_GM1_SK1_nW1_nS1"]
    assert "InjectedFault" in outcome.compiled.failed["BM32_BN32_BK16_GM1_SK1_nW1_nS1"]
    assert len(outcome.timings) == 2


def test_a_size_where_every_config_faults_fails_alone(tmp_path, monkeypatch, interpreted):
    names = ["BM16_BN16_BK16_GM1_SK1_nW1_nS1", "BM16_BN32_BK16_GM1_SK1_nW1_nS1", "BM32_BN16_BK16_GM1_SK1_nW1_nS1",
             "BM32_BN32_BK16_GM1_SK1_nW1_nS1"]
    monkeypatch.setenv(ENV_VAR, ",".join(f"{name}=raise" for name in names))
    with pytest.raises(SizeFailed, match="no config produced a timing"):
        tune_size(problem(32, 32, 32), INTERPRETER_PROFILE, _settings(tmp_path), compare=False)
    monkeypatch.setenv(ENV_VAR, ",".join(f"{name}=compile" for name in names))
    with pytest.raises(SizeFailed, match="failed to compile; most often: InjectedFault"):
        tune_size(problem(32, 32, 32), INTERPRETER_PROFILE, _settings(tmp_path), compare=False)


def test_a_hang_costs_a_minute_when_binaries_are_compiled_ahead_and_five_when_the_child_compiles():
    assert config_timeout_for(interpret=False, precompile=True) == 60.0
    assert config_timeout_for(interpret=False, precompile=False) == 300.0
    assert config_timeout_for(interpret=True, precompile=True) == 300.0


def test_a_space_that_keeps_nothing_names_the_rules_that_removed_the_most(tmp_path):
    too_tall = replace(SPACE, block_m=(128,))  # no tile 128 rows tall for a GEMM of 16 rows
    with pytest.raises(SizeFailed, match=r"no config survives pruning for this size \(of 2 in the space, the rules "
                                         r"that removed the most: block_size 2\)"):
        tune_size(problem(16, 32, 32), INTERPRETER_PROFILE, _settings(tmp_path, space=too_tall), compare=False)


def test_the_search_starts_once_the_runs_helpers_are_ready(tmp_path, monkeypatch, interpreted):
    # under a time budget the search's clock starts when it does: the helpers' start-up is not the size's
    events = []

    def helpers_ready(settings):
        events.append("helpers ready")
        return 7.5

    def run_search(*args, **kwargs):
        events.append("search")
        return searching(*args, **kwargs)

    searching = tune_gemm.run.pipeline.run_search
    monkeypatch.setattr(tune_gemm.run.pipeline, "helpers_ready", helpers_ready)
    monkeypatch.setattr(tune_gemm.run.pipeline, "run_search", run_search)
    outcome = tune_size(problem(32, 32, 32), INTERPRETER_PROFILE, _settings(tmp_path), compare=False)
    assert events == ["helpers ready", "search"] and outcome.seconds["start-up"] == 7.5
    monkeypatch.setattr(tune_gemm.run.pipeline, "helpers_ready", lambda settings: 0.0)  # a later size: all were ready
    assert "start-up" not in tune_size(problem(32, 32, 32), INTERPRETER_PROFILE, _settings(tmp_path),
                                       compare=False).seconds
