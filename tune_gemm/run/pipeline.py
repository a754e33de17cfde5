"""The tuning pipeline for one size: prune -> generate -> (the run's helper processes ready, tune_gemm.run.start_up) ->
compile and time (tune_gemm.search.search) -> pick -> (compare).

Also the check of recorded configs (`--compare_wo_tuning`). Every kernel runs in a child process.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from tune_gemm.compile.pool import CompileOutcome, compile_all
from tune_gemm.core.config import Config
from tune_gemm.core.device import DeviceProfile
from tune_gemm.core.errors import UserError
from tune_gemm.core.problem import GemmProblem
from tune_gemm.generate import write_module
from tune_gemm.generate.parts import write_parts
from tune_gemm.measure.job import ChildJob
from tune_gemm.measure.postprocess import load_timings, summarize
from tune_gemm.measure.run_knobs import rounds_flushed
from tune_gemm.measure.runner import ChildFailed, ChildOutcome, run_child
from tune_gemm.measure.schema import BASELINE_NAME
from tune_gemm.run.chunks import Chunk
from tune_gemm.run.start_up import helpers_ready

if TYPE_CHECKING:  # annotations only: the command line parses without pandas
    import pandas as pd
from tune_gemm.search.checkpoint import Checkpoint
from tune_gemm.search.order import visiting_order
from tune_gemm.search.progress import Stages
from tune_gemm.search.search import (
    SearchFailed,
    SearchOutcome,
    checkpoint_key,
    part_paths,
    run_search,
    timing_job,
)
from tune_gemm.search.settings import TuneSettings
from tune_gemm.space.prune import prune


class SizeFailed(Exception):
    """This size produced no usable config; the run goes on with the next size."""


@dataclass
class SizeOutcome:
    problem: GemmProblem
    candidates: int  # configs that survived pruning
    space_size: int
    compiled: CompileOutcome
    profiled: ChildOutcome
    timings: pd.DataFrame  # config, time_us, instances: fastest first (baseline excluded)
    winner: Config
    winner_time_us: float
    matmul_time_us: float | None
    seconds: dict[str, float] = field(default_factory=dict)  # stage -> wall seconds
    check_error: float | None = None  # relative error of the winner when --compare
    searched: SearchOutcome | None = None  # rounds, configs timed, what a time budget cut short
    checkpoint: Path | None = None  # to discard once the size is recorded (tune_gemm.search.checkpoint)

    @property
    def failed(self) -> dict[str, str]:
        return {**self.compiled.failed, **self.profiled.failed}


def scratch_dir(settings: TuneSettings, problem: GemmProblem, purpose: str) -> Path:
    """A fresh working directory for one size's child files, under the run's tune_gemm_work/."""
    directory = Path(settings.workdir).resolve() / "tune_gemm_work" / f"{purpose}{problem.file_tag}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return directory


def clean_up(settings: TuneSettings, *paths: Path) -> None:
    """Remove generated modules and scratch directories (kept with --keep), and tune_gemm_work/ once empty."""
    if settings.keep:
        return
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    work = Path(settings.workdir) / "tune_gemm_work"
    if work.is_dir() and not any(work.iterdir()):
        work.rmdir()


def _check_job(module: Path, scratch: Path, names: list[str], settings: TuneSettings,
               parts: Mapping[str, Path] | None) -> ChildJob:
    return ChildJob(module_path=str(module), timer=settings.profiler.timer, csv_path=str(scratch / "check.csv"),
                    progress_path=str(scratch / "check_progress.txt"), check_configs=names,
                    check_path=str(scratch / "check.json"), env=settings.child_env, parts=part_paths(parts, names))


def tune_size(problem: GemmProblem, device: DeviceProfile, settings: TuneSettings, compare: bool,
              log=print, stages: Stages | None = None, chunk: Chunk | None = None) -> SizeOutcome:
    """Tune one size: returns the winner and everything measured on the way. SizeFailed if none works.
    `stages` shows the compile, time and compare stages as they go (tune_gemm.search.progress). With `chunk`, only that
    chunk's share of the pruned configs (tune_gemm.run.chunks): the outcome is over those configs alone.

    Times are checkpointed as they come in (tune_gemm.search.checkpoint): a run with the same problem and settings
    resumes what an interrupted one left. The caller discards the checkpoint (outcome.checkpoint) once
    it has recorded the result; until then, tuning the size again resumes it."""
    stages = stages or Stages(problem.label)
    settings = replace(settings, cache_flush=rounds_flushed(settings.cache_flush, problem))
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    pruned = prune(problem, device, settings.space)
    seconds["prune"] = time.perf_counter() - started
    log(f"{problem.label}: {len(pruned.configs)} of {pruned.space_size} configs survive pruning")
    if not pruned.configs:
        raise SizeFailed(f"no config survives pruning for this size (of {pruned.space_size} in the space, the rules "
                         f"that removed the most: {pruned.largest_removals()})")

    scratch = scratch_dir(settings, problem, f"tune_{chunk.tag}_" if chunk else "tune")
    # the search visits the configs in a spread-out order (tune_gemm.search.order); the tuner's processes load slices of
    # the module in that same order, so that a process needs few parts at a time
    visiting = visiting_order(pruned.configs)
    if chunk is None:
        module = write_module(problem, pruned.configs, Path(settings.workdir).resolve())  # the one users open
    else:  # its share, in files of its own: other workers tune the size's other chunks at the same time
        visiting = chunk.take(visiting)
        log(f"{problem.label}: {chunk} takes {len(visiting)} of them")
        module = write_module(problem, visiting, scratch)
    parts = write_parts(problem, visiting, scratch)
    checkpoint = Checkpoint.open(settings.workdir, problem.file_tag + (f"_{chunk.tag}" if chunk else ""),
                                 checkpoint_key(problem, device, settings, module))
    try:
        waited = helpers_ready(settings)  # before the search starts its clock: their start-up is the run's
        if waited:
            seconds["start-up"] = waited
        try:
            searched = run_search(module, visiting, scratch, settings, device, checkpoint, stages, log, parts,
                                  problem)
        except SearchFailed as failure:
            raise SizeFailed(str(failure)) from None
        seconds.update(searched.seconds)
        table = searched.timings  # never empty: the search fails first
        if searched.note:
            log(searched.note)
        outcome = SizeOutcome(
            problem=problem, candidates=len(visiting), space_size=pruned.space_size, compiled=searched.compiled,
            profiled=searched.profiled, timings=table, winner=searched.winner,
            winner_time_us=float(table.loc[0, "time_us"]),
            matmul_time_us=searched.matmul_time_us, seconds=seconds, searched=searched, checkpoint=checkpoint.path,
        )
        if compare:
            compare_winner(outcome, module, scratch, settings, stages, parts)
        return outcome
    finally:
        clean_up(settings, module, scratch)


def compare_winner(outcome: SizeOutcome, module: Path, scratch: Path, settings: TuneSettings, stages: Stages,
                   parts: Mapping[str, Path] | None = None) -> None:
    """`--compare`: the winner's relative error against float64 into the outcome (a crash counts as inf)."""
    started = time.perf_counter()
    stages.start("compare", 1)
    checked = check_configs(module, [outcome.winner], scratch, settings, parts)
    outcome.check_error = checked.get(str(outcome.winner), float("inf"))
    stages.advance("compare")
    stages.finish("compare")
    outcome.seconds["compare"] = time.perf_counter() - started


