"""Parent side of the child process: starts it, watches it, and restarts it past a config that kills it.

A config whose launch crashes the child (GPU fault, abort) or hangs past `config_timeout` seconds is
recorded as failed with the reason, and a new child carries on with the configs not yet done.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from tune_gemm.measure.child_timeline import LAUNCHED_ENV, TIMELINE_PREFIX
from tune_gemm.measure.external import ExternalProfiler
from tune_gemm.measure.job import ChildJob
from tune_gemm.measure.schema import BASELINE_NAME, append_rows
from tune_gemm.measure.standby import STANDBY, StandbyChild, standby_key
from tune_gemm.measure.stream import stop_requested

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the tune_gemm package
_POLL_SECONDS = 0.05
_STARTUP_SECONDS = 120.0  # a child that marks no config for this long after its start is stuck
# A child told to stop (the time budget is spent) ends after the launch it is in; one still running this long
# after the request is stuck in a config (a hung kernel) and is killed, so that a hang cannot outlast the budget
# by the config timeout. The config it was in is not blamed: it was cut short, not found hung.
STOP_GRACE_SECONDS = 5.0
EXIT_STOPPED = -15  # _run_once's exit code for a child killed that way
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class ChildFailed(RuntimeError):
    """The child died before it ran any config: nothing to blame on a kernel."""


@dataclass
class ChildOutcome:
    failed: dict[str, str] = field(default_factory=dict)  # config name -> reason
    errors: dict[str, float] = field(default_factory=dict)  # check results: config name -> relative error
    restarts: int = 0


@dataclass
class _Progress:
    done: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)  # failures the child caught and reported
    running: str | None = None  # started, neither done nor failed: the one running when the child stopped
    started: int = 0


def _read_progress(path: Path) -> _Progress:
    progress = _Progress()
    if path.exists():
        for line in path.read_text().splitlines():
            event, _, rest = line.partition(" ")
            name, _, reason = rest.partition(" ")
            if event == "start":
                progress.running = name
                progress.started += 1
            elif event in ("done", "fail"):
                progress.running = None
                if event == "done":
                    progress.done.add(name)
                else:
                    progress.failed[name] = reason
    return progress


# Loaded here, not between fork and exec: the tuner has threads then (the compile stream), and a dlopen
# in the forked child could wait forever on a loader lock that one of them held.
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def die_with_parent() -> None:
    """In the child, before exec (or in a tune_gemm.run.workers worker): have the kernel kill it if its parent dies
    (kill -9 included), so no orphan writes into the scratch files of the next run."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _child_env(interpret: bool, extra: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, **extra, LAUNCHED_ENV: repr(time.time())}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH", "")]))
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return env


_PREEXEC = die_with_parent if sys.platform == "linux" else None  # what a child runs before exec


def start_standby(extra_env: dict[str, str], timer: str, interpret: bool, count: int = 1) -> None:
    """Start in standby the children that the next jobs run with `extra_env` and `timer` (no external profiler)
    take over, until `count` are waiting."""
    env = _child_env(interpret, extra_env)
    STANDBY.start(standby_key(env, timer), env, PROJECT_ROOT, _PREEXEC, count)


@dataclass
class _Launched:
    """The child running one job: a process of its own, or one in standby mode (`standby_child`), which reports the
    job's end in a file and then waits for another job."""
    process: subprocess.Popen
    output_path: Path  # its stdout and stderr
    output_start: int = 0  # where this job's output begins there (a reused child's file holds earlier jobs')
    standby_child: StandbyChild | None = None
    reused: bool = False  # it ran jobs before this one
    waits_again: bool = False  # it reported this job over and waits for the next

    def exit_code(self) -> int | None:
        """The job's exit code once it is over (the process ended, or the standby child reported it over: 0),
        else None."""
        if self.standby_child is not None and self.standby_child.job_ended():
            self.waits_again = True
            return 0
        return self.process.poll()

    def output(self) -> list[str]:
        with open(self.output_path, "rb") as output:
            output.seek(self.output_start)
            return output.read().decode(errors="replace").strip().splitlines()

    def release(self) -> None:
        """Once the runner is done with the job, over or abandoned: a child that waits for another job goes back to
        the standby queue; any other still running is stopped, since one in standby mode would wait for a job
        forever."""
        if self.waits_again:
            STANDBY.give_back(self.standby_child)
        elif self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def _launch(job: ChildJob, job_path: Path, interpret: bool, wrap, standby: int | None) -> _Launched:
    """The child for the saved job: with `standby` a count (and no profiler wrapping the child), the first in the
    standby queue that fits, else a new one in standby mode; children then start in standby until `standby` wait.
    With None, a new child for this job alone."""
    env = _child_env(interpret, job.env)
    if standby is None or wrap is not None:
        output_path = job_path.with_suffix(".stderr")
        command = [sys.executable, "-m", "tune_gemm.measure.child", str(job_path)]
        with open(output_path, "w") as output:
            child = subprocess.Popen(wrap(command) if wrap else command, cwd=PROJECT_ROOT, env=env, stdout=output,
                                     stderr=subprocess.STDOUT, preexec_fn=_PREEXEC)
        return _Launched(child, output_path)
    key = standby_key(env, job.timer)
    chosen = STANDBY.take(key) or STANDBY.spawn_for_job(key, env, PROJECT_ROOT, _PREEXEC)
    reused = chosen.configs_served > 0
    # a child's first job owns its start-up's output too (what it said if it failed to start)
    launched = _Launched(chosen.process, chosen.output_path, _size(chosen.output_path) if reused else 0, chosen,
                         reused)
    chosen.start(job_path)
    start_standby(job.env, job.timer, interpret, standby)
    return launched


