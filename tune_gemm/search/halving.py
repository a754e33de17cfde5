"""Successive halving: which configs each round of `--search halving` times, with how many launches, and
which of them go on to the next round (HalvingSearch, a tune_gemm.search.strategy). Pure functions of the timings: no
GPU, no files.

Round 0 times every config briefly (`first_iters` launches after one warm-up). Each later round times
`reduction` times as many launches as the one before over the configs kept from it; the round whose
launches reach the run's `--iters` (or whose field is down to `min_keep` configs) is the final one,
timed exactly like an exhaustive search (the run's `--warmup` and `--iters`), and picks the winner.

A round keeps the best `1/reduction` of its configs (never fewer than `min_keep`) plus every config within
`margin` of the round's best time, so that near-ties measured on few launches are not cut on noise.
Ties in time are broken by config name, so the same timings always keep the same configs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tune_gemm.core.config import Config
from tune_gemm.search.strategy import Progress, Round, RoundSpec, SearchStrategy, ranked


@dataclass(frozen=True)
class HalvingPlan:
    first_iters: int = 2  # timed launches per config in round 0
    reduction: int = 10  # launches grow and the field shrinks by this factor each round
    margin: float = 0.03  # also keep any config within this fraction of the round's best time
    min_keep: int = 8  # a round keeps at least this many; a field this small goes straight to the final round

    def __post_init__(self) -> None:
        if self.first_iters < 1 or self.reduction < 2 or self.margin < 0 or self.min_keep < 1:
            raise ValueError(f"invalid halving plan {self}")


def round_spec(plan: HalvingPlan, index: int, field_size: int, warmup: int, iters: int) -> RoundSpec:
    """Launches of round `index` over `field_size` configs, for a run with `warmup`/`iters` launches per config."""
    short_iters = plan.first_iters * plan.reduction ** index
    if short_iters >= iters or field_size <= plan.min_keep:
        return RoundSpec(index, warmup, iters, final=True)
    # one warm-up launch is enough to load the kernel and leave its first-launch costs out of the time
    return RoundSpec(index, min(warmup, 1), short_iters, final=False)


def keep(times: dict[str, float], plan: HalvingPlan) -> list[str]:
    """The configs a round passes on to the next, fastest first (see the module docstring)."""
    order = ranked(times)
    if not order:
        return []
    count = max(plan.min_keep, math.ceil(len(order) / plan.reduction))
    limit = times[order[0]] * (1 + plan.margin)
    return [name for rank, name in enumerate(order) if rank < count or times[name] <= limit]


def final_times(rounds: list[dict[str, float]]) -> dict[str, float]:
    """The times the winner is picked from: those of the last round that timed anything (with a time budget
    spent mid-search, that round may be partial: its configs were timed best-first, so it holds the most
    promising ones measured on the most launches)."""
    return next((times for times in reversed(rounds) if times), {})


HALVING = HalvingPlan()


class HalvingSearch(SearchStrategy):
    """`--search halving`: round 0 over every config as it compiles, each later round over the configs the one
    before kept; a search the time budget cuts closes with the `min_keep` fastest of its last round."""

    name = "halving"
    plan: HalvingPlan

    def default_plan(self) -> HalvingPlan:
        return HALVING

    def after(self, configs: list[Config], progress: Progress) -> Round | None:
        if not progress.done:
            return Round(self._spec(0, len(configs)), configs, compiles=True, first=True)
        last = progress.done[-1].spec
        if progress.stops_after(last):
            timed = final_times([state.times for state in progress.rounds])
            return self.closing(progress, ranked(timed)[: self.plan.min_keep])
        field = progress.configs(keep(progress.rounds[last.index].times, self.plan))
        return Round(self._spec(last.index + 1, len(field)), field)

    def picked_times(self, rounds: list[dict[str, float]]) -> dict[str, float]:
        return final_times(rounds)

    def _spec(self, index: int, field_size: int) -> RoundSpec:
        return round_spec(self.plan, index, field_size, self.warmup, self.iters)
