"""profiling.runner and profiling.child: a config that kills or hangs the child is blamed and skipped."""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pandas as pd

from profiling.job import ChildJob
from profiling.postprocess import load_timings, summarize
from profiling.runner import STOP_GRACE_SECONDS, run_child

# A stand-in for a generated module: same names, trivial "kernels", some of them deadly.
FAKE_MODULE = textwrap.dedent('''
    import os, time
    import torch
    INTERPRETED = True
    PROBLEM = None

    def make_operands(problem, device, seed=0, init_type="randn"):
        return torch.ones(2, 2), torch.ones(2, 2), torch.empty(2, 2)

    def check_config(launcher, problem, device, seed=0):
        launcher(*make_operands(problem, device))
        return 0.0

    def fine(a, b, c):
        return c.copy_(a @ b)

    def crash(a, b, c):
        os._exit(3)

    def hang(a, b, c):
        time.sleep(3600)

    LAUNCHERS = {
        "BM16_BN16_BK16_GM1_SK1_nW1_nS1": fine,
        "BM32_BN16_BK16_GM1_SK1_nW1_nS1": crash,
        "BM16_BN32_BK16_GM1_SK1_nW1_nS1": fine,
        "BM32_BN32_BK16_GM1_SK1_nW1_nS1": hang,
        "BM64_BN32_BK16_GM1_SK1_nW1_nS1": fine,
    }
''')


def _job(tmp_path, **fields) -> ChildJob:
    module = tmp_path / "fake_module.py"
    module.write_text(FAKE_MODULE)
    return ChildJob(module_path=str(module), timer="host", csv_path=str(tmp_path / "t.csv"),
                    progress_path=str(tmp_path / "p.txt"), check_path=str(tmp_path / "c.json"), warmup=1, iters=3,
                    **fields)


def test_crashing_and_hanging_configs_are_blamed_logged_and_the_rest_timed(tmp_path):
    names = list(__import__("re").findall(r'"(BM\w+)"', FAKE_MODULE))
    logged = []
    outcome = run_child(_job(tmp_path, time_configs=names, baseline=True), tmp_path, interpret=True,
                        config_timeout=3, log=logged.append)
    # each named in the log as its child ends, not only in the outcome at the end
    assert [line.split()[1].rstrip(":") for line in logged if line.startswith("failed ")] == [
        "BM32_BN16_BK16_GM1_SK1_nW1_nS1", "BM32_BN32_BK16_GM1_SK1_nW1_nS1"]
    assert set(outcome.failed) == {"BM32_BN16_BK16_GM1_SK1_nW1_nS1", "BM32_BN32_BK16_GM1_SK1_nW1_nS1"}
    assert "exit 3" in outcome.failed["BM32_BN16_BK16_GM1_SK1_nW1_nS1"]
    assert "hang" in outcome.failed["BM32_BN32_BK16_GM1_SK1_nW1_nS1"]
    assert outcome.restarts == 2
    table = summarize(load_timings(tmp_path / "t.csv"), warmup=1)
    assert set(table["config"]) == {"BM16_BN16_BK16_GM1_SK1_nW1_nS1", "BM16_BN32_BK16_GM1_SK1_nW1_nS1",
                                    "BM64_BN32_BK16_GM1_SK1_nW1_nS1", "torch.matmul"}
    assert (table["instances"] == 3).all()


def test_check_results_come_back_and_a_crash_is_missing(tmp_path):
    names = ["BM16_BN16_BK16_GM1_SK1_nW1_nS1", "BM32_BN16_BK16_GM1_SK1_nW1_nS1"]
    outcome = run_child(_job(tmp_path, check_configs=names), tmp_path, interpret=True, config_timeout=30)
    assert outcome.errors == {"BM16_BN16_BK16_GM1_SK1_nW1_nS1": 0.0}
    assert list(outcome.failed) == ["BM32_BN16_BK16_GM1_SK1_nW1_nS1"]
    assert pd.isna(outcome.errors.get("BM32_BN16_BK16_GM1_SK1_nW1_nS1", float("nan")))


def test_a_stop_request_ends_a_child_stuck_in_a_config_without_blaming_the_config(tmp_path):
    hung, first, last = "BM32_BN32_BK16_GM1_SK1_nW1_nS1", "BM16_BN16_BK16_GM1_SK1_nW1_nS1", "BM64_BN32_BK16_GM1_SK1_nW1_nS1"
    stop = tmp_path / "stop"
    job = _job(tmp_path, time_configs=[first, hung, last], stop_path=str(stop))

    def spend_the_budget_once_the_hang_starts():  # as the tuner's time budget would, while the child is stuck
        progress = Path(job.progress_path)
        if progress.exists() and f"start {hung}" in progress.read_text():
            stop.touch()

    started = time.monotonic()
    outcome = run_child(job, tmp_path, interpret=True, config_timeout=120, watch=spend_the_budget_once_the_hang_starts)
    assert time.monotonic() - started < STOP_GRACE_SECONDS + 50  # the grace and a start-up, not the config timeout
    assert outcome.failed == {} and outcome.restarts == 0
    assert set(summarize(load_timings(tmp_path / "t.csv"), warmup=1)["config"]) == {first}
