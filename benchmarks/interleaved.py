"""Time several calls side by side: every round runs each call once, so that all of them meet the same GPU state.

A large GEMM on an H100 runs at the board's power limit, and the clock the GPU holds then drifts with its
temperature and with what ran just before. Timing the columns one after another (a `do_bench` per column) lets
that drift fall on one column: in the sixth run, cuBLAS at 8192x1024x65536 took 1475 us on one machine and
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
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from profiling.backends import HOST_MARGIN, gpu_sleep_cycles

FLUSH_BYTES = 256 * 1024 * 1024  # larger than any L2 (do_bench's own flush size)
BUDGET_MS = 900.0  # GPU time for the timed rounds of one entry, all columns together
WARMUP_MS = 50.0  # per call, before its estimate
MIN_ROUNDS, MAX_ROUNDS = 10, 2000


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


def interleaved_medians_us(calls: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Each call's median time in microseconds over interleaved rounds (see the module docstring)."""
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
        end.record()
        return start, end

    estimates, host_us = [], []
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
        estimates.append(statistics.median(s.elapsed_time(e) for s, e in pairs))
        host_us.append(statistics.median(issued))
    flush_start, flush_end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    flush_start.record()
    flush.zero_()
    flush_end.record()
    flush_end.synchronize()
    flush_us = flush_start.elapsed_time(flush_end) * 1e3
    pause_us = sleep_us(host_us, flush_us, min(estimates) * 1e3)
    sleep_cycles = gpu_sleep_cycles(pause_us * 1e-6)
    estimates = [estimate + (flush_us + pause_us) / 1e3 for estimate in estimates]
    events: dict[str, list] = {name: [] for name in calls}
    for order in round_orders(list(calls), rounds_for(estimates)):
        for name in order:
            events[name].append(timed(calls[name]))
    torch.cuda.synchronize()
    return medians_us({name: [s.elapsed_time(e) for s, e in pairs] for name, pairs in events.items()})
