"""On a GPU (`pytest -m gpu`, device machine): benchmarks/interleaved.py times the GPU's work, not the host's, when a
column's host cost grows after the estimate its sleep was sized from."""

from __future__ import annotations

import time

import pytest
import torch
from helpers import load_benchmark

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

# Far longer than the first attempt's sleep can cover. That sleep is sized from the calls' issue times measured back to
# back before the rounds, which grow to the GPU's time per call (a flush, about 90 us) once the queue fills. With a
# 0.3 ms delay one H100 run (thirty-eighth) needed no second attempt: no window was found open and the drifting call
# timed 5.1 us, so the first sleep had covered the drift and the rerun this test is about did not run.
HOST_DELAY_S = 2e-3
KERNEL_US_AT_MOST = 60.0  # the adds take a few microseconds; a window that held the host's wait would take 2000


def _busy_wait(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_rounds_run_again_with_a_longer_sleep_when_a_columns_host_cost_grows(monkeypatch):
    interleaved = load_benchmark("interleaved")
    drifted = {"slow": False}
    rounds_as_written = interleaved.round_orders

    def rounds_after_the_estimate(names, rounds):  # the rounds start: from now on the drifting call's host is slow
        drifted["slow"] = True
        return rounds_as_written(names, rounds)

    monkeypatch.setattr(interleaved, "round_orders", rounds_after_the_estimate)
    x = torch.zeros(1024, device="cuda")

    def drifting():
        if drifted["slow"]:
            _busy_wait(HOST_DELAY_S)
        x.add_(1)

    timed = interleaved.interleaved_times({"steady": lambda: x.mul_(1), "drifting": drifting})
    assert timed.attempts == 2 and timed.exposed == []  # the first attempt's sleep was sized before the drift
    assert timed.host_us["drifting"] > HOST_DELAY_S * 1e6
    assert timed.gpu_us["drifting"] < KERNEL_US_AT_MOST  # the kernel, not the host's wait
    assert timed.gpu_us["steady"] < KERNEL_US_AT_MOST
