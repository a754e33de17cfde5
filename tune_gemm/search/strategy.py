"""What a search strategy is: given what is timed so far, the next round to time, or none (the search is done).

A strategy chooses configs and launches; tune_gemm.search.runner runs the rounds it asks for (compile stream, timing
children, time budget, checkpoint) and tune_gemm.search.search drives the two. Each strategy is a module of its own
(tune_gemm.search.exhaustive, halving, refine), registered by its `--search` name in tune_gemm.search.search.SEARCHES.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from tune_gemm.core.config import Config
from tune_gemm.search.checkpoint import RoundState


@dataclass(frozen=True)
class RoundSpec:
    index: int
    warmup: int
    iters: int
    final: bool


def ranked(times: dict[str, float]) -> list[str]:
    """Config names fastest first; equal times in name order."""
    return sorted(times, key=lambda name: (times[name], name))


@dataclass(frozen=True)
class Round:
    """A round a strategy asks for: `configs` timed with `spec`'s launches."""

    spec: RoundSpec
    configs: list[Config]
    compiles: bool = False  # not compiled yet: each is timed as soon as it has compiled, in chunks of `--jobs`
    first: bool = False  # the size fails when every config of this round fails to compile
    sample: bool = False  # stops at refine's round 0 share of the time budget (tune_gemm.search.budget)
    closing: bool = False  # times the fastest timed so far again because the budget cut the search short


@dataclass
class Progress:
    """What a strategy sees when it chooses the next round."""

    rounds: list[RoundState]  # the checkpoint's rounds, what an earlier run timed included
    done: list[Round]  # the rounds this search has run, in order
    spent: bool  # the time budget of the rounds that choose finalists is spent
    config_of: Mapping[str, Config]  # every config of the search by name

    def configs(self, names: list[str]) -> list[Config]:
        return [self.config_of[name] for name in names]

    def stops_after(self, spec: RoundSpec) -> bool:
        """No round after this one: it was the last, the time budget is spent, or it was cut short."""
        return spec.final or self.spent or not self.rounds[spec.index].complete


class SearchStrategy(ABC):
    """One `--search`: the rounds it times (next_round) and the times its winner is picked from (picked_times)."""

    name: ClassVar[str]
    reports_rounds: ClassVar[bool] = True  # the run's log has a line of the rounds it timed

    def __init__(self, warmup: int, iters: int, plan: object | None = None):
        self.warmup, self.iters = warmup, iters
        # the strategy's tunables, which must match for a checkpoint to resume (tune_gemm.search.checkpoint)
        self.plan = plan if plan is not None else self.default_plan()

    def default_plan(self) -> object | None:
        """The tunables a strategy given none uses."""
        return None

    def next_round(self, configs: list[Config], progress: Progress) -> Round | None:
        """The round after `progress.done` over the search's `configs` (in visiting order), or None: done."""
        if progress.done and progress.done[-1].spec.final:
            return None
        return self.after(configs, progress)

    @abstractmethod
    def after(self, configs: list[Config], progress: Progress) -> Round | None:
        """The next round while the last one done (if any) was not final."""

    @abstractmethod
    def picked_times(self, rounds: list[dict[str, float]]) -> dict[str, float]:
        """The times of the checkpoint's `rounds` the winner is picked from, when no closing round timed any."""

    def stage(self, spec: RoundSpec) -> str:
        """The progress bar's name for timing round `spec`."""
        return f"time round {spec.index}"

    def closing(self, progress: Progress, finalists: list[str]) -> Round | None:
        """The round that closes a search the time budget cut before its final round: `finalists` (the fastest
        configs timed, compiled already) timed side by side as the final round would time them; None when there
        are none."""
        if not finalists:
            return None
        spec = RoundSpec(progress.done[-1].spec.index + 1, self.warmup, self.iters, final=True)
        return Round(spec, progress.configs(finalists), closing=True)
