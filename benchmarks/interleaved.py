"""Time several calls side by side: every round runs each call once, so that all of them meet the same GPU state.

A large GEMM on an H100 runs at the board's power limit, and the clock the GPU holds then drifts with its
temperature and with what ran just before. Timing the columns one after another (a `do_bench` per column) lets
that drift fall on one column: cuBLAS at 8192x1024x65536 took 1475 us on one machine and
1586 us on another while tune_gemm's config took 1572-1589 us on both, and under sustained load the two were
within 0.5% of each other at the same clock (benchmarks/sustained.py). Interleaving spreads the drift over all
columns alike. Each call is timed as `do_bench` times it: L2 flushed before it, device events around it, and
the median over the rounds kept.

The GPU must never wait for the host inside a timed window, or the host's cost of issuing the call is timed
too. `do_bench` relies on the flush (about 85 us on an H100) to cover the host's work for the next call; in a
round of several columns, one column with a costly host path (max-autotune's compiled wrapper, a TMA launch's
descriptors) drains the queue before the next column's window opens: 1024^3 then measured 57 us for a 9.7 us
kernel. So where the kernels are short, each call's flush is preceded by a GPU sleep long enough to cover the
slowest column's host cost. Long kernels cover it themselves and get no sleep, so they are timed at do_bench's
own duty cycle: a pause before each call would let the card cool between calls.

The host's cost is estimated before the rounds, and it drifts: at 16384x64x2048 (H100) the TMA launch's took
136 to 232 us to issue between runs, cuBLAS's 74 to 514 us, and one run timed a 33 us kernel at 152 us. So each call
checks, once issued, whether the GPU has already passed the event that opens its window (it may then have waited for
the call inside it); where more than AT_RISK_SHARE of a column's calls found it passed, the rounds run again with
the sleep doubled, and at least HOST_MARGIN times those columns' host costs measured then, at most MAX_ATTEMPTS
times in all; a column still so is reported (Interleaved.exposed). Each column's host cost is measured apart too,
one call at a time on an idle GPU (Interleaved.host_us): what a caller pays to launch it, whatever the GPU's time.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from tune_gemm.measure.backends import HOST_MARGIN, gpu_sleep_cycles

FLUSH_BYTES = 256 * 1024 * 1024  # larger than any L2 (do_bench's own flush size)
BUDGET_MS = 900.0  # GPU time for the timed rounds of one entry, all columns together
WARMUP_MS = 50.0  # per call, before its estimate
MIN_ROUNDS, MAX_ROUNDS = 10, 2000
AT_RISK_SHARE = 0.1  # a column whose calls find their window open more often than this is timed again
MAX_ATTEMPTS = 3  # rounds run at most this many times
HOST_SAMPLES = 20  # calls, each on an idle GPU, for a column's host cost


def round_orders(names: list[str], rounds: int) -> list[list[str]]:
    """The order of the columns in each round: rotated by one each round, so that no column always runs first or
    always follows the same one."""
    return [names[start % len(names):] + names[:start % len(names)] for start in range(rounds)]


def rounds_for(estimates_ms: list[float], budget_ms: float = BUDGET_MS) -> int:
    """How many rounds fit the budget, one round costing the sum of the calls' estimates (flush included)."""
    per_round = max(sum(estimates_ms), 1e-6)
    return max(MIN_ROUNDS, min(MAX_ROUNDS, int(budget_ms / per_round)))


def sleep_us(host_us: list[float], flush_us: float, shortest_us: float) -> float:
    """How long the GPU sleeps before each call's flush. While the host issues a call, the GPU runs the call
    before it (at least the shortest kernel), then the sleep and the flush: together they must outlast HOST_MARGIN
    times the slowest column's host cost, so that the call is queued before its window opens."""
    return max(0.0, HOST_MARGIN * max(host_us) - flush_us - shortest_us)


def medians_us(samples_ms: dict[str, list[float]]) -> dict[str, float]:
    return {name: statistics.median(times) * 1e3 for name, times in samples_ms.items()}


def exposed_columns(late: dict[str, list[bool]]) -> list[str]:
    """The columns more than AT_RISK_SHARE of whose calls found, once issued, that the GPU had already opened their
    timed window (`late`: one flag per call)."""
    return [name for name, flags in late.items() if sum(flags) > AT_RISK_SHARE * len(flags)]


def longer_sleep_us(pause_us: float, host_us: list[float]) -> float:
    """The sleep of the next attempt after one whose calls found their windows open: twice as long, and at least
    HOST_MARGIN times the host cost of the exposed columns' calls (`host_us`, measured then)."""
    return max(2 * pause_us, HOST_MARGIN * max(host_us))


@dataclass
class Interleaved:
    """What interleaved_times measured for each column."""

    gpu_us: dict[str, float]  # column -> median microseconds between the events around its call
    host_us: dict[str, float]  # column -> median microseconds a call takes to issue, on an idle GPU
    attempts: int  # how many times the rounds ran (see the module docstring)
    exposed: list[str]  # columns whose calls still found their windows open in the last attempt


def host_cost_us(call: Callable[[], object]) -> float:
    """Median microseconds `call` takes to return, each call issued on an idle GPU (HOST_SAMPLES of them)."""
    import torch

    costs = []
    for _ in range(HOST_SAMPLES):
        torch.cuda.synchronize()
        before = time.perf_counter()
        call()
        costs.append((time.perf_counter() - before) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(costs)


def interleaved_times(calls: dict[str, Callable[[], object]]) -> Interleaved:
    """Each call's median time in microseconds over interleaved rounds, and its host cost (see the module
    docstring)."""
    import torch

    flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    sleep_cycles = 0

    def timed(call) -> tuple:
        if sleep_cycles:
            torch.cuda._sleep(sleep_cycles)
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        late = start.query()  # the GPU is past the window's start: it may have waited for this call
        end.record()
        return start, end, late

    estimates, issue_us = [], []  # per column: median kernel ms, median µs to issue timed() (flush included)
    for call in calls.values():
        warm = timed(call)
        torch.cuda.synchronize()
        count = max(1, int(WARMUP_MS / max(warm[0].elapsed_time(warm[1]), 1e-3)))
        pairs, issued = [], []
        for _ in range(count):
            before = time.perf_counter()
            pairs.append(timed(call))
            issued.append((time.perf_counter() - before) * 1e6)
        torch.cuda.synchronize()
        estimates.append(statistics.median(s.elapsed_time(e) for s, e, _ in pairs))
        issue_us.append(statistics.median(issued))
    flush_start, flush_end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    flush_start.record()
    flush.zero_()
    flush_end.record()
    flush_end.synchronize()
    flush_us = flush_start.elapsed_time(flush_end) * 1e3
    pause_us = sleep_us(issue_us, flush_us, min(estimates) * 1e3)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        sleep_cycles = gpu_sleep_cycles(pause_us * 1e-6)
        per_call = [estimate + (flush_us + pause_us) / 1e3 for estimate in estimates]
        events: dict[str, list] = {name: [] for name in calls}
        for order in round_orders(list(calls), rounds_for(per_call)):
            for name in order:
                events[name].append(timed(calls[name]))
        torch.cuda.synchronize()
        exposed = exposed_columns({name: [late for _, _, late in samples] for name, samples in events.items()})
        if not exposed:
            break
        pause_us = longer_sleep_us(pause_us, [host_cost_us(calls[name]) for name in exposed])
    gpu_us = medians_us({name: [s.elapsed_time(e) for s, e, _ in samples] for name, samples in events.items()})
    return Interleaved(gpu_us, {name: host_cost_us(call) for name, call in calls.items()}, attempt, exposed)
