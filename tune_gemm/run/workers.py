"""Tuning sizes on several GPUs of this host: one worker process per GPU, work handed out as workers free up.

The coordinator (the tuner's own process) starts one spawned worker per GPU, its environment pinning it to
that GPU (tune_gemm.run.gpus.pinning_env) before anything in it can touch CUDA; the worker's compile pool and timing
children inherit the pin. The coordinator hands a worker the next size whenever it is free (so one slow size
does not hold up the others) and gets back a `SizeDone`; the caller records it, so only the coordinator
writes the results file. Each worker gets an equal share of the compile workers (--num_threads), so that
together they use the host's CPU cores without oversubscribing them.

With fewer sizes than workers, a size is split into config chunks (tune_gemm.run.chunks) that several workers tune at
once; once all chunks of a size are in, a worker times their best configs again side by side (tune_gemm.run.merge), and
the caller gets one SizeDone for the size as before. Sizes are split only when all GPUs are alike: each chunk's
worker prunes the size for its own GPU, and the chunks must share out one list of configs. What a worker does
with an item, and how the coordinator gathers items into sizes, is tune_gemm.run.items (Ray's tasks do the same); this
module is the processes.

A worker that dies (killed, a crash of the runtime) has its item (size, chunk or final round) put back at the
front of the queue and, while items wait, a fresh worker is started on its GPU; an item whose worker died
`retries + 1` times is reported as failed (a failed chunk leaves the size to its other chunks). A worker that dies
with no item (on start) is not replaced. Sizes already recorded are never touched again.

Each worker leads its own process group: when it dies, the coordinator kills the group, so no compile
worker or timing child of it lives on to write into the scratch files of the size's next attempt.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait

from tune_gemm.core.device import INTERPRETER_PROFILE, DeviceProfile, detect_device
from tune_gemm.core.problem import GemmProblem
from tune_gemm.measure.runner import die_with_parent
from tune_gemm.run.chunks import MIN_CHUNK_CONFIGS, Work, alike, plan
from tune_gemm.run.gpus import GpuSelection, pinning_env
from tune_gemm.run.items import DEFAULT_RETRIES, SizeDone, WorkQueue, tune_labelled
from tune_gemm.search.settings import TuneSettings

_STOP_SECONDS = 10.0  # a worker told to stop gets this long to exit before it is killed


@dataclass(frozen=True)
class Slot:
    """One worker's place: its GPU (as messages name it), the environment pinning it, and the GPU's facts."""

    where: str
    pin: dict[str, str]
    device: DeviceProfile


def slots_for(gpus: GpuSelection, vendor: str, interpret: bool) -> list[Slot]:
    """One slot per chosen GPU (per interpreter worker under --interpret), with that GPU's own facts."""
    if interpret:
        return [Slot(f"interpreter {i}", {}, INTERPRETER_PROFILE) for i in gpus.ids]
    return [Slot(f"GPU {i}", pinning_env(i, vendor), detect_device(i)) for i in gpus.ids]


def worker_settings(settings: TuneSettings, slot: Slot, workers: int) -> TuneSettings:
    """A worker's settings: its share of the compile workers, and its GPU pinned for its children too."""
    return replace(settings, num_threads=max(1, settings.num_threads // workers), child_env=slot.pin)


def _worker(connection: Connection, slot: Slot, settings: TuneSettings, compare: bool) -> None:
    """A worker's life: pinned to its GPU, do each item it is sent until told to stop (None)."""
    os.setpgid(0, 0)  # its own group, which the coordinator kills whole (see the module docstring)
    if sys.platform == "linux":  # and no worker outlives a coordinator killed outright (kill -9)
        die_with_parent()
    os.environ.update(slot.pin)  # before any CUDA call in this process
    while (work := connection.recv()) is not None:
        connection.send(tune_labelled(work, slot.device, settings, compare, slot.where))


@dataclass
class _Running:
    process: multiprocessing.Process
    connection: Connection
    work: Work | None = None  # the item it is doing


def _kill_group(process: multiprocessing.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # gone with its group, or killed before it made one
        pass
    process.kill()
    process.join()


def tune_on_workers(problems: list[GemmProblem], slots: list[Slot], settings: TuneSettings, compare: bool,
                    retries: int = DEFAULT_RETRIES, on_assign: Callable[[int, Work], object] | None = None,
                    min_chunk: int = MIN_CHUNK_CONFIGS) -> Iterator[SizeDone]:
    """Tune `problems` on one worker per slot; yields each size's SizeDone as it completes (in completion order).
    on_assign(worker pid, work) is called as an item is handed out."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no CUDA state, the pin applies
    # each chunk's worker prunes the size for its own GPU: chunks share out one list of configs on alike GPUs only
    queue = WorkQueue(plan(problems, len(slots), alike(slot.device for slot in slots), settings.space, min_chunk),
                      retries)
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
        while queue.pending or any(w.work is not None for w in workers.values()):
            for worker in workers.values():
                if worker.work is None and queue.pending:
                    worker.work = queue.pending.popleft()
                    try:
                        worker.connection.send(worker.work)
                    except OSError:  # it died meanwhile: seen below, and the item goes back to the queue
                        continue
                    if on_assign:
                        on_assign(worker.process.pid, worker.work)
            if not workers:  # the last ones died idle (on start): their GPUs cannot run one
                while queue.pending:  # a final round may join the queue as the last chunk of its size fails
                    work = queue.pending.popleft()
                    yield from queue.finished(work, SizeDone(work.problem, None, "no worker left to tune it", "", ""))
                return
            wait([w.connection for w in workers.values()] + [w.process.sentinel for w in workers.values()])
            for number, worker in list(workers.items()):
                done = _receive(worker)
                if done is not None:
                    work, worker.work = worker.work, None
                    yield from queue.finished(work, done)
                elif not worker.process.is_alive():
                    yield from _after_death(number, worker, queue, slots)
                    del workers[number]
                    if worker.work is not None and queue.pending:  # it died on an item, not on start: a fresh one
                        start(number)
    finally:
        for worker in workers.values():
            try:
                worker.connection.send(None)
            except OSError:  # it is gone already
                pass
        for worker in workers.values():
            worker.process.join(_STOP_SECONDS if worker.work is None else 0)
            if worker.process.exitcode is None:  # busy (the run stopped early) or stuck: it and its children
                _kill_group(worker.process)


def _receive(worker: _Running) -> SizeDone | None:
    """The worker's result if it sent one (None: nothing yet, or it died)."""
    try:
        return worker.connection.recv() if worker.connection.poll() else None
    except (EOFError, OSError):
        return None


def _after_death(number: int, worker: _Running, queue: WorkQueue, slots: list[Slot]) -> Iterator[SizeDone]:
    """A worker died: its item goes back to the queue, or fails once it has used its retries."""
    _kill_group(worker.process)
    work, slot, code = worker.work, slots[number], worker.process.exitcode
    if work is None:
        return
    if queue.put_back(work):
        print(f"[{slot.where}] worker died (exit code {code}) tuning {work.label}; the {work.kind} goes back to the "
              "queue", flush=True)
    else:
        yield from queue.finished(work, SizeDone(work.problem, None, f"its worker died {queue.attempts[work]} times "
                                                 f"(last on {slot.where}, exit code {code})", slot.device.name,
                                                 slot.where))
