"""Timers that run inside the child process: each measures repeated launches and returns schema rows.

cupti   kernel activity records from CUPTI, through torch.profiler: device time of each kernel
events  CUDA/HIP events recorded around each launch: device time of the whole launcher
host    the host clock, for the CPU interpreter, where no device time exists (not meaningful)
launch  no timing: an external profiler (profiling.external) records the launches
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable

from profiling.schema import KernelTiming

Launch = Callable[[int], object]  # launch(i) runs launch number i


# Host time to enqueue one launch and its two events, generously. The GPU sleeps this long before
# each launch so that the launch is queued before its start event runs: the events then measure the
# kernels, not the host's launch overhead. A sleep per launch, not one up front, because a slow
# launch (a kernel loaded from the cache on first use) would use up a single sleep.
_ENQUEUE_SECONDS = 100e-6
_SLEEP_CYCLES = int(_ENQUEUE_SECONDS * 2e9)  # 2 GHz is above any GPU clock: the sleep lasts at least that


class EventsTimer:
    name = "events"
    meaningful = True

    def measure(self, subject: str, launch: Launch, count: int) -> list[KernelTiming]:
        import torch

        starts = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
        for i in range(count):
            torch.cuda._sleep(_SLEEP_CYCLES)
            starts[i].record()
            launch(i)
            ends[i].record()
        torch.cuda.synchronize()
        return [KernelTiming(subject, i, starts[i].elapsed_time(ends[i]) * 1e6) for i in range(count)]


class CuptiTimer:
    name = "cupti"
    meaningful = True

    def measure(self, subject: str, launch: Launch, count: int) -> list[KernelTiming]:
        import torch
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.profiler's notes on event cycles: not ours to act on
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for i in range(count):
                    launch(i)
                torch.cuda.synchronize()
        kernels = sorted(
            (event for event in prof.profiler.kineto_results.events() if event.device_type() == DeviceType.CUDA),
            key=lambda event: event.start_ns(),
        )
        seen: dict[str, int] = {}
        rows = []
        for event in kernels:
            instance = seen.get(event.name(), 0)
            seen[event.name()] = instance + 1
            rows.append(KernelTiming(event.name(), instance, float(event.duration_ns())))
        return rows


class HostTimer:
    name = "host"
    meaningful = False

    def measure(self, subject: str, launch: Launch, count: int) -> list[KernelTiming]:
        rows = []
        for i in range(count):
            start = time.perf_counter_ns()
            launch(i)
            rows.append(KernelTiming(subject, i, float(time.perf_counter_ns() - start)))
        return rows


class LaunchOnly:
    """Under an external profiler: launch, and let the profiler do the timing."""

    name = "launch"
    meaningful = True

    def measure(self, subject: str, launch: Launch, count: int) -> list[KernelTiming]:
        for i in range(count):
            launch(i)
        return []


TIMERS = {timer.name: timer for timer in (CuptiTimer, EventsTimer, HostTimer, LaunchOnly)}
