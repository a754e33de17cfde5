"""One round's children: the job a timing child runs, the compile stream that feeds it, and the timer that runs
the child while keeping the round's state, its progress bar and the checkpoint up to date.

Names of configs are this module's currency: they are what the child's job (JSON), its progress file, its timing
CSV and the checkpoint hold.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from tune_gemm.compile.pool import CompileOutcome, add_result, compile_stream
from tune_gemm.core.device import DeviceProfile
from tune_gemm.generate.naming import config_of_kernel
from tune_gemm.measure.job import ChildJob
from tune_gemm.measure.postprocess import summarize
from tune_gemm.measure.runner import ChildFailed, run_child
from tune_gemm.measure.schema import BASELINE_NAME, COLUMNS
from tune_gemm.measure.stream import ReadyWriter
from tune_gemm.search.budget import Budget
from tune_gemm.search.checkpoint import Checkpoint, RoundState
from tune_gemm.search.progress import Stages

if TYPE_CHECKING:
    from tune_gemm.search.settings import TuneSettings

CUPTI_BATCH = 32  # configs per CUPTI profiler session: its start-up and record processing paid once per batch
_SAVE_SECONDS = 0.5  # checkpoint at most this often while a child runs (and always when it ends)
_SAVE_SHARE = 0.2  # ... and less often when reading the round's timings takes longer: at most this share of a core


class SearchFailed(Exception):
    """No config of this size can be timed (all failed to compile, or the child cannot start)."""


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


class CompileStream:
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


class TimingRows:
    """The complete rows of a round's timing CSV (its children append to it), read as they come: each look reads
    only the bytes appended since the last one, and each kernel name is turned into its config's name once."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._offset = 0
        self._frames: list[pd.DataFrame] = []
        self._subjects: dict[str, str | None] = {}  # kernel name -> its config's name (or the baseline's), None

    def _read_new(self) -> None:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except FileNotFoundError:
            return
        data = data[: data.rfind(b"\n") + 1]  # a child may be appending the next line
        if not data:
            return
        body = data[data.find(b"\n") + 1:] if self._offset == 0 else data  # the header, once
        self._offset += len(data)
        if not body:
            return
        frame = pd.read_csv(io.BytesIO(body), header=None, names=list(COLUMNS))
        for kernel in frame["kernel_name"].unique():
            if kernel not in self._subjects:
                config = config_of_kernel(kernel)
                self._subjects[kernel] = BASELINE_NAME if kernel == BASELINE_NAME else (
                    None if config is None else str(config))
        self._frames.append(frame)

    def of(self, names: set[str]) -> pd.DataFrame:
        """The rows read so far of the configs `names` and of torch.matmul, as the CSV holds them."""
        self._read_new()
        if not self._frames:
            return pd.DataFrame(columns=list(COLUMNS))
        if len(self._frames) > 1:
            self._frames = [pd.concat(self._frames, ignore_index=True)]
        kernels = {kernel for kernel, subject in self._subjects.items()
                   if subject == BASELINE_NAME or subject in names}
        frame = self._frames[0]
        return frame[frame["kernel_name"].isin(kernels)]


class RoundTimer:
    """Runs one round's children, keeping its RoundState, the progress bar and the checkpoint up to date
    while they run (the runner calls it every few milliseconds), and watching the time budget."""

    def __init__(self, state: RoundState, checkpoint: Checkpoint, stages: Stages, stage: str, budget: Budget,
                 statistic: str):
        self.state, self.checkpoint, self.stages, self.stage = state, checkpoint, stages, stage
        self.budget, self.statistic = budget, statistic
        self.compile_failed: dict[str, str] = {}  # the compile stream's failures, saved with the checkpoint
        self.failed: dict[str, str] = {}
        self.restarts, self.seconds, self.post_seconds = 0, 0.0, 0.0
        self._job: ChildJob | None = None
        self._rows: TimingRows | None = None
        self._offset, self._done, self._saved, self._interval = 0, set(), time.perf_counter(), _SAVE_SECONDS

    def run(self, job: ChildJob, scratch: Path, settings: TuneSettings, log) -> None:
        self._job, self._offset, self._done = job, 0, set()
        if self._rows is None or self._rows.path != Path(job.csv_path):  # a round's children share its CSV
            self._rows = TimingRows(Path(job.csv_path))
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
        table = summarize(self._rows.of(names), self._job.warmup, self.statistic)
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
