"""tune_gemm.measure.standby: the next timing children are started while one runs, the next run takes over the oldest
when it fits, and a child whose job ran clean waits for the next job; on the CPU, with the interpreter and the host
timer."""

from __future__ import annotations

import os
import re
import textwrap
import time

import pytest
from helpers import FAKE_MODULE_HEAD

from tune_gemm.measure.child_timeline import REUSED_ORIGIN
from tune_gemm.measure.job import ChildJob
from tune_gemm.measure.postprocess import load_timings, summarize
from tune_gemm.measure.runner import PROJECT_ROOT, run_child, start_standby
from tune_gemm.measure.standby import STANDBY, Standby, standby_key

MODULE = FAKE_MODULE_HEAD + textwrap.dedent('''

    def fine(a, b, c):
        return c.copy_(a @ b)

    LAUNCHERS = {"BM16_BN16_BK16_GM1_SK1_nW1_nS1": fine, "BM32_BN16_BK16_GM1_SK1_nW1_nS1": fine}
''')
NAMES = ["BM16_BN16_BK16_GM1_SK1_nW1_nS1", "BM32_BN16_BK16_GM1_SK1_nW1_nS1"]


@pytest.fixture(autouse=True)
def no_standby_left():
    yield
    STANDBY.stop()


def _run(tmp_path, round_name: str, env: dict | None = None, standby: int = 1) -> tuple[str, ChildJob]:
    """One child run of both configs in its own folder, `standby` children kept waiting; returns what it logged."""
    folder = tmp_path / round_name
    folder.mkdir()
    (folder / "module.py").write_text(MODULE)
    job = ChildJob(module_path=str(folder / "module.py"), timer="host", csv_path=str(folder / "t.csv"),
                   progress_path=str(folder / "p.txt"), time_configs=NAMES, warmup=1, iters=2, env=env or {})
    logged = []
    outcome = run_child(job, folder, interpret=True, config_timeout=60, log=logged.append, standby=standby)
    assert outcome.failed == {}
    table = summarize(load_timings(folder / "t.csv"), warmup=1)
    assert sorted(table["config"]) == NAMES and (table["instances"] == 2).all()
    return "\n".join(logged), job


def _timeline(logged: str, since: str = "launch") -> str:
    return re.search(rf"child timeline \(s since {since}\): (.*)", logged)[1]


def _marks(timeline: str) -> dict[str, float]:
    return {label: float(at) for label, at in re.findall(r"(\w[\w ]*?) ([\d.]+)(?:,|$)", timeline)}


def _pids() -> list[int]:
    return [child.process.pid for child in STANDBY.waiting]


def test_a_child_whose_job_ran_clean_takes_the_next_job(tmp_path):
    first, _ = _run(tmp_path, "round0")
    assert list(_marks(_timeline(first)))[:3] == ["imports", "ready", "job"]  # started in standby mode for it
    assert len(STANDBY.waiting) == 2  # it, given back first, and the one started during its job
    reused = STANDBY.waiting[0]
    second, _ = _run(tmp_path, "round1")
    # the same process, warm: its second job's marks count from when the job was handed over, and the log holds
    # this job's output alone
    assert list(_marks(_timeline(second, REUSED_ORIGIN)))[:2] == ["job", "module"]
    assert second.count("child timeline") == 1
    assert STANDBY.waiting[0] is reused and reused.process.poll() is None and len(STANDBY.waiting) == 2


def _job_with(folder, extra_launchers: str, names: list[str]) -> ChildJob:
    """A job over `names` of a module holding the two fine configs and those `extra_launchers` adds."""
    folder.mkdir()
    (folder / "module.py").write_text(MODULE + textwrap.dedent(extra_launchers))
    return ChildJob(module_path=str(folder / "module.py"), timer="host", csv_path=str(folder / "t.csv"),
                    progress_path=str(folder / "p.txt"), time_configs=names, warmup=1, iters=2)


