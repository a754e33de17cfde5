"""Timers that run inside the child process: each measures repeated launches and returns schema rows.

cupti   kernel activity records from CUPTI, through torch.profiler: device time of each kernel
events  CUDA/HIP events recorded around each launch: device time of the whole launcher
host    the host clock, for the CPU interpreter, where no device time exists (not meaningful)
launch  no timing: an external profiler (tune_gemm.measure.external) records the launches
"""

from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable
from typing import Self

from tune_gemm.measure.cache_flush import FLUSH_KERNEL
from tune_gemm.measure.schema import KernelTiming

Launch = Callable[[int], object]  # launch(i) runs launch number i
Flush = Callable[[], object]  # run before each launch, outside the time measured (--icache_flush)


def no_flush() -> None:
    """The default: nothing runs between launches."""


# Host time to enqueue one launch and its two events, at least. The GPU sleeps before each launch so that the
# launch is queued before its start event runs: the events then measure the kernels, not the host's launch
# overhead. A sleep per launch, not one up front, each as long as 1.5 times the host time of the launch before:
# a persistent TMA launch builds its descriptors on the host, over 100 us of Python at some shapes (measured on
# the H100 at 1000^3: 23 us timed for a 10 us kernel with a fixed 100 us sleep). Only the launch before counts,
# so that a slow first launch (a kernel loaded from the cache) lengthens one sleep, not all of them.
_ENQUEUE_SECONDS = 100e-6
HOST_MARGIN = 1.5  # a GPU sleep meant to outlast host work lasts this many times that work
_SLEEP_CYCLES_PER_SECOND = 2e9  # 2 GHz is above any GPU clock (the H100's peak is 1.98 GHz)


def gpu_sleep_cycles(seconds: float) -> int:
    """Cycles for torch.cuda._sleep that last at least `seconds` at any GPU clock."""
    return int(seconds * _SLEEP_CYCLES_PER_SECOND)


def sleep_cycles(previous_host_seconds: float) -> int:
    """GPU sleep cycles before a launch, given the host seconds the launch before took to enqueue."""
    return gpu_sleep_cycles(max(_ENQUEUE_SECONDS, HOST_MARGIN * previous_host_seconds))


SEPARATOR_KERNEL = "tune_gemm_launch_separator"


@functools.cache
def _separator_kernel():
    """An empty kernel launched before each timed launch: its records mark where each launch begins."""
    import triton

    @triton.jit
    def tune_gemm_launch_separator():
        pass

    return tune_gemm_launch_separator


class Session:
    """Configs measured one after another, their rows in `rows` (subject -> rows) once the session is over.

    This one measures each config on the spot; CUPTI's opens one profiler for all of them."""

    def __init__(self, timer):
        self._timer = timer
        self.rows: dict[str, list[KernelTiming]] = {}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def measure(self, subject: str, launch: Launch, count: int, flush: Flush = no_flush) -> None:
        self.rows[subject] = self._timer.measure(subject, launch, count, flush)


class Timer:
    """Measures launches in the child; `name` is what a job names it by (TIMERS)."""

    name: str
    meaningful: bool  # False: host times under the interpreter

    def session(self) -> Session:
        return Session(self)


class EventsTimer(Timer):
    name = "events"
    meaningful = True

    def measure(self, subject: str, launch: Launch, count: int, flush: Flush = no_flush) -> list[KernelTiming]:
        import torch

        starts = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
        host_seconds = 0.0
        for i in range(count):
            flush()
            torch.cuda._sleep(sleep_cycles(host_seconds))
            issued = time.perf_counter()
            starts[i].record()
            launch(i)
            ends[i].record()
            host_seconds = time.perf_counter() - issued
        torch.cuda.synchronize()
        return [KernelTiming(subject, i, starts[i].elapsed_time(ends[i]) * 1e6) for i in range(count)]


