"""The search over one size's configs: compile them, time them in child processes, and pick the fastest.

Compiling and timing overlap: a compile stream (tune_gemm.compile.pool, in a thread of the tuner) reports each
config as it compiles, and the timing child times configs in that order as they become ready
(tune_gemm.measure.stream), so the GPU works while the CPU compiles. `--jobs N` splits the configs into N
chunks, each a child's job (ChildJob) timed as soon as its configs have compiled, one after another (by the
same child while each runs clean, tune_gemm.measure.standby).

`--search exhaustive` times every config with the run's warm-up and launches. `--search halving` runs
the rounds of tune_gemm.search.halving: a short first round over every config, longer rounds over the best
fraction, the final one with the run's launches. `--search refine` runs the rounds of tune_gemm.search.refine: one
config per kernel shape, then the other configs of the best shapes (both compiled as they are timed), then
the fastest few side by side. Every round is a checkpoint (tune_gemm.search.checkpoint): timed configs are written
there as they come in, so a rerun after an interruption times only the rest.
`--time_budget S` (a size's seconds, counted from when the run's helper processes are ready, tune_gemm.run.start_up): the
rounds that choose finalists stop once all but a reserve of S is spent (CLOSING_SHARE of it, at most
CLOSING_MAX_SECONDS), and a closing round then times the fastest configs timed so far again, side by side, as the
final round would have (refine's `final`, halving's `min_keep`: 8 by default; the run's launches); the round that
picks the winner, closing or last, stops at S. So a cut search picks as a whole one does, on the final round's
timing: back-to-back times can rank configs otherwise (at 1024x5120x4096 the flushed final round's pick ran 9% faster
than the back-to-back one, H100, BENCHMARKS.md, twenty-eighth run), though at three sizes cut by a 40-second budget
on an H200 the two picks ran within 0.9% of each other (fortieth run).
The closing round is not kept in the checkpoint: a rerun resumes the cut rounds, whose finalists may differ.
Refine's round 0 stops earlier, once all but a second reserve is spent as well (REFINING_SHARE of S, at most
REFINING_MAX_SECONDS): round 1 then refines the best shapes round 0 sampled, their nearest variants first, until the
finalist rounds' share is spent. A round 0 that ends before its reserve leaves round 1 the time it has, as without
a budget. At sizes whose best config is not a representative (128x14336x4096 on an H200: five stages where the
representative has four, BENCHMARKS.md, forty-first run), a budget that cut round 0 never timed it.

The round that picks the winner times each launch right after an L2 flush by default (`--flush`,
TuneSettings.flushes); the rounds before it time launches back to back, but for a size bound by memory
(`--flush auto`, tune_gemm.measure.run_knobs.rounds_flushed).
"""

from __future__ import annotations

import io
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from tune_gemm.compile.pool import CompileOutcome, add_result, compile_stream
from tune_gemm.core.config import Config
from tune_gemm.core.device import DeviceProfile
from tune_gemm.generate.parts import write_parts
from tune_gemm.measure.job import ChildJob
from tune_gemm.measure.postprocess import summarize
from tune_gemm.measure.runner import ChildFailed, ChildOutcome, run_child
from tune_gemm.measure.schema import BASELINE_NAME, COLUMNS
from tune_gemm.measure.stream import ReadyWriter, request_stop
from tune_gemm.search.checkpoint import Checkpoint, RoundState, discard, fingerprint
from tune_gemm.search.halving import (
    HalvingPlan,
    RoundSpec,
    final_times,
    keep,
    ranked,
    round_spec,
)
from tune_gemm.search.progress import Stages
from tune_gemm.search.refine import (
    RefinePlan,
    finalists,
    refine_times,
    refined,
    representatives,
    times_whole_space,
)

if TYPE_CHECKING:
    from tune_gemm.core.problem import GemmProblem
    from tune_gemm.search.settings import TuneSettings

