"""tune_gemm.run.pipeline with small part modules (tune_gemm.generate.parts.PART_SIZE forced down): a size tunes to the same outcome as
with one part, and no process of the tuner imports the whole generated module (it is made to fail on import)."""

from __future__ import annotations

import pytest
from helpers import problem

import tune_gemm.generate.parts
from tune_gemm.compile.faults import ENV_VAR
from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.measure import ProfilerChoice
from tune_gemm.run import pipeline
from tune_gemm.run.pipeline import tune_size
from tune_gemm.search.settings import TuneSettings
from tune_gemm.space.ranges import RangeSpace

SPACE = RangeSpace(block_m=(16, 32), block_n=(16, 32), block_k=(16, 32), group_m=(1,), split_k=(1,), num_warps=(1,),
                   num_stages=(1,))  # 8 configs for 32x32x32, in this order
FAULTY = {  # one in each part of 3 configs
    "BM16_BN16_BK32_GM1_SK1_nW1_nS1": "raise",
    "BM16_BN32_BK32_GM1_SK1_nW1_nS1": "crash",
    "BM32_BN32_BK16_GM1_SK1_nW1_nS1": "compile",
}


@pytest.fixture(autouse=True)
def whole_module_unloadable(monkeypatch):
    """The whole module as users get it, plus a last line that fails its import."""
    real = pipeline.write_module

    def poisoned(*args, **kwargs):
        path = real(*args, **kwargs)
        path.write_text(path.read_text() + '\nraise RuntimeError("the whole module was imported")\n')
        return path

    monkeypatch.setattr(pipeline, "write_module", poisoned)
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _tune(tmp_path, part_size: int, monkeypatch, space: RangeSpace = SPACE):
    monkeypatch.setattr(tune_gemm.generate.parts, "PART_SIZE", part_size)
    settings = TuneSettings(profiler=ProfilerChoice("host", "host"), warmup=1, iters=2, interpret=True,
                            workdir=tmp_path / f"parts{part_size}", space=space, config_timeout=30, keep=True)
    outcome = tune_size(problem(32, 32, 32), INTERPRETER_PROFILE, settings, compare=True, log=lambda _: None)
    written = list((settings.workdir / "tune_gemm_work").glob("tune*/generated_kernel*_part*.py"))
    return outcome, written


def test_small_parts_time_and_fail_the_same_configs_as_one_part(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, ",".join(f"{name}={fault}" for name, fault in FAULTY.items()))
    one, one_written = _tune(tmp_path, 256, monkeypatch)
    small, small_written = _tune(tmp_path, 3, monkeypatch)
    assert (len(one_written), len(small_written)) == (1, 3)
    assert one.candidates == small.candidates == 8
    healthy = set(map(str, pipeline.prune(problem(32, 32, 32), INTERPRETER_PROFILE, SPACE).configs)) - set(FAULTY)
    for outcome in (one, small):
        assert set(outcome.failed) == set(FAULTY)
        assert "InjectedFault" in outcome.compiled.failed["BM32_BN32_BK16_GM1_SK1_nW1_nS1"]
        assert "exit -6" in outcome.profiled.failed["BM16_BN32_BK32_GM1_SK1_nW1_nS1"]  # the child restarted
        assert set(outcome.timings["config"]) == healthy and str(outcome.winner) in healthy
        assert outcome.check_error is not None and outcome.check_error < 1e-2  # the winner checked from its part


def test_with_one_config_per_part_the_one_healthy_config_wins(tmp_path, monkeypatch):
    space = RangeSpace(block_m=(16, 32), block_n=(16, 32), block_k=(16,), group_m=(1,), split_k=(1,), num_warps=(1,),
                       num_stages=(1,))
    monkeypatch.setenv(ENV_VAR, "BM16_BN16_BK16_GM1_SK1_nW1_nS1=raise,BM16_BN32_BK16_GM1_SK1_nW1_nS1=crash,"
                                "BM32_BN16_BK16_GM1_SK1_nW1_nS1=compile")
    outcome, written = _tune(tmp_path, 1, monkeypatch, space)
    assert len(written) == 4
    assert str(outcome.winner) == "BM32_BN32_BK16_GM1_SK1_nW1_nS1" and len(outcome.timings) == 1
    assert outcome.matmul_time_us is not None
