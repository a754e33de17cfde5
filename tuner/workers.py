"""Tuning sizes on several GPUs of this host: one worker process per GPU, sizes handed out as workers free up.

The coordinator (the tuner's own process) starts one spawned worker per GPU, its environment pinning it to
that GPU (tuner.gpus.pinning_env) before anything in it can touch CUDA; the worker's compile pool and timing
children inherit the pin. The coordinator hands a worker the next size whenever it is free (so one slow size
does not hold up the others) and gets back a `SizeDone`; the caller records it, so only the coordinator
writes the results file. Each worker gets an equal share of the compile workers (--num_threads), so that
together they use the host's CPU cores without oversubscribing them.

A worker that dies (killed, a crash of the runtime) has its size put back at the front of the queue and, while
sizes wait, a fresh worker is started on its GPU; a size whose worker died `retries + 1` times is reported as
failed. A worker that dies with no size (on start) is not replaced.
Sizes already recorded are never touched again. A size is never split over workers (no config chunks).

Each worker leads its own process group: when it dies, the coordinator kills the group, so no compile
worker or timing child of it lives on to write into the scratch files of the size's next attempt.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait

from rich.console import Console

from profiling.runner import die_with_parent
from prune.device import INTERPRETER_PROFILE, DeviceProfile, detect_device
from tuner.gpus import GpuSelection, pinning_env
from tuner.pipeline import SizeFailed, SizeOutcome, TuneSettings, tune_size
from tuner.problem import GemmProblem
from tuner.progress import StageLines, Stages

DEFAULT_RETRIES = 2  # a size is tried at most this many more times after its worker died
_STOP_SECONDS = 10.0  # a worker told to stop gets this long to exit before it is killed


@dataclass
class SizeDone:
    """What became of one size: its outcome, or why there is none. Picklable, sent back by workers."""

    problem: GemmProblem
    outcome: SizeOutcome | None
    error: str | None  # why the size failed (outcome None)
    gpu: str  # the device's name, as the results file records it
    where: str  # which worker tuned it, for messages ("GPU 1", a Ray node)


@dataclass(frozen=True)
class Slot:
    """One worker's place: its GPU (as messages name it), the environment pinning it, and the GPU's facts."""

    where: str
    pin: dict[str, str]
    device: DeviceProfile


def tune_one(problem: GemmProblem, device: DeviceProfile, settings: TuneSettings, compare: bool, where: str,
             log: Callable[[str], object], stages: Stages) -> SizeDone:
    """Tune one size into a SizeDone (a size that fails is an outcome too, not an exception)."""
    try:
        outcome = tune_size(problem, device, settings, compare, log=log, stages=stages)
    except SizeFailed as failure:
        return SizeDone(problem, None, str(failure), device.name, where)
    finally:
        stages.close()
    return SizeDone(problem, outcome, None, device.name, where)


def tune_labelled(problem: GemmProblem, device: DeviceProfile, settings: TuneSettings, compare: bool,
                  where: str) -> SizeDone:
    """tune_one in a worker: progress as lines on stdout, each starting with the worker's place."""
    console = Console(highlight=False, soft_wrap=True)
    return tune_one(problem, device, settings, compare, where,
                    lambda line: console.print(f"[{where}] {line}", markup=False),
                    StageLines(console, f"[{where}] {problem.label}"))


def slots_for(gpus: GpuSelection, vendor: str, interpret: bool) -> list[Slot]:
    """One slot per chosen GPU (per interpreter worker under --interpret), with that GPU's own facts."""
    if interpret:
        return [Slot(f"interpreter {i}", {}, INTERPRETER_PROFILE) for i in gpus.ids]
    return [Slot(f"GPU {i}", pinning_env(i, vendor), detect_device(i)) for i in gpus.ids]


