"""tune_gemm.measure.child with part modules (tune_gemm.generate.parts): one job times and checks configs of several parts, loading
each config from its part (the job's whole module is never written here), also after a crash restarts it."""

from __future__ import annotations

import pytest
from helpers import problem

from tune_gemm.compile.faults import ENV_VAR
from tune_gemm.core.config import Config
from tune_gemm.generate.parts import write_parts
from tune_gemm.measure.job import ChildJob
from tune_gemm.measure.postprocess import load_timings, summarize
from tune_gemm.measure.runner import run_child
from tune_gemm.measure.schema import BASELINE_NAME

NAMES = ["BM16_BN16_BK16_GM1_SK1_nW1_nS1", "BM16_BN32_BK16_GM1_SK1_nW1_nS1", "BM32_BN16_BK16_GM1_SK1_nW1_nS1",
         "BM32_BN32_BK16_GM1_SK1_nW1_nS1", "BM32_BN32_BK32_GM1_SK2_nW1_nS1"]
PROBLEM = problem(32, 32, 32)


@pytest.fixture
def parts(tmp_path) -> dict[str, str]:
    written = write_parts(PROBLEM, [Config.parse(name) for name in NAMES], tmp_path, size=2)
    assert len(set(written.values())) == 3
    return {name: str(path) for name, path in written.items()}


def _job(tmp_path, parts: dict[str, str], **fields) -> ChildJob:
    return ChildJob(module_path=str(tmp_path / "generated_kernel_absent.py"), parts=parts, timer="host",
                    csv_path=str(tmp_path / "t.csv"), progress_path=str(tmp_path / "p.txt"),
                    check_path=str(tmp_path / "c.json"), warmup=1, iters=2, **fields)


def test_one_child_times_configs_of_every_part(tmp_path, parts):
    outcome = run_child(_job(tmp_path, parts, time_configs=NAMES, baseline=True), tmp_path, interpret=True)
    assert outcome.failed == {} and outcome.restarts == 0
    table = summarize(load_timings(tmp_path / "t.csv"), warmup=1)
    assert set(table["config"]) == {*NAMES, BASELINE_NAME} and (table["instances"] == 2).all()


def test_a_crash_in_one_part_restarts_the_child_on_the_others(tmp_path, parts, monkeypatch):
    monkeypatch.setenv(ENV_VAR, f"{NAMES[2]}=crash")  # in the second part
    outcome = run_child(_job(tmp_path, parts, time_configs=NAMES), tmp_path, interpret=True)
    assert set(outcome.failed) == {NAMES[2]} and outcome.restarts == 1
    assert set(summarize(load_timings(tmp_path / "t.csv"), warmup=1)["config"]) == set(NAMES) - {NAMES[2]}


def test_checks_of_configs_in_several_parts(tmp_path, parts):
    outcome = run_child(_job(tmp_path, parts, check_configs=NAMES[::2]), tmp_path, interpret=True)
    assert set(outcome.errors) == set(NAMES[::2])
    assert all(error < PROBLEM.dtype_a.tolerance for error in outcome.errors.values())
