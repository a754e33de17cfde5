"""The search over one size's configs: compile them, time them in child processes, and pick the fastest.

Compiling and timing overlap: a compile stream (tune_gemm.compile.pool, in a thread of the tuner) reports each
config as it compiles, and the timing child times configs in that order as they become ready
(tune_gemm.measure.stream), so the GPU works while the CPU compiles. `--jobs N` splits the configs into N
chunks, each a child's job (ChildJob) timed as soon as its configs have compiled, one after another (by the
same child while each runs clean, tune_gemm.measure.standby).

The strategies (tune_gemm.search.strategy) choose each round's configs and launches, one module each, registered in
SEARCHES by their `--search` name; tune_gemm.search.runner runs the rounds they ask for.
`--search exhaustive` times every config with the run's warm-up and launches. `--search halving` runs
the rounds of tune_gemm.search.halving: a short first round over every config, longer rounds over the best
fraction, the final one with the run's launches. `--search refine` runs the rounds of tune_gemm.search.refine: one
config per kernel shape, then the other configs of the best shapes (both compiled as they are timed), then
the fastest few side by side. Every round is a checkpoint (tune_gemm.search.checkpoint): timed configs are written
there as they come in, so a rerun after an interruption times only the rest.
`--time_budget S` (a size's seconds, counted from when the run's helper processes are ready,
tune_gemm.run.start_up): the rounds that choose finalists stop once all but a reserve of S is spent (CLOSING_SHARE
of it, at most CLOSING_MAX_SECONDS, tune_gemm.search.budget), and a closing round then times the fastest configs timed so far again, side by side, as the
final round would have (refine's `final`, halving's `min_keep`: 8 by default; the run's launches); the round that
picks the winner, closing or last, stops at S. So a cut search picks as a whole one does, on the final round's
timing: back-to-back times can rank configs otherwise (at 1024x5120x4096 the flushed final round's pick ran 9% faster
than the back-to-back one, H100), though at three sizes cut by a 40-second budget
on an H200 the two picks ran within 0.9% of each other.
The closing round is not kept in the checkpoint: a rerun resumes the cut rounds, whose finalists may differ.
Refine's round 0 stops earlier, once all but a second reserve is spent as well (REFINING_SHARE of S, at most
REFINING_MAX_SECONDS): round 1 then refines the best shapes round 0 sampled, their nearest variants first, until the
finalist rounds' share is spent. A round 0 that ends before its reserve leaves round 1 the time it has, as without
a budget. At sizes whose best config is not a representative (128x14336x4096 on an H200: five stages where the
representative has four), a budget that cut round 0 never timed it.

The round that picks the winner times each launch right after an L2 flush by default (`--flush`,
TuneSettings.flushes); the rounds before it time launches back to back, but for a size bound by memory
(`--flush auto`, tune_gemm.measure.run_knobs.rounds_flushed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from tune_gemm.compile.pool import CompileOutcome
from tune_gemm.core.config import Config
from tune_gemm.core.device import DeviceProfile
from tune_gemm.measure.runner import ChildOutcome
from tune_gemm.search.budget import finalist_seconds, sample_seconds
from tune_gemm.search.checkpoint import Checkpoint, discard, fingerprint
from tune_gemm.search.exhaustive import ExhaustiveSearch
from tune_gemm.search.halving import HalvingSearch
from tune_gemm.search.progress import Stages
from tune_gemm.search.refine import RefineSearch
from tune_gemm.search.runner import RoundRecord, RoundRunner
from tune_gemm.search.strategy import Progress, Round, SearchStrategy, ranked
from tune_gemm.search.timer import SearchFailed, part_paths, timing_job

if TYPE_CHECKING:
    from tune_gemm.core.problem import GemmProblem
    from tune_gemm.search.settings import TuneSettings

__all__ = ["SEARCHES", "RoundRecord", "SearchFailed", "SearchOutcome", "checkpoint_key", "finalist_seconds",
           "part_paths", "run_search", "runtime_failures", "sample_seconds", "strategy_for", "timing_job"]

# `--search` name -> its strategy (tune_gemm.search.strategy)
SEARCHES: dict[str, type[SearchStrategy]] = {
    strategy.name: strategy for strategy in (ExhaustiveSearch, HalvingSearch, RefineSearch)}
# Settings that do not change what a time means: a checkpoint written under other values resumes.
_NOT_IN_KEY = ("keep", "workdir", "config_timeout", "verbose", "num_threads", "jobs", "compile_pool",
               "time_budget", "precompile")


@dataclass
class SearchOutcome:
    compiled: CompileOutcome  # what this run compiled (configs timed by an earlier run are not)
    profiled: ChildOutcome  # runtime failures of every round
    timings: pd.DataFrame  # config, time_us, instances: the winner's round, fastest first
    matmul_time_us: float | None
    rounds: list[RoundRecord]
    timed: int  # configs timed in any round, by this run or the one it resumed
    seconds: dict[str, float] = field(default_factory=dict)
    note: str | None = None  # what the time budget cut short, when it did
    flushed: bool = False  # the winner's round timed each launch right after an L2 flush
    winner: Config | None = None  # the config of the table's first row


def strategy_for(settings: TuneSettings) -> SearchStrategy:
    """The strategy of `settings.search`, timing with the run's warm-up and launches where it times in full."""
    if settings.search not in SEARCHES:
        raise ValueError(f"search must be one of {tuple(SEARCHES)}, got {settings.search!r}")
    return SEARCHES[settings.search](settings.warmup, settings.iters)