def worker_settings(settings: TuneSettings, slot: Slot, workers: int) -> TuneSettings:
    """A worker's settings: its share of the compile workers, and its GPU pinned for its children too."""
    return replace(settings, num_threads=max(1, settings.num_threads // workers), child_env=slot.pin)


def _worker(connection: Connection, slot: Slot, settings: TuneSettings, compare: bool) -> None:
    """A worker's life: pinned to its GPU, tune each size it is sent until told to stop (None)."""
    os.setpgid(0, 0)  # its own group, which the coordinator kills whole (see the module docstring)
    if sys.platform == "linux":  # and no worker outlives a coordinator killed outright (kill -9)
        die_with_parent()
    os.environ.update(slot.pin)  # before any CUDA call in this process
    while (problem := connection.recv()) is not None:
        connection.send(tune_labelled(problem, slot.device, settings, compare, slot.where))


@dataclass
class _Running:
    process: multiprocessing.Process
    connection: Connection
    index: int | None = None  # the size it is tuning


def _kill_group(process: multiprocessing.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # gone with its group, or killed before it made one
        pass
    process.kill()
    process.join()


def tune_on_workers(problems: list[GemmProblem], slots: list[Slot], settings: TuneSettings, compare: bool,
                    retries: int = DEFAULT_RETRIES,
                    on_assign: Callable[[int, GemmProblem], object] | None = None) -> Iterator[SizeDone]:
    """Tune `problems` on one worker per slot; yields each SizeDone as it completes (in completion order).
    on_assign(worker pid, problem) is called as a size is handed out."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no CUDA state, the pin applies
    pending, attempts = deque(range(len(problems))), [0] * len(problems)
    workers: dict[int, _Running] = {}

    def start(number: int) -> None:
        ours, theirs = context.Pipe()
        slot = slots[number]
        process = context.Process(target=_worker, args=(theirs, slot, worker_settings(settings, slot, len(slots)),
                                                        compare),
                                  name=f"tune_gemm worker ({slot.where})")
        process.start()
        theirs.close()
        workers[number] = _Running(process, ours)

    try:
        for number in range(len(slots)):
            start(number)
        while pending or any(w.index is not None for w in workers.values()):
            for worker in workers.values():
                if worker.index is None and pending:
                    worker.index = pending.popleft()
                    try:
                        worker.connection.send(problems[worker.index])
                    except OSError:  # it died meanwhile: seen below, and the size goes back to the queue
                        continue
                    if on_assign:
                        on_assign(worker.process.pid, problems[worker.index])
            if not workers:  # the last ones died idle (on start): their GPUs cannot run one
                for index in pending:
                    yield SizeDone(problems[index], None, "no worker left to tune it", "", "")
                return
            wait([w.connection for w in workers.values()] + [w.process.sentinel for w in workers.values()])
            for number, worker in list(workers.items()):
                done = _receive(worker)
                if done is not None:
                    worker.index = None
                    yield done
                elif not worker.process.is_alive():
                    yield from _after_death(number, worker, problems, attempts, retries, pending, slots)
                    del workers[number]
                    if worker.index is not None and pending:  # it died on a size, not on start: a fresh one
                        start(number)
    finally:
        for worker in workers.values():
            try:
                worker.connection.send(None)
            except OSError:  # it is gone already
                pass
        for worker in workers.values():
            worker.process.join(_STOP_SECONDS if worker.index is None else 0)
            if worker.process.exitcode is None:  # busy (the run stopped early) or stuck: it and its children
                _kill_group(worker.process)


def _receive(worker: _Running) -> SizeDone | None:
    """The worker's result if it sent one (None: nothing yet, or it died)."""
    try:
        return worker.connection.recv() if worker.connection.poll() else None
    except (EOFError, OSError):
        return None


def _after_death(number: int, worker: _Running, problems: list[GemmProblem], attempts: list[int], retries: int,
                 pending: deque[int], slots: list[Slot]) -> Iterator[SizeDone]:
    """A worker died: its size goes back to the queue, or fails once it has used its retries."""
    _kill_group(worker.process)
    if worker.index is None:
        return
    attempts[worker.index] += 1
    problem, slot = problems[worker.index], slots[number]
    if attempts[worker.index] > retries:
        yield SizeDone(problem, None, f"its worker died {attempts[worker.index]} times (last on {slot.where}, "
                       f"exit code {worker.process.exitcode})", slot.device.name, slot.where)
    else:
        print(f"[{slot.where}] worker died (exit code {worker.process.exitcode}) tuning {problem.label}; "
              "the size goes back to the queue", flush=True)
        pending.appendleft(worker.index)