def test_a_child_whose_job_failed_a_config_is_not_reused(tmp_path):
    job = _job_with(tmp_path / "failing", '''
        def broken(a, b, c):
            raise RuntimeError("no kernel")

        LAUNCHERS["BM64_BN16_BK16_GM1_SK1_nW1_nS1"] = broken
    ''', [*NAMES, "BM64_BN16_BK16_GM1_SK1_nW1_nS1"])
    outcome = run_child(job, tmp_path / "failing", interpret=True, config_timeout=60, standby=1)
    assert list(outcome.failed) == ["BM64_BN16_BK16_GM1_SK1_nW1_nS1"]
    assert len(STANDBY.waiting) == 1 and "ready" in _marks(_timeline(_run(tmp_path, "after")[0]))


def test_a_reused_child_that_hangs_is_killed_and_not_given_back(tmp_path):
    _run(tmp_path, "round0")
    reused = STANDBY.waiting[0]
    job = _job_with(tmp_path / "hanging", '''
        def hangs(a, b, c):
            time.sleep(600)

        LAUNCHERS["BM64_BN16_BK16_GM1_SK1_nW1_nS1"] = hangs
    ''', ["BM64_BN16_BK16_GM1_SK1_nW1_nS1", *NAMES])
    outcome = run_child(job, tmp_path / "hanging", interpret=True, config_timeout=2, standby=1)
    assert "hang" in outcome.failed["BM64_BN16_BK16_GM1_SK1_nW1_nS1"] and outcome.restarts == 1
    assert reused.process.poll() is not None and reused not in STANDBY.waiting
    assert sorted(summarize(load_timings(tmp_path / "hanging" / "t.csv"), warmup=1)["config"]) == NAMES


def test_a_reused_child_that_died_between_jobs_leaves_the_job_to_another(tmp_path, monkeypatch):
    _run(tmp_path, "round0")
    take = STANDBY.take

    def take_one_that_dies(key):
        child = take(key)
        child.process.kill()  # between the check that it lives and its job
        child.process.wait()
        monkeypatch.setattr(STANDBY, "take", take)
        return child

    monkeypatch.setattr(STANDBY, "take", take_one_that_dies)
    logged, _ = _run(tmp_path, "round1")  # no ChildFailed: the job ran in a child that was waiting
    assert "ready" in _marks(_timeline(logged))


def test_a_child_whose_runner_leaves_its_job_early_is_stopped(tmp_path):
    _run(tmp_path, "round0")
    reused = STANDBY.waiting[0]

    def interrupted():
        raise KeyboardInterrupt

    folder = tmp_path / "left"
    folder.mkdir()
    (folder / "module.py").write_text(MODULE)
    job = ChildJob(module_path=str(folder / "module.py"), timer="host", csv_path=str(folder / "t.csv"),
                   progress_path=str(folder / "p.txt"), time_configs=NAMES, warmup=1, iters=2)
    with pytest.raises(KeyboardInterrupt):
        run_child(job, folder, interpret=True, config_timeout=60, watch=interrupted, standby=1)
    assert reused.process.poll() is not None and reused not in STANDBY.waiting  # not left waiting for a job


def test_a_child_that_has_served_its_share_of_configs_is_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr("tune_gemm.measure.standby.MAX_CONFIGS_SERVED", 3)  # each job here hands over 2
    _run(tmp_path, "round0")
    reused = STANDBY.waiting[0]
    _run(tmp_path, "round1")  # 4 served: stopped once its job ended
    assert reused.process.poll() is not None and reused not in STANDBY.waiting


def test_a_standby_started_for_another_environment_is_not_taken(tmp_path):
    _run(tmp_path, "round0")
    before = STANDBY.waiting
    other, _ = _run(tmp_path, "round1", env={"TUNE_GEMM_TEST_MARK": "other"})
    assert all(child.process.poll() is not None for child in before)  # stopped: the next job could not take them
    assert REUSED_ORIGIN not in other and not set(_pids()) & {child.process.pid for child in before}


def test_a_dead_standby_is_replaced(tmp_path):
    _run(tmp_path, "round0")
    for child in STANDBY.waiting:
        child.process.kill()
        child.process.wait()
    dead = {child.process.pid for child in STANDBY.waiting}
    again, _ = _run(tmp_path, "round1")
    assert REUSED_ORIGIN not in again and STANDBY.waiting and not set(_pids()) & dead