SEARCHES = ("exhaustive", "halving", "refine")
HALVING = HalvingPlan()
REFINE = RefinePlan()
# The closing round's reserve of a time budget: it times `final` (8) compiled configs, in 0.2-0.5 s from the end of
# round 1 in round 1's own child, reused (H200, BENCHMARKS.md, forty-fifth run; 2.0-2.7 s in a child warm in standby,
# forty-fourth, up to 11.6 s where the child was still starting). The rest covers the cut round's overrun: its child
# stops between batches (at most CUPTI_BATCH configs, about 1.6 s at 20 configs/s) and then times torch.matmul. A
# child that overruns more, and is killed STOP_GRACE_SECONDS after the stop, leaves the closing round to a child in
# standby and less time than it needs. A long budget needs no more reserve than a short one.
CLOSING_SHARE = 0.2
CLOSING_MAX_SECONDS = 3.0
# Refine's round 1 reserve when a budget cuts round 0: the variants of the best shapes sampled, nearest first. 6 s of
# a 40-second budget cost round 0 about a fifth of its sample; round 1 timed 2-47 variants in them, and the picks of
# six sizes ran 2.8% faster in geometric mean (H200, BENCHMARKS.md, forty-third run).
REFINING_SHARE = 0.15
REFINING_MAX_SECONDS = 10.0
CUPTI_BATCH = 32  # configs per CUPTI profiler session: its start-up and record processing paid once per batch
_SAVE_SECONDS = 0.5  # checkpoint at most this often while a child runs (and always when it ends)
_SAVE_SHARE = 0.2  # ... and less often when reading the round's timings takes longer: at most this share of a core
# Settings that do not change what a time means: a checkpoint written under other values resumes.
_NOT_IN_KEY = ("keep", "workdir", "config_timeout", "verbose", "num_threads", "jobs", "compile_pool",
               "time_budget", "precompile")


class SearchFailed(Exception):
    """No config of this size can be timed (all failed to compile, or the child cannot start)."""


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


def checkpoint_key(problem: GemmProblem, device: DeviceProfile, settings: TuneSettings, module: Path) -> dict:
    """What must match for an earlier run's times to stand beside this run's (see tune_gemm.search.checkpoint)."""
    kept = {f.name: repr(getattr(settings, f.name)) for f in fields(settings) if f.name not in _NOT_IN_KEY}
    return {"problem": repr(problem), "device": device.name, "settings": kept,
            "plan": repr({"halving": HALVING, "refine": REFINE}.get(settings.search)),
            "module": fingerprint(Path(module).read_text())}


def timing_job(module: Path, settings: TuneSettings, device: DeviceProfile, csv_path: Path, progress_path: Path,
               names: list[str], warmup: int, iters: int, baseline: bool, final: bool,
               parts: Mapping[str, Path] | None = None, **streaming) -> ChildJob:
    """A child's job timing `names` (and torch.matmul when `baseline`) with the run's timer and inputs, after an L2
    flush where the run flushes the rounds it belongs to (`final`: the round whose times pick the winner); each
    config is loaded from its part in `parts` when there is one (tune_gemm.generate.parts)."""
    external = settings.profiler.external
    return ChildJob(module_path=str(module), timer=settings.profiler.timer, csv_path=str(csv_path),
                    progress_path=str(progress_path), time_configs=names, baseline=baseline, warmup=warmup,
                    iters=iters, markers=external is not None, l2_bytes=0 if settings.interpret else device.l2_bytes,
                    rotating_bytes=settings.rotating_bytes, init_type=settings.init_type,
                    cache_flush=settings.flushes(final), env=settings.child_env,
                    batch=CUPTI_BATCH if settings.profiler.timer == "cupti" else 1, parts=part_paths(parts, names),
                    **streaming)


