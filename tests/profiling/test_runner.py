"""tune_gemm.measure.runner and tune_gemm.measure.child: a config that kills or hangs the child is blamed and skipped."""

from __future__ import annotations

import re
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from helpers import FAKE_MODULE_HEAD

from tune_gemm.generate.loader import load_module
from tune_gemm.kernels.matmul_family import check_config
from tune_gemm.measure.job import ChildJob
from tune_gemm.measure.postprocess import load_timings, summarize
from tune_gemm.measure.runner import STOP_GRACE_SECONDS, ChildFailed, run_child

# A stand-in for a generated module: same names, trivial "kernels", some of them deadly.
FAKE_MODULE = FAKE_MODULE_HEAD + textwrap.dedent('''

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
    # the child that ran to its end printed where its start-up went, in seconds since the runner launched it
    timeline = re.search(r"child timeline \(s since launch\): imports ([\d.]+), module ([\d.]+), inputs ([\d.]+), "
                         r"first config ([\d.]+), end ([\d.]+)", "\n".join(logged))
    assert timeline and 0 < float(timeline[1]) <= float(timeline[5])
    assert set(outcome.failed) == {"BM32_BN16_BK16_GM1_SK1_nW1_nS1", "BM32_BN32_BK16_GM1_SK1_nW1_nS1"}
    assert "exit 3" in outcome.failed["BM32_BN16_BK16_GM1_SK1_nW1_nS1"]
    assert "hang" in outcome.failed["BM32_BN32_BK16_GM1_SK1_nW1_nS1"]
    assert outcome.restarts == 2
    timings = load_timings(tmp_path / "t.csv")
    table = summarize(timings, warmup=1)
    assert set(table["config"]) == {"BM16_BN16_BK16_GM1_SK1_nW1_nS1", "BM16_BN32_BK16_GM1_SK1_nW1_nS1",
                                    "BM64_BN32_BK16_GM1_SK1_nW1_nS1", "torch.matmul"}
    # every launch of the timed ones is in the CSV, the warm-up and the 3 timed (summarize may then drop a timed
    # launch slower than the warm-up as a spike: host timings of a loaded CPU have them)
    launches = timings.groupby("kernel_name")["instance"].agg(sorted)
    assert len(launches) == 4 and all(instances == [0, 1, 2, 3] for instances in launches)
    assert table["instances"].between(2, 3).all()


def test_check_results_come_back_and_a_crash_is_missing(tmp_path):
    names = ["BM16_BN16_BK16_GM1_SK1_nW1_nS1", "BM32_BN16_BK16_GM1_SK1_nW1_nS1"]
    job = _job(tmp_path, check_configs=names)
    outcome = run_child(job, tmp_path, interpret=True, config_timeout=30)
    # the family's check of the fine config, as this process computes it on the child's inputs (seed + 1000)
    module = load_module(job.module_path)
    expected = check_config(module.LAUNCHERS[names[0]], module.PROBLEM, "cpu", seed=job.seed + 1000)
    assert outcome.errors == {names[0]: expected} and expected < module.PROBLEM.tolerance
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


def test_a_child_that_fails_to_start_says_why_not_its_timeline(tmp_path):
    job = _job(tmp_path, time_configs=["BM16_BN16_BK16_GM1_SK1_nW1_nS1"])
    Path(job.module_path).write_text("raise ImportError('no such kernel family')\n")
    with pytest.raises(ChildFailed) as failure:
        run_child(job, tmp_path, interpret=True, config_timeout=30)
    assert "no such kernel family" in str(failure.value) and "child timeline" not in str(failure.value)
