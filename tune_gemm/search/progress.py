"""What a tuning run shows while it works, stage by stage (prune, compile, time, compare).

`Stages` shows nothing (tests, benchmarks). `StageBars` draws one rich bar per running stage: the
stage, configs done of total, configs/s and the time left; bars of stages that overlap (compile and
time) run side by side, and vanish once the size is done. `StageLines` (`--quiet`, or output that is
not a terminal, e.g. a CI log) prints one line per stage when it ends. Stages may advance from any
thread: the compile stream reports from its own.
"""

from __future__ import annotations

import threading
import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text


class Stages:
    """The interface, showing nothing. `label` names the size in what the subclasses show."""

    def __init__(self, label: str = ""):
        self.label = label

    def start(self, stage: str, total: int) -> None:
        """A stage begins, with `total` configs to go through."""

    def advance(self, stage: str, count: int = 1) -> None:
        """`count` more configs of the stage are done."""

    def finish(self, stage: str, note: str = "") -> None:
        """The stage is over; `note` adds what its line should say (e.g. failures)."""

    def close(self) -> None:
        """The size is done: no stage of it is shown any more."""


class _Rate(ProgressColumn):
    def render(self, task: Task) -> Text:
        return Text("-- configs/s" if task.speed is None else f"{task.speed:.1f} configs/s")


class StageBars(Stages):
    def __init__(self, console: Console, label: str):
        super().__init__(label)
        self._bars = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), _Rate(),
                              TimeRemainingColumn(), console=console, transient=True)
        self._tasks: dict[str, int] = {}
        self._bars.start()

    def start(self, stage: str, total: int) -> None:
        self._tasks[stage] = self._bars.add_task(f"{self.label} {stage}", total=total)

    def advance(self, stage: str, count: int = 1) -> None:
        if stage in self._tasks:
            self._bars.advance(self._tasks[stage], count)

    def finish(self, stage: str, note: str = "") -> None:
        if stage in self._tasks:
            self._bars.stop_task(self._tasks[stage])

    def close(self) -> None:
        self._bars.stop()


class StageLines(Stages):
    def __init__(self, console: Console, label: str):
        super().__init__(label)
        self._console = console
        self._lock = threading.Lock()
        self._started: dict[str, tuple[float, int]] = {}  # stage -> (start time, total)
        self._done: dict[str, int] = {}

    def start(self, stage: str, total: int) -> None:
        with self._lock:
            self._started[stage] = (time.perf_counter(), total)
            self._done[stage] = 0

    def advance(self, stage: str, count: int = 1) -> None:
        with self._lock:
            self._done[stage] = self._done.get(stage, 0) + count

    def finish(self, stage: str, note: str = "") -> None:
        with self._lock:
            started, total = self._started.pop(stage, (time.perf_counter(), 0))
            done = self._done.pop(stage, 0)
        seconds = time.perf_counter() - started
        rate = f" ({done / seconds:.1f} configs/s)" if seconds > 0 and done else ""
        self._console.print(f"{self.label} {stage}: {done} of {total} configs in {seconds:.1f} s{rate}"
                            f"{'; ' + note if note else ''}", markup=False, highlight=False)


def stages_for(console: Console, label: str, quiet: bool) -> Stages:
    """Bars on a terminal, lines with --quiet or when the output is not a terminal."""
    if quiet or not console.is_terminal:
        return StageLines(console, label)
    return StageBars(console, label)
