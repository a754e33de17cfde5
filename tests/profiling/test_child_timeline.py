"""tune_gemm.measure.child_timeline: seconds from the child's launch to each milestone, in one line."""

from __future__ import annotations

import time

from tune_gemm.measure.child_timeline import LAUNCHED_ENV, REUSED_ORIGIN, Timeline


def test_marks_count_from_the_launch_and_a_label_keeps_its_first_time():
    timeline = Timeline(origin=time.time() - 2.0)
    timeline.mark("imports")
    timeline.mark("first config")
    timeline.mark("first config")  # a later config: not a new milestone
    text = timeline.line()
    assert text.startswith("child timeline (s since launch): imports 2.0, first config 2.0")
    assert text.count("first config") == 1


def test_the_launch_time_comes_from_the_runner(monkeypatch):
    monkeypatch.setenv(LAUNCHED_ENV, repr(time.time() - 5.0))
    timeline = Timeline()
    timeline.mark("imports")
    assert timeline.line() == "child timeline (s since launch): imports 5.0"


def test_a_child_run_by_hand_counts_from_its_first_mark(monkeypatch):
    monkeypatch.delenv(LAUNCHED_ENV, raising=False)
    timeline = Timeline()
    timeline.mark("imports")
    assert timeline.line() == "child timeline (s since its first mark): imports 0.0"


def test_a_reused_child_counts_its_job_from_when_it_was_handed_over():
    timeline = Timeline(origin=time.time() - 1.0, since=REUSED_ORIGIN)
    timeline.mark("job")
    assert timeline.line() == "child timeline (s since its job, a reused child): job 1.0"