def checkpoint_key(problem: GemmProblem, device: DeviceProfile, settings: TuneSettings, module: Path) -> dict:
    """What must match for an earlier run's times to stand beside this run's (see tune_gemm.search.checkpoint)."""
    kept = {f.name: repr(getattr(settings, f.name)) for f in fields(settings) if f.name not in _NOT_IN_KEY}
    plan = strategy_for(settings).plan if settings.search in SEARCHES else None  # run_search refuses another
    return {"problem": repr(problem), "device": device.name, "settings": kept, "plan": repr(plan),
            "module": fingerprint(Path(module).read_text())}


def run_search(module: Path, configs: list[Config], scratch: Path, settings: TuneSettings, device: DeviceProfile,
               checkpoint: Checkpoint, stages: Stages, log: Callable[[str], object] = print,
               parts: Mapping[str, Path] | None = None, problem: GemmProblem | None = None) -> SearchOutcome:
    """Compile and time `configs` (of `module`, in visiting order, each loaded from its part in `parts` when there is
    one, tune_gemm.generate.parts) as `settings.search` says; see the module docstring. With `problem` (the size
    `module` is generated for) the rounds after the first load their configs from parts of their own."""
    strategy = strategy_for(settings)
    runner = RoundRunner(module, configs, scratch, settings, device, checkpoint, stages, log, parts, problem,
                         strategy)
    if checkpoint.resumed:
        log(f"resuming {checkpoint.path}: {checkpoint.timed()} configs timed before")
    config_of = {name: config for config, name in runner.name_of.items()}
    done: list[Round] = []
    records: list[RoundRecord] = []
    while (next_round := strategy.next_round(configs, Progress(checkpoint.rounds, done, runner.budget.spent,
                                                                config_of))) is not None:
        records.append(runner.run(next_round))
        done.append(next_round)
    return _outcome(runner, strategy, records, config_of)


def _outcome(runner: RoundRunner, strategy: SearchStrategy, records: list[RoundRecord],
             config_of: Mapping[str, Config]) -> SearchOutcome:
    settings, checkpoint = runner.settings, runner.checkpoint
    rounds = checkpoint.rounds
    closing = runner.closing.times if runner.closing else {}
    times = closing or strategy.picked_times([state.times for state in rounds])
    spent = runner.spent
    if not times and spent:
        raise SearchFailed(f"time budget of {settings.time_budget:g} s spent before any config was timed"
                           + runtime_failures(runner.failed))
    if not times:
        discard(checkpoint.path)  # every config failed: nothing to resume, a rerun tries again
        raise SearchFailed("no config produced a timing")
    measured = rounds + ([runner.closing] if runner.closing else [])
    instances = {}
    for state in measured:  # each time's launch count, from the round that measured it
        instances.update({n: state.instances.get(n, 0) for n, t in state.times.items() if times.get(n) == t})
    order = ranked(times)
    table = pd.DataFrame({"config": order, "time_us": [times[n] for n in order],
                          "instances": [instances.get(n, 0) for n in order]})
    matmul = next((s.matmul_us for s in reversed(measured) if s.matmul_us is not None), None)
    note = None
    if closing:
        ended = ", ".join(f"round {r.index} " + (f"stopped at {r.cut_at:g} s ({r.configs} of its {r.planned} "
                                                 f"configs timed)" if r.cut_at is not None
                                                 else f"timed all its {r.planned} configs")
                          for r in records[:-1] if r.planned)
        note = (f"time budget of {settings.time_budget:g} s spent: {ended}; {checkpoint.timed()} of "
                f"{len(config_of)} configs timed in all, winner picked from the {len(times)} fastest timed "
                f"again in a closing round")
    elif spent:
        timed_rounds = [str(i) for i, state in enumerate(rounds) if state.times]
        source = next((f"round {i}" for i, s in enumerate(rounds) if s.times is times),
                      ("round " if len(timed_rounds) == 1 else "rounds ") + " and ".join(timed_rounds))
        note = (f"time budget of {settings.time_budget:g} s spent: winner picked from the {len(times)} "
                f"configs timed in {source} ({checkpoint.timed()} of {len(config_of)} configs timed in all)")
    if strategy.reports_rounds:
        runner.log(f"{strategy.name}: " + ", ".join(
            f"{'closing ' if r.closing else ''}round {r.index} {r.configs} configs x {r.iters} launches"
            + (" after L2 flushes" if settings.flushes(r.final) else "") for r in records))
    # the times picked are the last round's that timed anything (refine_times, final_times)
    picked = next(record for record in reversed(records) if record.configs)
    return SearchOutcome(runner.compiled, ChildOutcome(failed=runner.failed, restarts=runner.restarts), table, matmul,
                         records, checkpoint.timed(), runner.seconds, note, settings.flushes(picked.final),
                         config_of[order[0]])


def runtime_failures(failed: Mapping[str, str], shown: int = 3) -> str:
    """'; N configs failed at run time: name (reason), ...' for a message, or "" when none did."""
    if not failed:
        return ""
    named = ", ".join(f"{name} ({reason})" for name, reason in list(failed.items())[:shown])
    more = f", and {len(failed) - shown} more" if len(failed) > shown else ""
    return f"; {len(failed)} configs failed at run time: {named}{more}"
