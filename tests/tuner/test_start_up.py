"""tune_gemm.run.start_up: the run's compile workers and first timing child are started ahead of its sizes and waited for
before a size's search starts its clock; on the CPU (workers without a GPU driver, a child without a GPU)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tune_gemm.compile.pool import WORKER_PROCESSES
from tune_gemm.measure import ProfilerChoice
from tune_gemm.measure.external import PROFILERS
from tune_gemm.measure.standby import STANDBY
from tune_gemm.run.start_up import helpers_ready, start_helpers
from tune_gemm.search.settings import TuneSettings

# as on a GPU: process workers compile ahead, a timing child in standby
ON_A_GPU = TuneSettings(profiler=ProfilerChoice("host", "host"), num_threads=2)


@pytest.fixture(autouse=True)
def nothing_running(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    WORKER_PROCESSES.stop()
    STANDBY.stop()
    yield
    WORKER_PROCESSES.stop()
    STANDBY.stop()


def test_helpers_start_without_waiting_and_are_waited_for_once():
    starts = WORKER_PROCESSES.starts
    start_helpers(ON_A_GPU)
    assert WORKER_PROCESSES.running and len(STANDBY.waiting) == 1
    assert not WORKER_PROCESSES.wait_ready(0.0)  # start_helpers returned while they still start
    assert helpers_ready(ON_A_GPU) > 0
    assert WORKER_PROCESSES.wait_ready(0.0) and STANDBY.wait_ready(0.0)
    assert helpers_ready(ON_A_GPU) == 0.0  # the next size waits for nothing
    assert WORKER_PROCESSES.starts == starts + 1  # and starts nothing again


def test_helpers_ready_starts_what_is_not_running():
    assert helpers_ready(ON_A_GPU) > 0  # a size tuned without start_helpers ahead (a tune_gemm.run.workers worker's first)
    assert WORKER_PROCESSES.wait_ready(0.0) and STANDBY.wait_ready(0.0)


@pytest.mark.parametrize("settings, workers, standby", [
    (replace(ON_A_GPU, interpret=True), False, 0),  # the interpreter compiles nothing; its children start fast
    (replace(ON_A_GPU, compile_pool="thread"), False, 1),
    (replace(ON_A_GPU, precompile=False), False, 1),  # --no_warmup: kernels compile in the timing child
    (replace(ON_A_GPU, profiler=ProfilerChoice("nsys", "events", PROFILERS["nsys"])), True, None),  # wraps each child
    (replace(ON_A_GPU, time_budget=40.0), True, 2),  # a cut round's next child must be warm already
    (replace(ON_A_GPU, time_budget=40.0, search="halving"), True, 2),
    (replace(ON_A_GPU, time_budget=40.0, search="exhaustive"), True, 1),  # one round: no round after it
])
def test_only_the_helpers_the_searches_use_are_started(settings, workers, standby):
    assert (settings.compile_workers, settings.standby_children) == (workers, standby)  # tune_gemm.run.pipeline's say
    start_helpers(settings)
    assert WORKER_PROCESSES.running == workers and len(STANDBY.waiting) == (standby or 0)