@dataclass
class Profiled:
    outcome: ChildOutcome
    timings: pd.DataFrame  # config, time_us, instances: fastest first (baseline and failed configs excluded)
    matmul_time_us: float | None  # torch.matmul on the same inputs, same timer
    seconds: dict[str, float]  # "profile" and "post-process" wall seconds


def profile_configs(module: Path, names: list[str], scratch: Path, settings: TuneSettings, device: DeviceProfile,
                    log=print) -> Profiled:
    """Time the compiled configs `names` of a module and torch.matmul in child processes; one time each, taken as
    the run times the round that picks a winner (after L2 flushes by default)."""
    started = time.perf_counter()
    job = timing_job(module, settings, device, scratch / "timings.csv", scratch / "progress.txt", names,
                     settings.warmup, settings.iters, baseline=True, final=True)
    try:
        profiled = run_child(job, scratch, settings.interpret, settings.config_timeout,
                             log if settings.verbose else None, settings.profiler.external,
                             standby=settings.standby_children)
    except ChildFailed as failure:
        raise SizeFailed(str(failure)) from None
    seconds = {"profile": time.perf_counter() - started}

    started = time.perf_counter()
    table = summarize(load_timings(Path(job.csv_path)), settings.warmup, settings.statistic)
    baseline = table[table["config"] == BASELINE_NAME]
    # an external profiler may hold some launches of a config that then crashed its child
    table = table[(table["config"] != BASELINE_NAME) & ~table["config"].isin(profiled.failed)]
    seconds["post-process"] = time.perf_counter() - started
    return Profiled(profiled, table.reset_index(drop=True),
                    float(baseline["time_us"].iloc[0]) if not baseline.empty else None, seconds)


def check_configs(module: Path, configs: list[Config], scratch: Path, settings: TuneSettings,
                  parts: Mapping[str, Path] | None = None) -> dict[str, float]:
    """Relative error of each config (from its part in `parts`, if any) on fresh random inputs (child process);
    a crash counts as inf."""
    names = [str(config) for config in configs]
    result = _run_check(module, names, scratch, settings, parts)
    return {name: result.errors.get(name, float("inf")) for name in names}


def _run_check(module: Path, names: list[str], scratch: Path, settings: TuneSettings,
               parts: Mapping[str, Path] | None = None) -> ChildOutcome:
    try:
        return run_child(_check_job(module, scratch, names, settings, parts), scratch,
                         settings.interpret, settings.config_timeout, standby=settings.standby_children)
    except ChildFailed as failure:
        raise SizeFailed(str(failure)) from None


def check_recorded(problem: GemmProblem, config: Config, settings: TuneSettings, vendor: str) -> float:
    """`--compare_wo_tuning` for one entry: compile the recorded config alone and check it.

    Off AMD, a config recorded there runs as `Config.for_vendor` says: no other backend takes its knobs."""
    config = config.for_vendor(vendor)
    name = str(config)  # what the compile workers and the child's job name it by
    scratch = scratch_dir(settings, problem, "check")
    module = write_module(problem, [config], Path(settings.workdir).resolve())
    try:
        compiled = compile_all(module, [name], 1, settings.interpret)
        if compiled.failed:
            raise SizeFailed(f"config {config} does not compile: {compiled.failed[name]}")
        checked = _run_check(module, [name], scratch, settings)
        if name in checked.failed:
            raise SizeFailed(f"config {config} failed to run: {checked.failed[name]}")
        return checked.errors.get(name, float("inf"))
    finally:
        clean_up(settings, module, scratch)


def require_config(config: Config | None, where: str, mode: str = "--compare_wo_tuning") -> Config:
    if config is None:
        raise UserError(f"{where} has no config fields (BLOCK_SIZE_M ...): {mode} needs a results file")
    return config
