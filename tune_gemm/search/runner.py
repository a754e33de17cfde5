"""The round runner: times one round a strategy asks for (tune_gemm.search.strategy.Round) and says how it ended.

A round of configs not compiled yet times each as soon as it has compiled (a compile stream feeds the timing child,
in chunks of `--jobs`); a round over configs an earlier round compiled is one child's job. Rounds after the first
load their configs from part modules of their own (regroup). Each round stops at its share of the time budget
(tune_gemm.search.budget) and is kept in the checkpoint as its times come in, but for the closing round, whose state is
the runner's own.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from tune_gemm.compile.pool import CompileOutcome
from tune_gemm.core.config import Config
from tune_gemm.core.device import DeviceProfile
from tune_gemm.generate.parts import write_parts
from tune_gemm.measure.job import ChildJob
from tune_gemm.measure.stream import ReadyWriter
from tune_gemm.search.budget import Budget, finalist_seconds, sample_seconds
from tune_gemm.search.checkpoint import Checkpoint, RoundState, discard
from tune_gemm.search.progress import Stages
from tune_gemm.search.strategy import Round, RoundSpec, SearchStrategy
from tune_gemm.search.timer import CompileStream, RoundTimer, SearchFailed, timing_job

if TYPE_CHECKING:
    from tune_gemm.core.problem import GemmProblem
    from tune_gemm.search.settings import TuneSettings


@dataclass
class RoundRecord:
    index: int
    warmup: int
    iters: int
    configs: int  # configs with a time in this round (resumed ones included)
    final: bool  # the round whose times pick the winner, when it times any
    planned: int = 0  # configs the round set out to time
    closing: bool = False  # the closing round of a search a spent time budget cut short
    cut_at: float | None = None  # seconds of the time budget at which the round was stopped; None: it ended whole


def chunks(names: list[str], count: int) -> list[list[str]]:
    """`names` in `count` contiguous chunks of nearly equal size (fewer when there are fewer names)."""
    size = math.ceil(len(names) / max(1, count)) if names else 1
    return [names[start:start + size] for start in range(0, len(names), size)]


class RoundRunner:
    """Runs the rounds of one size's search over `configs` (of `module`), keeping what they compiled, failed and
    spent for the search's outcome."""

    def __init__(self, module: Path, configs: list[Config], scratch: Path, settings: TuneSettings,
                 device: DeviceProfile, checkpoint: Checkpoint, stages: Stages, log: Callable[[str], object],
                 parts: Mapping[str, Path] | None, problem: GemmProblem | None, strategy: SearchStrategy):
        self.module, self.scratch, self.settings, self.parts, self.problem = module, scratch, settings, parts, problem
        self.device, self.checkpoint, self.stages, self.log, self.strategy = device, checkpoint, stages, log, strategy
        self.name_of = {config: str(config) for config in configs}  # the names jobs, files and the checkpoint hold
        budget = settings.time_budget
        # the rounds that choose finalists, and the round that picks the winner (tune_gemm.search.budget)
        self.budget = Budget(None if budget is None else finalist_seconds(budget), scratch / "stop")
        self.final_budget = Budget(budget, scratch / "stop_final", self.budget.started)
        self.round_budgets: dict[int, Budget] = {}  # rounds that stop before the finalist rounds' budget does
        self.closing: RoundState | None = None  # the closing round, when a spent budget made one
        self.compiled = CompileOutcome()
        self.failed: dict[str, str] = {}
        self.restarts, self.seconds = 0, {"compile": 0.0, "profile": 0.0, "post-process": 0.0}

    @property
    def spent(self) -> bool:
        """Whether any of the search's budgets ran out."""
        return any(budget.spent for budget in (self.budget, self.final_budget, *self.round_budgets.values()))

    def run(self, round_: Round) -> RoundRecord:
        """Time `round_`; how it ended."""
        spec, names = round_.spec, [self.name_of[config] for config in round_.configs]
        if round_.closing:
            return self.closing_round(spec, round_.configs)
        if round_.sample:  # it leaves the rounds after it a reserve of the budget
            budget = self.settings.time_budget
            self.round_budgets[spec.index] = Budget(None if budget is None else sample_seconds(budget),
                                                    self.scratch / "stop_sample", self.budget.started)
        state = self.checkpoint.round(spec.index, spec.warmup, spec.iters)
        if round_.compiles:
            if spec.index:
                self.regroup(spec.index, round_.configs)
            self.compiling_round(spec, state, names)
            if round_.first and not state.times and set(names) <= set(self.checkpoint.compile_failed):
                reasons = pd.Series(list(self.checkpoint.compile_failed.values())).value_counts()
                discard(self.checkpoint.path)  # nothing to resume: a rerun tries again
                raise SearchFailed(f"all {len(names)} configs failed to compile; most often: {reasons.index[0]}")
        else:
            self.later_round(spec, state, round_.configs)
        return self.record(spec, names, state)

    def budget_of(self, spec: RoundSpec) -> Budget:
        if spec.final:
            return self.final_budget
        return self.round_budgets.get(spec.index, self.budget)

    def job(self, spec: RoundSpec, chunk: int, names: list[str], baseline: bool, ready: Path | None,
            tag: str = "") -> ChildJob:
        name = f"{tag or 'round'}{spec.index}"
        return timing_job(self.module, self.settings, self.device, self.scratch / f"{name}.csv",
                          self.scratch / f"progress{spec.index}_{chunk}{tag}.txt", names, spec.warmup, spec.iters,
                          baseline, spec.final, self.parts, ready_path=str(ready or ""),
                          stop_path=str(self.budget_of(spec).stop_path))

    def timer(self, spec: RoundSpec, state: RoundState, todo: list[str], stage: str = "") -> RoundTimer:
        stage = stage or self.strategy.stage(spec)
        self.stages.start(stage, len(todo))
        return RoundTimer(state, self.checkpoint, self.stages, stage, self.budget_of(spec), self.settings.statistic)

    def finish(self, timer: RoundTimer, spec: RoundSpec, state: RoundState) -> None:
        self.failed.update(timer.failed)
        self.restarts += timer.restarts
        self.seconds["profile"] += timer.seconds
        self.seconds["post-process"] += timer.post_seconds
        state.complete = not timer.budget.spent
        self.checkpoint.save()
        spent = "; time budget spent" if timer.budget.spent else ""
        self.stages.finish(timer.stage, f"{len(timer.failed)} failed{spent}"
                           f"{'' if spec.final else f', {spec.iters} launches each'}")

    def compiling_round(self, spec: RoundSpec, state: RoundState, names: list[str]) -> None:
        """A round over configs not compiled yet: each is timed as soon as it has compiled."""
        todo = [n for n in names if n not in state.finished() and n not in self.checkpoint.compile_failed]
        if todo:
            self.stream_round(spec, state, todo)
        else:  # an earlier run timed it all
            state.complete = True

    def stream_round(self, spec: RoundSpec, state: RoundState, todo: list[str]) -> None:
        timer = self.timer(spec, state, todo)
        ready, stream = None, None
        if self.settings.precompile:
            ready = self.scratch / f"ready{spec.index}.txt"
            stage = "compile" if spec.index == 0 else f"compile round {spec.index}"
            self.stages.start(stage, len(todo))
            stream = CompileStream(self.module, todo, self.settings, ReadyWriter(ready), self.stages, self.parts,
                                   stage)
            timer.budget.on_spent.append(stream.cancel.set)
            timer.compile_failed = stream.outcome.failed
        else:  # --no_warmup: no compile stage, each config compiles on its first launch in the child
            self.compiled.compiled += todo
        try:
            for number, chunk in enumerate(chunks(todo, self.settings.jobs)):
                if timer.budget.spent:
                    break
                timer.run(self.job(spec, number, chunk, number == 0 and state.matmul_us is None, ready),
                          self.scratch, self.settings, self.log)
        except BaseException:  # the size fails or the run is interrupted: no compiling on for nothing
            if stream is not None:
                stream.cancel.set()
            raise
        if stream is not None:
            compiled = stream.join()
            self.compiled.absorb(compiled)
            self.seconds["compile"] = self.compiled.seconds
            self.checkpoint.compile_failed.update(compiled.failed)
        self.finish(timer, spec, state)

    def later_round(self, spec: RoundSpec, state: RoundState, configs: list[Config]) -> None:
        """A round over configs an earlier round compiled and timed."""
        finished = state.finished()
        todo = [config for config in configs if self.name_of[config] not in finished]
        if not todo:
            state.complete = True
            return
        names = [self.name_of[config] for config in todo]
        self.regroup(spec.index, todo)
        timer = self.timer(spec, state, names)
        timer.run(self.job(spec, 0, names, state.matmul_us is None, None), self.scratch, self.settings, self.log)
        self.finish(timer, spec, state)

    def closing_round(self, spec: RoundSpec, configs: list[Config]) -> RoundRecord:
        """The round a spent budget closes the search with: `configs` (the fastest timed, compiled already) timed
        side by side as the final round would time them. Its state is the runner's own, not the checkpoint's."""
        names = [self.name_of[config] for config in configs]
        self.closing = RoundState(spec.warmup, spec.iters)
        self.regroup(spec.index, configs)
        timer = self.timer(spec, self.closing, names, stage=f"time closing round {spec.index}")
        timer.run(self.job(spec, 0, names, True, None, tag="closing"), self.scratch, self.settings, self.log)
        self.finish(timer, spec, self.closing)
        return self.record(spec, names, self.closing, closing=True)

    def regroup(self, index: int, configs: list[Config]) -> None:
        """Round `index`'s configs written into part modules of their own (tune_gemm.generate.parts), where the size has
        parts. A round after round 0 takes configs from all over the size's parts (slices of its visiting order,
        tune_gemm.search.order), and each process compiling or timing them loads every part they come from, a fraction
        of a second for each part of 256 kernels: on the H200 a closing round of 8 configs took 4-7 s, and a round 1
        of 196 variants of 16x4096x4096 timed one config in 8.6 s. A config compiled already is found in Triton's
        cache from its new part too (the key does not depend on the file, tune_gemm.generate.parts)."""
        if self.parts is None or self.problem is None or not configs:
            return
        folder = self.scratch / f"round{index}_parts"
        folder.mkdir(exist_ok=True)
        self.parts = {**self.parts, **write_parts(self.problem, configs, folder)}

    def record(self, spec: RoundSpec, names: list[str], state: RoundState, closing: bool = False) -> RoundRecord:
        """Round `spec` as it ended in `state`, having set out to time `names`."""
        return RoundRecord(spec.index, spec.warmup, spec.iters, len(state.times), spec.final, planned=len(names),
                           closing=closing, cut_at=None if state.complete else self.budget_of(spec).seconds)