class _CuptiSession(Session):
    """One torch.profiler session around many configs' launches: profiler start-up and record processing
    are paid once per batch of configs instead of once per config."""

    def __init__(self, timer):
        super().__init__(timer)
        self._launched: list[tuple[str, int]] = []  # (subject, separators launched for it), in order

    def __enter__(self) -> Self:
        from torch.profiler import ProfilerActivity, profile

        self._warnings = warnings.catch_warnings()
        self._warnings.__enter__()
        warnings.simplefilter("ignore")  # torch.profiler's notes on event cycles: not ours to act on
        self._profile = profile(activities=[ProfilerActivity.CUDA])
        self._profile.__enter__()
        return self

    def measure(self, subject: str, launch: Launch, count: int, flush: Flush = no_flush) -> None:
        separator, launched = _separator_kernel(), 0
        try:
            for i in range(count):
                flush()  # its kernel's records are dropped below, by name
                separator[(1,)]()
                launched += 1
                launch(i)
        finally:
            self._launched.append((subject, launched))

    def __exit__(self, *exc) -> None:
        import torch
        from torch.autograd import DeviceType

        try:
            torch.cuda.synchronize()
        finally:
            self._profile.__exit__(*exc)
            self._warnings.__exit__(*exc)
        if exc[0] is not None:  # the batch broke off: its caller times its configs again elsewhere
            return
        kernels = sorted(
            (event for event in self._profile.profiler.kineto_results.events()
             if event.device_type() == DeviceType.CUDA and event.name() != FLUSH_KERNEL),
            key=lambda event: event.start_ns(),
        )
        self.rows = split_launches([(event.name(), float(event.duration_ns())) for event in kernels],
                                   self._launched)


def split_launches(kernels: list[tuple[str, float]], launched: list[tuple[str, int]]) -> dict[str, list[KernelTiming]]:
    """Rows per subject from a session's kernel records, (name, duration_ns) in start order.

    One stream runs the launches in order, so every kernel between two separators belongs to one launch:
    instance is that launch's number, for the config's kernels and any others it runs (a split-K
    reduction, a padding copy), which the caller can then sum per launch. `launched` says, in order, how
    many separators each subject launched, so which launches are whose."""
    launches: list[list[tuple[str, float]]] = []
    for name, duration in kernels:
        if name == SEPARATOR_KERNEL:
            launches.append([])
        elif launches:
            launches[-1].append((name, duration))
    rows, first = {}, 0
    for subject, count in launched:
        rows[subject] = [KernelTiming(name, number, duration)
                         for number, records in enumerate(launches[first:first + count])
                         for name, duration in records]
        first += count
    return rows


class CuptiTimer(Timer):
    name = "cupti"
    meaningful = True

    def session(self) -> Session:
        return _CuptiSession(self)

    def measure(self, subject: str, launch: Launch, count: int, flush: Flush = no_flush) -> list[KernelTiming]:
        with self.session() as session:
            session.measure(subject, launch, count, flush)
        return session.rows[subject]


class HostTimer(Timer):
    name = "host"
    meaningful = False

    def measure(self, subject: str, launch: Launch, count: int, flush: Flush = no_flush) -> list[KernelTiming]:
        rows = []
        for i in range(count):
            flush()
            start = time.perf_counter_ns()
            launch(i)
            rows.append(KernelTiming(subject, i, float(time.perf_counter_ns() - start)))
        return rows


class LaunchOnly(Timer):
    """Under an external profiler: launch, and let the profiler do the timing."""

    name = "launch"
    meaningful = True

    def measure(self, subject: str, launch: Launch, count: int, flush: Flush = no_flush) -> list[KernelTiming]:
        for i in range(count):
            flush()  # the profiler records it too: tune_gemm.measure.external drops it by name
            launch(i)
        return []


TIMERS = {timer.name: timer for timer in (CuptiTimer, EventsTimer, HostTimer, LaunchOnly)}