def part_paths(parts: Mapping[str, Path] | None, names: list[str]) -> dict[str, str]:
    """The parts of `names` alone, as a ChildJob holds them (a job's JSON need not list the whole space)."""
    return {name: str(parts[name]) for name in names if name in (parts or {})}


def chunks(names: list[str], count: int) -> list[list[str]]:
    """`names` in `count` contiguous chunks of nearly equal size (fewer when there are fewer names)."""
    size = math.ceil(len(names) / max(1, count)) if names else 1
    return [names[start:start + size] for start in range(0, len(names), size)]


def finalist_seconds(budget: float) -> float:
    """The share of a size's time budget the rounds that choose finalists may spend: all but the closing round's
    reserve."""
    return budget - min(CLOSING_SHARE * budget, CLOSING_MAX_SECONDS)


def sample_seconds(budget: float) -> float:
    """The share of a size's time budget refine's round 0 may spend: the finalist rounds' share but round 1's
    reserve."""
    return finalist_seconds(budget) - min(REFINING_SHARE * budget, REFINING_MAX_SECONDS)


class _Budget:
    """Seconds since `started` that the rounds it watches may spend: once spent, their children are told to stop
    (through `stop_path`) and their compile stream is cancelled."""

    def __init__(self, seconds: float | None, stop_path: Path, started: float | None = None):
        self.seconds, self.stop_path = seconds, stop_path
        self.started = time.perf_counter() if started is None else started
        self.spent = False
        self.on_spent: list[Callable[[], None]] = []

    def check(self) -> None:
        if self.spent or self.seconds is None or time.perf_counter() - self.started < self.seconds:
            return
        self.spent = True
        request_stop(self.stop_path)
        for action in self.on_spent:
            action()