def test_stop_ends_the_waiting_child_and_removes_its_files(tmp_path):
    standby = Standby()
    key = standby_key({}, "host")
    standby.start(key, {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "TRITON_INTERPRET": "1"}, PROJECT_ROOT, None)
    child = standby.waiting[0]
    assert child.process.poll() is None and child.output_path.parent.is_dir()
    assert standby.take(standby_key({"X": "1"}, "host")) is None  # another key: stopped, not handed out
    assert child.process.poll() is not None
    standby.stop()
    assert not child.output_path.parent.exists()


def test_a_waiting_child_is_ready_once_warm_and_not_once_stopped():
    standby = Standby()
    assert not standby.wait_ready(1.0)  # none started
    standby.start(standby_key({}, "host"), {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "TRITON_INTERPRET": "1"},
                  PROJECT_ROOT, None)
    child = standby.waiting[0]
    assert not standby.wait_ready(0.0)  # started a moment ago: still importing
    assert standby.wait_ready(120.0) and child.ready_path.exists()
    standby.stop()
    assert not standby.wait_ready(1.0)


def test_a_child_that_ends_before_it_is_warm_is_not_ready(tmp_path):
    standby = Standby()
    no_standard_library = {**os.environ, "PYTHONHOME": str(tmp_path)}  # the interpreter exits as it starts
    standby.start(standby_key({}, "host"), no_standard_library, PROJECT_ROOT, None)
    started = time.monotonic()
    assert not standby.wait_ready(60.0)
    assert time.monotonic() - started < 30  # told by its end, not by the time-out
    standby.stop()


def test_a_child_started_ahead_is_taken_by_the_first_run(tmp_path):
    start_standby({}, "host", interpret=True)  # as tune_gemm.run.start_up does before a run's first size
    assert STANDBY.wait_ready(120.0)
    ahead = STANDBY.waiting[0]
    logged, _ = _run(tmp_path, "round0")
    marks = _marks(_timeline(logged))
    assert list(marks)[:3] == ["imports", "ready", "job"] and marks["ready"] <= marks["job"]
    assert STANDBY.waiting[0] is ahead  # it ran the job and waits again


def test_a_child_waiting_for_another_key_is_replaced_and_one_for_the_same_key_kept():
    standby = Standby()
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "TRITON_INTERPRET": "1"}
    standby.start(standby_key({}, "host"), env, PROJECT_ROOT, None)
    first = standby.waiting[0]
    standby.start(standby_key({}, "host"), env, PROJECT_ROOT, None)
    assert standby.waiting == [first]  # already waiting for this key
    standby.start(standby_key({"X": "1"}, "host"), {**env, "X": "1"}, PROJECT_ROOT, None)  # e.g. another Triton cache
    assert first.process.poll() is not None and [c.key for c in standby.waiting] == [standby_key({"X": "1"}, "host")]
    standby.stop()


def test_children_are_kept_waiting_up_to_the_count_and_taken_oldest_first():
    standby = Standby()
    env, key = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "TRITON_INTERPRET": "1"}, standby_key({}, "host")
    standby.start(key, env, PROJECT_ROOT, None, count=2)
    first, second = standby.waiting
    assert first is not second and first.process.poll() is None and second.process.poll() is None
    assert standby.take(key) is first and standby.waiting == [second]
    standby.start(key, env, PROJECT_ROOT, None, count=2)  # back to two: the one left, then a new one
    assert standby.waiting[0] is second and len(standby.waiting) == 2
    second.process.kill()
    second.process.wait()
    third = standby.waiting[1]
    assert standby.take(key) is third  # one that ended is passed over, and stopped
    assert standby.waiting == []
    first.process.kill()
    first.process.wait()
    standby.stop()


def test_a_run_keeping_two_waiting_takes_the_older_one(tmp_path):
    start_standby({}, "host", interpret=True, count=2)  # as tune_gemm.run.start_up does under a time budget
    oldest, other = STANDBY.waiting
    assert STANDBY.wait_ready(120.0) and oldest.ready_path.exists()
    logged, _ = _run(tmp_path, "round0", standby=2)
    assert list(_marks(_timeline(logged)))[:3] == ["imports", "ready", "job"]
    # it ran the job and is back first; the other still waits, and a third started during the job
    assert STANDBY.waiting[:2] == [oldest, other] and len(STANDBY.waiting) == 3
