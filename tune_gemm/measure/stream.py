"""The tuner's channel to a running child: which configs it may time now, and when to stop.

A child with `ChildJob.ready_path` does not time its configs in list order: it times them as the tuner
reports them compiled, in that order, so that timing overlaps compiling. The ready file holds lines
`ready <config>` (compiled, time it), `failed <config>` (it will never be ready) and `end` (nothing more
comes). A child with `ChildJob.stop_path` stops timing configs as soon as that file exists (the tuner's
time budget is spent); what it timed so far stays written. Both sides are here: `ReadyWriter` in the
tuner, `config_batches` in the child.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

from tune_gemm.measure.job import ChildJob

_POLL_SECONDS = 0.01


class ReadyWriter:
    """Tuner side of a ready file: each line is appended and closed at once, so a child waiting on it sees it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.touch()

    def _line(self, text: str) -> None:
        with open(self.path, "a") as handle:
            handle.write(text + "\n")

    def ready(self, name: str) -> None:
        self._line(f"ready {name}")

    def failed(self, name: str) -> None:
        self._line(f"failed {name}")

    def end(self) -> None:
        self._line("end")


def request_stop(path: Path) -> None:
    """Tell the children watching `path` to stop timing (they finish the launch they are in)."""
    Path(path).touch()


def stop_requested(job: ChildJob) -> bool:
    return bool(job.stop_path) and os.path.exists(job.stop_path)


class _ReadyReader:
    """Child side: the complete lines added to the ready file since the last read."""

    def __init__(self, path: str):
        self.path, self.offset, self.ended = path, 0, False

    def read(self) -> list[tuple[str, str]]:
        try:
            with open(self.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return []
        complete = data[: data.rfind(b"\n") + 1]  # a line being written is read next time
        self.offset += len(complete)
        events = []
        for line in complete.decode().splitlines():
            event, _, name = line.partition(" ")
            if event == "end":
                self.ended = True
            else:
                events.append((event, name))
        return events


def config_batches(job: ChildJob) -> Iterator[list[str]]:
    """The job's time_configs in batches of at most `job.batch`: in list order, or, with a ready file, in the
    order they become ready (waiting for them). Stops early once a stop is requested."""
    size = max(1, job.batch)
    if not job.ready_path:
        for start in range(0, len(job.time_configs), size):
            if stop_requested(job):
                return
            yield job.time_configs[start:start + size]
        return
    reader, pending, queue = _ReadyReader(job.ready_path), set(job.time_configs), []
    while not stop_requested(job):
        for event, name in reader.read():
            if name in pending:
                pending.discard(name)
                if event == "ready":
                    queue.append(name)
        if queue:
            batch, queue = queue[:size], queue[size:]
            yield batch
        elif reader.ended or not pending:
            return
        else:
            time.sleep(_POLL_SECONDS)