@dataclass
class _Ended:
    code: int  # the job's exit code (EXIT_STOPPED, -9 for a child the runner killed)
    reason: str  # the last lines of its output
    reused: bool = False  # its child had run jobs before


def _run_once(job: ChildJob, job_path: Path, interpret: bool, config_timeout: float, log,
              wrap=None, watch: Callable[[], None] | None = None, standby: int | None = None) -> _Ended:
    """Run one child's job (the child wrapped in a profiler's command) to its end, calling watch() as it goes.
    A hang is killed: no progress, and no config ready for it either (a streaming child waits on its ready
    file, tune_gemm.measure.stream, while the tuner compiles)."""
    job.save(job_path)
    watched = [Path(path) for path in (job.progress_path, job.ready_path) if path]
    launched_at = _size(watched[0])
    launched = _launch(job, job_path, interpret, wrap, standby)
    try:
        return _watch(job, launched, watched, launched_at, config_timeout, log, watch)
    finally:
        launched.release()


def _watch(job: ChildJob, launched: _Launched, watched: list[Path], launched_at: int, config_timeout: float, log,
           watch: Callable[[], None] | None) -> _Ended:
    child = launched.process
    last_change, last_size = time.monotonic(), -1
    stop_seen = None
    while (code := launched.exit_code()) is None:
        if watch is not None:
            watch()
        if stop_requested(job):
            stop_seen = stop_seen or time.monotonic()
            if time.monotonic() - stop_seen > STOP_GRACE_SECONDS:
                child.kill()
                child.wait()
                return _Ended(EXIT_STOPPED, f"still running {STOP_GRACE_SECONDS:.0f} s after a stop request, killed")
        size = sum(_size(path) for path in watched)
        # Until it marks its first config, the child is starting (imports, GPU context, inputs), which
        # on a busy machine can outlast a short config timeout: it gets the start-up allowance instead.
        started = _size(watched[0]) > launched_at
        limit = config_timeout if started else max(config_timeout, _STARTUP_SECONDS)
        if size != last_size:
            last_change, last_size = time.monotonic(), size
        elif time.monotonic() - last_change > limit:
            child.kill()
            child.wait()
            return _Ended(-9, f"no progress for {limit:.0f} s ({'hang' if started else 'stuck starting'}), killed")
        time.sleep(_POLL_SECONDS)
    text = launched.output()
    if log and text:
        log("\n".join(text[-20:]))
    said = [line for line in text if not line.startswith(TIMELINE_PREFIX)]  # the reason is what went wrong
    return _Ended(code, " | ".join(said[-3:]), launched.reused)


def run_child(job: ChildJob, workdir: Path, interpret: bool, config_timeout: float = 300.0, log=None,
              profiler: ExternalProfiler | None = None, watch: Callable[[], None] | None = None,
              standby: int | None = None) -> ChildOutcome:
    """Run `job` in child processes until every config is done or known to fail (or, with job.stop_path, until
    a stop is requested). watch() is called every few milliseconds while a child runs. With `standby` a count
    (0 included), each child takes over the first in the standby queue that fits (a child whose earlier job ran
    clean, else the oldest started ahead), `standby` are kept waiting, and a child whose job runs clean goes back
    to the queue for the next (tune_gemm.measure.standby); with None, each child runs one job.

    With an external profiler, each child runs under it and the kernel records it wrote are parsed
    and appended to job.csv_path once all children are done."""
    outcome = ChildOutcome()
    progress_path = Path(job.progress_path)
    progress_path.unlink(missing_ok=True)
    if job.check_path:
        Path(job.check_path).unlink(missing_ok=True)
    pending, started_before, traces, retried_reused = replace(job), 0, [], False
    while True:
        wrap = None
        if profiler is not None:
            traces.append(Path(workdir) / f"{profiler.name}_{len(traces)}.out")
            wrap = functools.partial(profiler.wrap, output=traces[-1])
        ended = _run_once(pending, Path(workdir) / "child_job.json", interpret, config_timeout, log, wrap, watch,
                          standby)
        code, reason = ended.code, ended.reason
        progress = _read_progress(progress_path)
        outcome.failed.update(progress.failed)
        if code == EXIT_STOPPED:  # what it was timing is left untimed, for a later run to time
            break
        if progress.running is not None:
            outcome.failed[progress.running] = f"child died (exit {code}): {reason}"
            if log:  # named as it happens: a run cut short (a time limit, Ctrl-C) still shows which config hung
                log(f"failed {progress.running}: {outcome.failed[progress.running]}")
        finished = progress.done | set(outcome.failed)
        pending = replace(
            pending,
            time_configs=[c for c in pending.time_configs if c not in finished],
            check_configs=[c for c in pending.check_configs if c not in finished],
            baseline=pending.baseline and BASELINE_NAME not in finished,
        )
        if code == 0 or not (pending.time_configs or pending.check_configs or pending.baseline):
            break
        if progress.started == started_before:
            if ended.reused and not retried_reused:  # it died between jobs: the job itself may be fine
                retried_reused = True
                continue
            raise ChildFailed(f"profiling child failed before any config ran (exit {code}): {reason}")
        started_before = progress.started
        outcome.restarts += 1
    if job.check_configs and Path(job.check_path).exists():
        outcome.errors = json.loads(Path(job.check_path).read_text())
    if profiler is not None:
        for trace in traces:
            rows = profiler.kernel_rows(trace)
            if rows is not None:  # a run that left no trace adds nothing
                append_rows(Path(job.csv_path), rows)
    return outcome
