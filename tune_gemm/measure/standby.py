"""Timing children started ahead of their jobs, so that the next child's start-up overlaps the current child's work.

Measured on the H100 machine, a timing child spends 6-8 s importing torch and the
tuner and about 6 s more opening its first profiler session before it times anything: most of a refine round
of 8 or 52 configs. So while one child runs, the runner starts the next one in standby
(`python -m tune_gemm.measure.child --standby GO TIMER`): it imports, makes its GPU context and opens and closes one
session of the timer, then waits for GO to name its job file. The runner's next child takes over the oldest one
waiting when its environment matches (same variables, same timer, no external profiler wrapping it); one started
for another environment is stopped and a fresh one started. The runner keeps as many waiting as it is asked
(TuneSettings.standby_children), besides a child given back (below): one, or two where a round may last less than
a child's start-up (a round cut by a time budget: its standby, started with it, was not warm when the round after
it began); none under the interpreter, where a child is only reused. Those
waiting are stopped at exit, one running a job by the runner when it leaves the job early, and all die with the
tuner (kill -9 included) like any child. Once warm a child creates its ready file, so that a tuner can wait for it
(tune_gemm.run.start_up: the first child of a run is started ahead of the first size and waited for).

A child in standby mode serves more than one job: one that ends with none of its configs failed writes how many
configs it started to GO's done file and waits for GO again, and the runner gives it back to the front of the
queue, warm, for the next job (a round cut short by a time budget, the `--compare` check after the closing round:
each then starts at once, where a child started a few seconds before was still importing). Every config a child
loads stays loaded in its GPU context, so one that has started MAX_CONFIGS_SERVED configs is stopped instead.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tune_gemm.measure.child_timeline import LAUNCHED_ENV

# Configs a child may start over all its jobs before it is stopped rather than reused: each one it loads stays loaded
# in its GPU context. A refine search's rounds at one size time 700-1200 configs in all (the default space).
MAX_CONFIGS_SERVED = 3000


@dataclass
class StandbyChild:
    process: subprocess.Popen
    go_path: Path  # the runner writes the job file's path here to start it
    output_path: Path  # the child's stdout and stderr
    key: tuple  # what it was started for: environment and timer
    configs_served: int = 0  # configs its jobs have started so far (each clean job's done file says how many)

    @property
    def ready_path(self) -> Path:
        return ready_path_for(self.go_path)

    @property
    def done_path(self) -> Path:
        return done_path_for(self.go_path)

    def start(self, job_path: Path) -> None:
        """Hand the child its job (written atomically: the child polls for the file)."""
        temporary = self.go_path.with_name(self.go_path.name + ".tmp")
        temporary.write_text(str(job_path))
        os.replace(temporary, self.go_path)

    def job_ended(self) -> bool:
        """Whether the child reported the job handed to it over, clean, and waits for another (the report, which
        counts the configs the job started, is taken in and removed); False while it runs, or where it ended."""
        if not self.done_path.exists():
            return False
        self.configs_served += int(self.done_path.read_text())
        self.done_path.unlink()
        return True

    @property
    def reusable(self) -> bool:
        """Whether it may take another job: it has not started MAX_CONFIGS_SERVED configs yet."""
        return self.configs_served < MAX_CONFIGS_SERVED


def ready_path_for(go_path: Path) -> Path:
    """The file a standby child creates once it is warm (its imports, GPU context and first timer session done)."""
    return go_path.with_suffix(".ready")


def done_path_for(go_path: Path) -> Path:
    """The file a standby child writes to when its job ends clean and it waits for the next: the configs the job
    started."""
    return go_path.with_suffix(".done")


_READY_POLL_SECONDS = 0.05


def standby_key(env: dict[str, str], timer: str) -> tuple:
    return tuple(sorted((name, value) for name, value in env.items() if name != LAUNCHED_ENV)), timer


class Standby:
    """The tuner process's children in standby, oldest first."""

    def __init__(self):
        self._children: list[StandbyChild] = []
        self._directory: Path | None = None  # their files: not in a round's scratch folder, which may go first

    @property
    def waiting(self) -> list[StandbyChild]:
        """The children waiting, oldest (the next one taken) first."""
        return list(self._children)

    def take(self, key: tuple) -> StandbyChild | None:
        """The oldest child in standby that is alive and was started for `key`, or None; the children that could
        never be taken (ended, or started for another key) are stopped."""
        self._keep(key)
        return self._children.pop(0) if self._children else None

    def give_back(self, child: StandbyChild) -> None:
        """Queue a child whose job ended and who waits for another: first, since it is warm; one that may not take
        another job (StandbyChild.reusable) is stopped."""
        if child.reusable and child.process.poll() is None:
            self._children.insert(0, child)
        else:
            _stop(child)

    def spawn_for_job(self, key: tuple, env: dict[str, str], root: Path,
                      preexec_fn: Callable[[], None] | None) -> StandbyChild:
        """A child started in standby mode for a job to be handed to it at once (not queued), so that it can be
        given back afterwards like those started ahead."""
        return self._spawn(key, env, root, preexec_fn)

    def start(self, key: tuple, env: dict[str, str], root: Path, preexec_fn, count: int = 1) -> None:
        """Start children in standby for `key` (env: their whole environment) until `count` are waiting; those
        waiting for another key are stopped (the next job could not take them)."""
        self._keep(key)
        while len(self._children) < count:
            self._children.append(self._spawn(key, env, root, preexec_fn))

    def _keep(self, key: tuple) -> None:
        """Stop the children that ended or were started for another key."""
        kept = [child for child in self._children if child.key == key and child.process.poll() is None]
        for child in self._children:
            if child not in kept:
                _stop(child)
        self._children = kept

    def _spawn(self, key: tuple, env: dict[str, str], root: Path, preexec_fn) -> StandbyChild:
        if self._directory is None:
            self._directory = Path(tempfile.mkdtemp(prefix="tune_gemm_standby_"))
        name = f"standby_{uuid.uuid4().hex[:12]}"
        go_path, output_path = self._directory / f"{name}.go", self._directory / f"{name}.stderr"
        with open(output_path, "w") as output:
            process = subprocess.Popen([sys.executable, "-m", "tune_gemm.measure.child", "--standby", str(go_path), key[1]],
                                       cwd=root, env=env, stdout=output, stderr=subprocess.STDOUT,
                                       preexec_fn=preexec_fn)
        return StandbyChild(process, go_path, output_path, key)

    def wait_ready(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds until the oldest child in standby, the next one taken, is warm; whether it
        is (False: none, or it ended)."""
        deadline = time.monotonic() + timeout
        child = self._children[0] if self._children else None
        while child is not None and child.process.poll() is None:
            if child.ready_path.exists():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(_READY_POLL_SECONDS)
        return False

    def stop(self) -> None:
        """Stop the children in standby and remove the files of every child it started."""
        children, self._children = self._children, []
        for child in children:
            _stop(child)
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None


def _stop(child: StandbyChild) -> None:
    child.process.kill()
    child.process.wait()


STANDBY = Standby()
atexit.register(STANDBY.stop)