class _CompileStream:
    """Compiles in a thread of the tuner, writing each result to the ready file the timing child reads."""

    def __init__(self, module: Path, names: list[str], settings: TuneSettings, ready: ReadyWriter, stages: Stages,
                 parts: Mapping[str, Path] | None, stage: str):
        self.outcome, self.error = CompileOutcome(), None
        self.cancel = threading.Event()
        self._args = (module, names, settings, ready, stages, parts, stage)
        self._thread = threading.Thread(target=self._run, name="compile stream", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        module, names, settings, ready, stages, parts, stage = self._args
        started = time.perf_counter()
        results = compile_stream(module, names, settings.num_threads, settings.interpret, settings.compile_pool, parts)
        try:
            for result in results:
                add_result(self.outcome, result)
                name, reason, _ = result
                if reason is None:
                    ready.ready(name)
                else:
                    ready.failed(name)
                stages.advance(stage)
                if self.cancel.is_set():
                    break
        except Exception as error:  # reported by the search once the stream is joined
            self.error = error
        finally:
            results.close()  # cancelled early: no more configs handed to the workers
            self.outcome.seconds = time.perf_counter() - started
            ready.end()
            stages.finish(stage, f"{len(self.outcome.failed)} failed")

    def join(self) -> CompileOutcome:
        self._thread.join()
        if self.error is not None:
            raise SearchFailed(f"compile stage failed: {type(self.error).__name__}: {self.error}")
        return self.outcome


def _complete_rows(path: Path) -> pd.DataFrame:
    """The timing CSV's complete lines (a child may be appending the next one)."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        data = b""
    data = data[: data.rfind(b"\n") + 1]
    if not data:
        return pd.DataFrame(columns=list(COLUMNS))
    return pd.read_csv(io.BytesIO(data))


class _RoundTimer:
    """Runs one round's children, keeping its RoundState, the progress bar and the checkpoint up to date
    while they run (the runner calls it every few milliseconds), and watching the time budget."""

    def __init__(self, state: RoundState, checkpoint: Checkpoint, stages: Stages, stage: str, budget: _Budget,
                 statistic: str):
        self.state, self.checkpoint, self.stages, self.stage = state, checkpoint, stages, stage
        self.budget, self.statistic = budget, statistic
        self.compile_failed: dict[str, str] = {}  # the compile stream's failures, saved with the checkpoint
        self.failed: dict[str, str] = {}
        self.restarts, self.seconds, self.post_seconds = 0, 0.0, 0.0
        self._job: ChildJob | None = None
        self._offset, self._done, self._saved, self._interval = 0, set(), time.perf_counter(), _SAVE_SECONDS

    def run(self, job: ChildJob, scratch: Path, settings: TuneSettings, log) -> None:
        self._job, self._offset, self._done = job, 0, set()
        started = time.perf_counter()
        try:
            outcome = run_child(job, scratch, settings.interpret, settings.config_timeout,
                                log if settings.verbose else None, settings.profiler.external, watch=self.watch,
                                standby=settings.standby_children)
        except ChildFailed as failure:
            raise SearchFailed(str(failure)) from None
        self.seconds += time.perf_counter() - started
        self.failed.update(outcome.failed)
        self.restarts += outcome.restarts
        self._take_progress()  # what the child wrote after the last watch: it may exit between two
        self._absorb(set(job.time_configs) - set(outcome.failed), outcome.failed)

    def watch(self) -> None:
        self._take_progress()
        if self._done and time.perf_counter() - self._saved >= self._interval:
            self._absorb(self._done, {})
        self.budget.check()

    def _take_progress(self) -> None:
        """The child's new progress events into the progress bar and the round's state."""
        for event, name, reason in self._read_progress():
            if name == BASELINE_NAME:
                continue
            self.stages.advance(self.stage)
            if event == "done":
                self._done.add(name)
            else:
                self.state.failed[name] = reason

    def _read_progress(self) -> list[tuple[str, str, str]]:
        try:
            with open(self._job.progress_path, "rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except FileNotFoundError:
            return []
        data = data[: data.rfind(b"\n") + 1]
        self._offset += len(data)
        events = []
        for line in data.decode(errors="replace").splitlines():
            event, _, rest = line.partition(" ")
            name, _, reason = rest.partition(" ")
            if event in ("done", "fail"):
                events.append((event, name, reason))
        return events

    def _absorb(self, names: set[str], failed: dict[str, str]) -> None:
        """Times of `names` (those with rows) and the failures into the round's state, then the checkpoint."""
        started = time.perf_counter()
        table = summarize(_complete_rows(Path(self._job.csv_path)), self._job.warmup, self.statistic)
        for row in table.itertuples():
            if row.config == BASELINE_NAME:
                self.state.matmul_us = float(row.time_us)
            elif row.config in names:
                self.state.times[row.config] = float(row.time_us)
                self.state.instances[row.config] = int(row.instances)
        self.state.failed.update(failed)
        self.checkpoint.compile_failed.update(dict(self.compile_failed))
        self.checkpoint.save()
        self._done -= names
        self._saved = time.perf_counter()
        self._interval = max(_SAVE_SECONDS, (self._saved - started) / _SAVE_SHARE)
        self.post_seconds += self._saved - started


class _Search:
    def __init__(self, module: Path, names: list[str], scratch: Path, settings: TuneSettings,
                 device: DeviceProfile, checkpoint: Checkpoint, stages: Stages, log, parts: Mapping[str, Path] | None,
                 problem: GemmProblem | None):
        self.module, self.names, self.scratch, self.settings, self.parts = module, names, scratch, settings, parts
        self.problem = problem
        self.device, self.checkpoint, self.stages, self.log = device, checkpoint, stages, log
        budget = settings.time_budget
        # the rounds that choose finalists, and the round that picks the winner (see the module docstring)
        self.budget = _Budget(None if budget is None else finalist_seconds(budget), scratch / "stop")
        self.final_budget = _Budget(budget, scratch / "stop_final", self.budget.started)
        self.round_budgets: dict[int, _Budget] = {}  # rounds that stop before the finalist rounds' budget does
        self.closing: RoundState | None = None  # the closing round, when a spent budget made one
        self.compiled = CompileOutcome()
        self.failed: dict[str, str] = {}
        self.restarts, self.seconds = 0, {"compile": 0.0, "profile": 0.0, "post-process": 0.0}

    def spec(self, index: int, field_size: int) -> RoundSpec:
        if self.settings.search == "exhaustive":
            return RoundSpec(index, self.settings.warmup, self.settings.iters, final=True)
        return round_spec(HALVING, index, field_size, self.settings.warmup, self.settings.iters)

    def budget_of(self, spec: RoundSpec) -> _Budget:
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

    def timer(self, spec: RoundSpec, state: RoundState, todo: list[str], stage: str = "") -> _RoundTimer:
        stage = stage or ("time" if self.settings.search == "exhaustive" else f"time round {spec.index}")
        self.stages.start(stage, len(todo))
        return _RoundTimer(state, self.checkpoint, self.stages, stage, self.budget_of(spec), self.settings.statistic)

    def finish(self, timer: _RoundTimer, spec: RoundSpec, state: RoundState) -> None:
        self.failed.update(timer.failed)
        self.restarts += timer.restarts
        self.seconds["profile"] += timer.seconds
        self.seconds["post-process"] += timer.post_seconds
        state.complete = not timer.budget.spent
        self.checkpoint.save()
        spent = "; time budget spent" if timer.budget.spent else ""
        self.stages.finish(timer.stage, f"{len(timer.failed)} failed{spent}"
                           f"{'' if spec.final else f', {spec.iters} launches each'}")

    def first_round(self, spec: RoundSpec, names: list[str]) -> None:
        """Round 0 over `names`, each timed as soon as it has compiled."""
        state = self.checkpoint.round(0, spec.warmup, spec.iters)
        self.compiling_round(spec, state, names)
        if not state.times and set(names) <= set(self.checkpoint.compile_failed):
            reasons = pd.Series(list(self.checkpoint.compile_failed.values())).value_counts()
            discard(self.checkpoint.path)  # nothing to resume: a rerun tries again
            raise SearchFailed(f"all {len(names)} configs failed to compile; most often: {reasons.index[0]}")

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
            stream = _CompileStream(self.module, todo, self.settings, ReadyWriter(ready), self.stages, self.parts,
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

    def later_round(self, spec: RoundSpec, field_names: list[str]) -> None:
        """A round over configs an earlier round compiled and timed."""
        state = self.checkpoint.round(spec.index, spec.warmup, spec.iters)
        todo = [n for n in field_names if n not in state.finished()]
        if not todo:
            state.complete = True
            return
        self.regroup(spec.index, todo)
        timer = self.timer(spec, state, todo)
        timer.run(self.job(spec, 0, todo, state.matmul_us is None, None), self.scratch, self.settings, self.log)
        self.finish(timer, spec, state)

    def closing_round(self, index: int, names: list[str]) -> RoundRecord:
        """The round a spent budget closes the search with: `names` (the fastest configs timed, compiled already)
        timed side by side as the final round would time them. Its state is the search's own, not the checkpoint's."""
        spec = RoundSpec(index, self.settings.warmup, self.settings.iters, final=True)
        self.closing = RoundState(spec.warmup, spec.iters)
        self.regroup(index, names)
        timer = self.timer(spec, self.closing, names, stage=f"time closing round {index}")
        timer.run(self.job(spec, 0, names, True, None, tag="closing"), self.scratch, self.settings, self.log)
        self.finish(timer, spec, self.closing)
        return self.record(spec, names, self.closing)

    def regroup(self, index: int, names: list[str]) -> None:
        """Round `index`'s configs written into part modules of their own (tune_gemm.generate.parts), where the size has parts.
        A round after round 0 takes configs from all over the size's parts (slices of its visiting order,
        tune_gemm.search.order), and each process compiling or timing them loads every part they come from, a fraction of a
        second for each part of 256 kernels: on the H200 a closing round of 8 configs took 4-7 s, and a round 1 of
        196 variants of 16x4096x4096 timed one config in 8.6 s. A config compiled already is found in Triton's cache
        from its new part too (the key does not depend on the file, tune_gemm.generate.parts)."""
        if self.parts is None or self.problem is None or not names:
            return
        folder = self.scratch / f"round{index}_parts"
        folder.mkdir(exist_ok=True)
        self.parts = {**self.parts, **write_parts(self.problem, [Config.parse(name) for name in names], folder)}

    def record(self, spec: RoundSpec, names: list[str], closing: RoundState | None = None) -> RoundRecord:
        """Round `spec` as it ended, having set out to time `names`: the checkpoint's round, or the `closing` one."""
        state = closing if closing is not None else self.checkpoint.round(spec.index, spec.warmup, spec.iters)
        return RoundRecord(spec.index, spec.warmup, spec.iters, len(state.times), spec.final, planned=len(names),
                           closing=closing is not None, cut_at=None if state.complete else self.budget_of(spec).seconds)

    def stops_after(self, spec: RoundSpec) -> bool:
        """No round after this one: it was the last, the time budget is spent, or it was cut short."""
        return spec.final or self.budget.spent or not self.checkpoint.rounds[spec.index].complete

    def closed(self, records: list[RoundRecord], finalists: list[str]) -> list[RoundRecord]:
        """`records` of a search the budget cut before its final round, and a closing round over `finalists`."""
        if not finalists:
            return records
        return records + [self.closing_round(records[-1].index + 1, finalists)]

    def halving_rounds(self) -> list[RoundRecord]:
        """Exhaustive (one final round) or successive halving (tune_gemm.search.halving)."""
        field_names, index, records = self.names, 0, []
        while True:
            spec = self.spec(index, len(field_names))
            if index == 0:
                self.first_round(spec, self.names)
            else:
                self.later_round(spec, field_names)
            records.append(self.record(spec, field_names))
            if spec.final:
                return records
            if self.stops_after(spec):
                timed = final_times([state.times for state in self.checkpoint.rounds])
                return self.closed(records, ranked(timed)[:HALVING.min_keep])
            field_names, index = keep(self.checkpoint.rounds[index].times, HALVING), index + 1

    def refine_rounds(self) -> list[RoundRecord]:
        """Representatives, the rest of the best shapes, the finalists side by side (tune_gemm.search.refine); or, for a
        space of few configs per shape, every config in one round."""
        warmup, iters = self.settings.warmup, self.settings.iters
        configs = [Config.parse(name) for name in self.names]
        if times_whole_space(configs, REFINE):
            whole = RoundSpec(0, warmup, iters, final=True)
            self.first_round(whole, self.names)
            return [self.record(whole, self.names)]
        specs = [RoundSpec(index, warmup, iters, final=index == 2) for index in range(3)]
        shapes = [str(config) for config in representatives(configs, REFINE)]
        budget = self.settings.time_budget  # round 0 leaves round 1 a reserve (see the module docstring)
        self.round_budgets[0] = _Budget(None if budget is None else sample_seconds(budget),
                                        self.scratch / "stop_sample", self.budget.started)
        self.first_round(specs[0], shapes)
        records = [self.record(specs[0], shapes)]
        first = self.checkpoint.rounds[0]
        # a round 0 the budget cut still has its best shapes refined, in round 1's reserve (see the module docstring)
        second = self.checkpoint.round(1, warmup, iters)
        variants = [str(config) for config in refined(configs, first.times, REFINE)]
        self.regroup(1, variants)
        self.compiling_round(specs[1], second, variants)
        records.append(self.record(specs[1], variants))
        fastest = finalists({**first.times, **second.times}, REFINE)
        if not first.complete or self.stops_after(specs[1]):
            return self.closed(records, fastest)
        self.later_round(specs[2], fastest)
        records.append(self.record(specs[2], fastest))
        return records

    def run(self) -> SearchOutcome:
        if self.checkpoint.resumed:
            self.log(f"resuming {self.checkpoint.path}: {self.checkpoint.timed()} configs timed before")
        records = self.refine_rounds() if self.settings.search == "refine" else self.halving_rounds()
        return self.outcome(records)

    def outcome(self, records: list[RoundRecord]) -> SearchOutcome:
        rounds = self.checkpoint.rounds
        pick = refine_times if self.settings.search == "refine" else final_times
        closing = self.closing.times if self.closing else {}
        times = closing or pick([state.times for state in rounds])
        spent = any(budget.spent for budget in (self.budget, self.final_budget, *self.round_budgets.values()))
        if not times and spent:
            raise SearchFailed(f"time budget of {self.settings.time_budget:g} s spent before any config was timed"
                               + runtime_failures(self.failed))
        if not times:
            discard(self.checkpoint.path)  # every config failed: nothing to resume, a rerun tries again
            raise SearchFailed("no config produced a timing")
        measured = rounds + ([self.closing] if self.closing else [])
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
            note = (f"time budget of {self.settings.time_budget:g} s spent: {ended}; {self.checkpoint.timed()} of "
                    f"{len(self.names)} configs timed in all, winner picked from the {len(times)} fastest timed "
                    f"again in a closing round")
        elif spent:
            timed_rounds = [str(i) for i, state in enumerate(rounds) if state.times]
            source = next((f"round {i}" for i, s in enumerate(rounds) if s.times is times),
                          ("round " if len(timed_rounds) == 1 else "rounds ") + " and ".join(timed_rounds))
            note = (f"time budget of {self.settings.time_budget:g} s spent: winner picked from the {len(times)} "
                    f"configs timed in {source} ({self.checkpoint.timed()} of {len(self.names)} configs timed in all)")
        if self.settings.search != "exhaustive":
            self.log(f"{self.settings.search}: " + ", ".join(
                f"{'closing ' if r.closing else ''}round {r.index} {r.configs} configs x {r.iters} launches"
                + (" after L2 flushes" if self.settings.flushes(r.final) else "") for r in records))
        # the times picked are the last round's that timed anything (refine_times, final_times)
        picked = next(record for record in reversed(records) if record.configs)
        return SearchOutcome(self.compiled, ChildOutcome(failed=self.failed, restarts=self.restarts), table, matmul,
                             records, self.checkpoint.timed(), self.seconds, note, self.settings.flushes(picked.final))


def runtime_failures(failed: Mapping[str, str], shown: int = 3) -> str:
    """'; N configs failed at run time: name (reason), ...' for a message, or "" when none did."""
    if not failed:
        return ""
    named = ", ".join(f"{name} ({reason})" for name, reason in list(failed.items())[:shown])
    more = f", and {len(failed) - shown} more" if len(failed) > shown else ""
    return f"; {len(failed)} configs failed at run time: {named}{more}"


def run_search(module: Path, names: list[str], scratch: Path, settings: TuneSettings, device: DeviceProfile,
               checkpoint: Checkpoint, stages: Stages, log=print, parts: Mapping[str, Path] | None = None,
               problem: GemmProblem | None = None) -> SearchOutcome:
    """Compile and time `names` (configs of `module`, each loaded from its part in `parts` when there is one,
    tune_gemm.generate.parts) as `settings.search` says; see the module docstring. With `problem` (the size `module` is
    generated for) the rounds after the first load their configs from parts of their own."""
    if settings.search not in SEARCHES:
        raise ValueError(f"search must be one of {SEARCHES}, got {settings.search!r}")
    return _Search(module, names, scratch, settings, device, checkpoint, stages, log, parts, problem).run()
