"""A split size's final round (tune_gemm.run.chunks), and the size's outcome built from its chunks' outcomes.

Each chunk's search ranks its configs on its own worker, at its own moment: times from different GPUs, or taken
minutes apart on one, do not compare exactly. So the best few configs of every chunk are timed again side by
side, in one child on one worker, with the run's timer and launches (as halving's final round), and the fastest
of them is the size's winner; with --compare that winner alone is checked against float64. The coordinator
gathers the chunks' outcomes (SplitSize), hands out the final round, and merges the two.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tune_gemm.compile.pool import CompileOutcome, compile_all
from tune_gemm.core.config import Config
from tune_gemm.core.device import DeviceProfile
from tune_gemm.core.problem import GemmProblem
from tune_gemm.generate import write_module
from tune_gemm.measure.runner import ChildOutcome
from tune_gemm.run.pipeline import (
    SizeFailed,
    SizeOutcome,
    clean_up,
    compare_winner,
    profile_configs,
    scratch_dir,
)
from tune_gemm.search.checkpoint import discard
from tune_gemm.search.progress import Stages
from tune_gemm.search.search import SearchOutcome
from tune_gemm.search.settings import TuneSettings

FINALISTS_PER_CHUNK = 4  # a chunk's winner and the runners-up close enough to it that timing again may reorder them


def final_round(problem: GemmProblem, names: list[str], device: DeviceProfile, settings: TuneSettings,
                compare: bool, log: Callable[[str], object], stages: Stages) -> SizeOutcome:
    """In a worker: time the configs `names` side by side (their chunks compiled them already, so compiling is
    mostly loading Triton's cache); a SizeOutcome over these configs alone. SizeFailed when none has a time."""
    scratch = scratch_dir(settings, problem, "final")
    config_of = {name: Config.parse(name) for name in names}  # a Work item names its finalists (tune_gemm.run.chunks)
    module = write_module(problem, list(config_of.values()), scratch)
    try:
        compiled = _compile(module, names, settings, stages)
        ready = [name for name in names if name in set(compiled.compiled)]
        if not ready:
            raise SizeFailed(f"none of the {len(names)} finalists compiles in the final round")
        stages.start("time", len(ready))
        profiled = profile_configs(module, ready, scratch, settings, device, log)
        stages.advance("time", len(profiled.timings))
        stages.finish("time", f"{len(profiled.outcome.failed)} failed, {settings.iters} launches each")
        table = profiled.timings
        if table.empty:
            raise SizeFailed(f"none of the {len(ready)} finalists produced a timing in the final round")
        winner = config_of[table.loc[0, "config"]]
        # timed as profile_configs times: as the round that picks a winner (flushed by default)
        searched = SearchOutcome(compiled, profiled.outcome, table, profiled.matmul_time_us, rounds=[],
                                 timed=len(table), flushed=settings.flushes(final=True), winner=winner)
        outcome = SizeOutcome(problem=problem, candidates=len(names), space_size=len(names), compiled=compiled,
                              profiled=profiled.outcome, timings=table, winner=winner,
                              winner_time_us=float(table.loc[0, "time_us"]), matmul_time_us=profiled.matmul_time_us,
                              seconds={"compile": compiled.seconds, **profiled.seconds}, searched=searched)
        if compare:
            compare_winner(outcome, module, scratch, settings, stages)
        return outcome
    finally:
        clean_up(settings, module, scratch)


def _compile(module: Path, names: list[str], settings: TuneSettings, stages: Stages) -> CompileOutcome:
    if not settings.precompile:  # --no_warmup: each config compiles on its first launch in the child
        return CompileOutcome(compiled=list(names))
    stages.start("compile", len(names))
    compiled = compile_all(module, names, settings.num_threads, settings.interpret,
                           on_done=lambda _: stages.advance("compile"), pool=settings.compile_pool)
    stages.finish("compile", f"{len(compiled.failed)} failed")
    return compiled


@dataclass
class SplitSize:
    """The chunks of one split size as they come back to the coordinator."""

    count: int  # chunks the size was split into
    outcomes: list[SizeOutcome] = field(default_factory=list)  # of the chunks that produced one
    errors: list[str] = field(default_factory=list)  # why each other chunk failed

    def add(self, outcome: SizeOutcome | None, error: str | None) -> None:
        if outcome is None:
            self.errors.append(error or "no outcome")
        else:
            self.outcomes.append(outcome)

    @property
    def complete(self) -> bool:
        return len(self.outcomes) + len(self.errors) == self.count

    def finalists(self, per_chunk: int = FINALISTS_PER_CHUNK) -> tuple[str, ...]:
        """The best `per_chunk` configs of every chunk (their tables are fastest first)."""
        return tuple(name for outcome in self.outcomes for name in outcome.timings["config"].head(per_chunk))

    def merged(self, final: SizeOutcome) -> SizeOutcome:
        """The size's outcome: the final round's table, winner and check, with what the chunks compiled, timed,
        failed and spent. Seconds are summed over the chunks: worker time, not wall time (they ran at once)."""
        chunks = self.outcomes
        compiled, seconds = CompileOutcome(), Counter()
        for outcome in chunks:
            compiled.absorb(outcome.compiled)
            seconds.update(outcome.seconds)
        profiled = ChildOutcome(failed=_union(o.profiled.failed for o in [*chunks, final]),
                                restarts=sum(o.profiled.restarts for o in [*chunks, final]))
        seconds["final round"] = sum(value for stage, value in final.seconds.items() if stage != "compare")
        if "compare" in final.seconds:
            seconds["compare"] = final.seconds["compare"]
        notes = [o.searched.note for o in chunks if o.searched and o.searched.note]
        notes += [f"a chunk failed ({error}): the winner is picked from the other chunks" for error in self.errors]
        # the rounds of every chunk's search, chunk after chunk; the final round's times are the table
        searched = SearchOutcome(compiled, profiled, final.timings, final.matmul_time_us,
                                 rounds=[r for o in chunks if o.searched for r in o.searched.rounds],
                                 timed=sum(o.searched.timed for o in chunks if o.searched), seconds=dict(seconds),
                                 note="; ".join(notes) or None, flushed=bool(final.searched and final.searched.flushed),
                                 winner=final.winner)
        return SizeOutcome(problem=final.problem, candidates=sum(o.candidates for o in chunks),
                           space_size=chunks[0].space_size, compiled=compiled, profiled=profiled,
                           timings=final.timings, winner=final.winner, winner_time_us=final.winner_time_us,
                           matmul_time_us=final.matmul_time_us, seconds=dict(seconds),
                           check_error=final.check_error, searched=searched)

    def discard_checkpoints(self) -> None:
        """Once the size is recorded: the chunks' times are no longer needed to resume it."""
        for outcome in self.outcomes:
            discard(outcome.checkpoint)


def _union(mappings: Iterable[dict]) -> dict:
    return {key: value for mapping in mappings for key, value in mapping.items()}
