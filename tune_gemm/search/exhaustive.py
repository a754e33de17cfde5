"""`--search exhaustive`: every config in one round, each timed as soon as it has compiled, with the run's warm-up and
launches; that round picks the winner."""

from __future__ import annotations

from tune_gemm.core.config import Config
from tune_gemm.search.halving import final_times
from tune_gemm.search.strategy import Progress, Round, RoundSpec, SearchStrategy


class ExhaustiveSearch(SearchStrategy):
    name = "exhaustive"
    reports_rounds = False  # one round: the time stage's line says it all

    def after(self, configs: list[Config], progress: Progress) -> Round | None:
        return Round(RoundSpec(0, self.warmup, self.iters, final=True), configs, compiles=True, first=True)

    def picked_times(self, rounds: list[dict[str, float]]) -> dict[str, float]:
        return final_times(rounds)

    def stage(self, spec: RoundSpec) -> str:
        return "time"
