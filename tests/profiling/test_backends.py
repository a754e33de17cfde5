"""tune_gemm.measure.backends.EventsTimer on the CPU, with stand-ins for CUDA events and the GPU sleep: the sleep before each
launch outlasts the host time of the launch before it, so that the events time the GPU, not the host."""

from __future__ import annotations

import pytest
import torch

from tune_gemm.measure import backends


class _FakeEvent:
    def __init__(self, enable_timing: bool):
        self.at = None

    def record(self):
        self.at = _clock.now

    def elapsed_time(self, end) -> float:
        return (end.at - self.at) * 1e3  # ms, as torch's


class _Clock:
    now = 0.0


_clock = _Clock()


@pytest.fixture
def fake_gpu(monkeypatch):
    sleeps = []
    monkeypatch.setattr(torch.cuda, "Event", _FakeEvent)
    monkeypatch.setattr(torch.cuda, "_sleep", sleeps.append)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(backends.time, "perf_counter", lambda: _clock.now)
    return sleeps


def test_sleep_covers_the_launch_before_with_margin_and_never_less_than_the_floor():
    floor = backends.sleep_cycles(0.0)
    assert floor == pytest.approx(100e-6 * 2e9)
    assert backends.sleep_cycles(10e-6) == floor  # a cheap launch: the floor
    assert backends.sleep_cycles(300e-6) == pytest.approx(1.5 * 300e-6 * 2e9)


def test_events_timer_sleeps_after_each_launch_as_long_as_that_launch_kept_the_host(fake_gpu):
    host_seconds = [20e-3, 50e-6, 400e-6, 50e-6]  # a first launch loading its kernel, then cheap and costly ones

    def launch(i):
        _clock.now += host_seconds[i]

    rows = backends.EventsTimer().measure("cfg", launch, len(host_seconds))
    floor = backends.sleep_cycles(0.0)
    # the first sleep knows nothing yet; each later one follows the launch just before, not the slowest so far
    assert fake_gpu == [floor, backends.sleep_cycles(20e-3), floor, backends.sleep_cycles(400e-6)]
    assert fake_gpu[1] > 100 * floor and fake_gpu[3] > floor
    assert [row.kernel_name for row in rows] == ["cfg"] * 4
    assert [row.duration_ns for row in rows] == pytest.approx([s * 1e9 for s in host_seconds])
