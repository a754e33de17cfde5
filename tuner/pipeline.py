"""The tuning pipeline for one size: prune -> generate -> compile -> profile -> pick -> (compare).

Also the check of recorded configs (`--compare_wo_tuning`). Every kernel runs in a child process.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from gen import write_module
from prune import prune
from prune.config import Config
from prune.device import DeviceProfile
from prune.space import RangeSpace
from profiling import ProfilerChoice
from profiling.job import ChildJob
from profiling.postprocess import load_timings, summarize
from profiling.runner import ChildFailed, ChildOutcome, run_child
from profiling.schema import BASELINE_NAME
from tuner.compile import CompileOutcome, compile_all
from tuner.errors import UserError
from tuner.problem import GemmProblem


@dataclass(frozen=True)
class TuneSettings:
    profiler: ProfilerChoice  # see profiling.choose_profiler
    jobs: int = 1
    warmup: int = 5
    iters: int = 20
    statistic: str = "median"
    interpret: bool = False
    keep: bool = False
    workdir: Path = Path(".")
    space: RangeSpace = RangeSpace()
    config_timeout: float = 300.0
    verbose: bool = False


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

    @property
    def failed(self) -> dict[str, str]:
        return {**self.compiled.failed, **self.profiled.failed}


def _scratch(settings: TuneSettings, problem: GemmProblem, purpose: str) -> Path:
    directory = Path(settings.workdir).resolve() / "tune_gemm_work" / f"{purpose}{problem.file_tag}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return directory


def _clean(settings: TuneSettings, *paths: Path) -> None:
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


def _check_job(module: Path, scratch: Path, names: list[str], settings: TuneSettings) -> ChildJob:
    return ChildJob(module_path=str(module), timer=settings.profiler.timer, csv_path=str(scratch / "check.csv"),
                    progress_path=str(scratch / "check_progress.txt"), check_configs=names,
                    check_path=str(scratch / "check.json"))


def tune_size(problem: GemmProblem, device: DeviceProfile, settings: TuneSettings, compare: bool,
              log=print, on_compiled=None) -> SizeOutcome:
    """Tune one size: returns the winner and everything measured on the way. SizeFailed if none works."""
    seconds: dict[str, float] = {}
    started = time.perf_counter()
    pruned = prune(problem, device, settings.space)
    seconds["prune"] = time.perf_counter() - started
    log(f"{problem.label}: {len(pruned.configs)} of {pruned.space_size} configs survive pruning")
    if not pruned.configs:
        raise SizeFailed("no config survives pruning for this size")

    scratch = _scratch(settings, problem, "tune")
    module = write_module(problem, pruned.configs, Path(settings.workdir).resolve())
    try:
        compiled = compile_all(module, [str(c) for c in pruned.configs], settings.jobs, settings.interpret,
                               on_done=on_compiled)
        seconds["compile"] = compiled.seconds
        if not compiled.compiled:
            reasons = pd.Series(list(compiled.failed.values())).value_counts()
            raise SizeFailed(f"all {len(pruned.configs)} configs failed to compile; most often: {reasons.index[0]}")

        started = time.perf_counter()
        external = settings.profiler.external
        job = ChildJob(module_path=str(module), timer=settings.profiler.timer, csv_path=str(scratch / "timings.csv"),
                       progress_path=str(scratch / "progress.txt"), time_configs=compiled.compiled, baseline=True,
                       warmup=settings.warmup, iters=settings.iters, markers=external is not None,
                       l2_bytes=0 if settings.interpret else device.l2_bytes)
        try:
            profiled = run_child(job, scratch, settings.interpret, settings.config_timeout,
                                 log if settings.verbose else None, external)
        except ChildFailed as failure:
            raise SizeFailed(str(failure)) from None
        seconds["profile"] = time.perf_counter() - started

        started = time.perf_counter()
        table = summarize(load_timings(Path(job.csv_path)), settings.warmup, settings.statistic)
        baseline = table[table["config"] == BASELINE_NAME]
        # an external profiler may hold some launches of a config that then crashed its child
        table = table[(table["config"] != BASELINE_NAME) & ~table["config"].isin(profiled.failed)]
        table = table.reset_index(drop=True)
        seconds["post-process"] = time.perf_counter() - started
        if table.empty:
            raise SizeFailed("no config produced a timing")
        winner = Config.parse(table.loc[0, "config"])
        outcome = SizeOutcome(
            problem=problem, candidates=len(pruned.configs), space_size=pruned.space_size, compiled=compiled,
            profiled=profiled, timings=table, winner=winner, winner_time_us=float(table.loc[0, "time_us"]),
            matmul_time_us=float(baseline["time_us"].iloc[0]) if not baseline.empty else None, seconds=seconds,
        )
        if compare:
            started = time.perf_counter()
            outcome.check_error = check_configs(module, [winner], scratch, settings).get(str(winner), float("inf"))
            seconds["compare"] = time.perf_counter() - started
        return outcome
    finally:
        _clean(settings, module, scratch)


def check_configs(module: Path, configs: list[Config], scratch: Path, settings: TuneSettings) -> dict[str, float]:
    """Relative error of each config on fresh random inputs (child process); a crash counts as inf."""
    try:
        result = run_child(_check_job(module, scratch, [str(c) for c in configs], settings), scratch,
                           settings.interpret, settings.config_timeout)
    except ChildFailed as failure:
        raise SizeFailed(str(failure)) from None
    return {str(c): result.errors.get(str(c), float("inf")) for c in configs}


def check_recorded(problem: GemmProblem, config: Config, settings: TuneSettings, vendor: str) -> float:
    """`--compare_wo_tuning` for one entry: compile the recorded config alone and check it.

    AMD-only knobs of a config recorded on AMD are dropped elsewhere: no other backend takes them."""
    if vendor != "amd":
        config = config.without_amd_knobs()
    scratch = _scratch(settings, problem, "check")
    module = write_module(problem, [config], Path(settings.workdir).resolve())
    try:
        compiled = compile_all(module, [str(config)], 1, settings.interpret)
        if compiled.failed:
            raise SizeFailed(f"config {config} does not compile: {compiled.failed[str(config)]}")
        return check_configs(module, [config], scratch, settings)[str(config)]
    finally:
        _clean(settings, module, scratch)


def require_config(config: Config | None, where: str) -> Config:
    if config is None:
        raise UserError(f"{where} has no config fields (BLOCK_SIZE_M ...): --compare_wo_tuning needs a results file")
    return config
