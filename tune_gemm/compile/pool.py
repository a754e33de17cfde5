"""Compile stage: every config of a generated module compiled in parallel, results streamed as they come.

Workers (`--num_threads`) are separate processes (spawned, so none inherits a GPU context) or threads
of the tuner (`--compile_pool thread`: no start-up, and ptxas runs as a process of its own; how much of
Triton's own passes run without holding the GIL decides whether they keep up, which
benchmarks/bench_compile.py measures). Each calls the generated compile helper of every config it is
given, which fills Triton's on-disk cache that the profiling child then loads from. A config is loaded
from its part module when the caller names one (tune_gemm.generate.parts), else from the whole module; a worker loads
each module once, when a config first needs it. A config that fails to compile is recorded, never fatal; in
worker processes what the compiler printed for it is kept in a log file beside its module (COMPILER_LOGS).

The worker processes outlive a stream: the next stream of the run (the next round of a search, the next
size) reuses them, since starting one (an interpreter importing torch and Triton, then a CUDA context)
takes seconds: on the H100 machine a stream of 40 configs took 11 s, most of it starting its workers.
A stream hands its workers a few configs at a time (WINDOW per worker), so that one closed early (a spent time
budget, Ctrl-C) keeps them too: only the configs already handed out compile on, and the next stream starts at
once. When a stream closed early stopped its workers, the next one paid for new ones: on an H200 a refine search's
round 1 compiled 0.1-4.1 configs/s after a round 0 that a time budget cut, 18-40 after one that ended whole
(BENCHMARKS.md). A stream that fails stops them. The run's end stops them
(atexit); an owner that ends without atexit (a tune_gemm.run.workers worker leaves through os._exit; kill -9) leaves none
behind either: their queue to it breaks, and they exit.
"""

from __future__ import annotations

import atexit
import os
import queue
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from multiprocessing.pool import ThreadPool
from pathlib import Path

from tune_gemm.compile.faults import injected_faults, trigger
from tune_gemm.generate.loader import ModuleCache


@dataclass
class CompileOutcome:
    compiled: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # config name -> reason
    resources: dict[str, dict] = field(default_factory=dict)  # config name -> registers/spills/shared
    seconds: float = 0.0

    def absorb(self, other: CompileOutcome) -> None:
        """Add what another compile stage did (a later round, another chunk of the size) to this outcome."""
        self.compiled += other.compiled
        self.failed.update(other.failed)
        self.resources.update(other.resources)
        self.seconds += other.seconds


POOLS = ("process", "thread")
CompileResult = tuple[str, str | None, dict]  # config name, failure reason (None: compiled), resources
Task = tuple[str, str]  # config name, the module to load it from


# Configs handed to each worker process at a time: enough that a worker finishing one finds the next queued, few
# enough that a stream closed early leaves little compiling on.
WINDOW = 2
# Part modules a worker process keeps loaded (with the kernels it compiled from them): a size's space in
# visiting order reaches a part's configs together, so a few recent parts are all a worker needs.
WORKER_MODULES = 16


class _Worker:
    """What compiles in one process (shared by the threads of a thread pool): modules loaded as needed."""

    def __init__(self, module_limit: int | None = None):
        self.modules = ModuleCache(module_limit)
        self.faults = injected_faults()

    def compile(self, task: Task) -> CompileResult:
        name, path = task
        compilers = self.modules.get(path).COMPILERS  # a module that does not load fails the stage, not a config
        try:
            if self.faults.get(name) == "compile":
                trigger("compile", on_gpu=False)
            return name, None, compilers[name]() or {}
        except Exception as error:  # any compiler error only disqualifies this config
            reason = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
            return name, reason, {}


_worker: _Worker | None = None  # a process pool worker's own


def _start_worker(ready) -> None:
    """A worker process's start: load the compiler as its first config would, then report its pid on `ready`."""
    global _worker
    _worker = _Worker(WORKER_MODULES)
    _load_compiler()
    ready.put(os.getpid())


def _load_compiler() -> None:
    """Import Triton and open its GPU driver: seconds a worker spends once, before it is counted as ready."""
    import triton

    if os.environ.get("TRITON_INTERPRET") == "1":
        return
    try:
        triton.runtime.driver.active.get_current_target()
    except RuntimeError:  # no GPU driver: each config's compile fails on it and records the reason
        pass


# Beside a generated module: what the compiler printed while a config of it failed to compile, one file per config.
COMPILER_LOGS = "compile_errors"


def _compile_in_worker(task: Task) -> CompileResult:
    """Compile in a worker process with file descriptor 2 captured: Triton's MLIR passes print their diagnostics
    there, dozens of lines for each config that fails, which would bury the tuner's own output. A failed config's
    go to its log file in COMPILER_LOGS, and their first error into its reason; a compiled config's are dropped."""
    with tempfile.TemporaryFile() as captured:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(captured.fileno(), 2)
        try:
            name, reason, resources = _worker.compile(task)
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        if reason is None:
            return name, reason, resources
        captured.seek(0)
        printed = captured.read().decode(errors="replace")
    return name, with_compiler_log(reason, printed, Path(task[1]).parent / COMPILER_LOGS / f"{name}.log"), resources


def with_compiler_log(reason: str, printed: str, log: Path) -> str:
    """`reason` with what the compiler printed: the whole of it written to `log`, its first error named."""
    if not printed.strip():
        return reason
    log.parent.mkdir(exist_ok=True)
    log.write_text(printed)
    error = next((line.split("error: ", 1)[1].strip() for line in printed.splitlines() if "error: " in line), None)
    return f"{reason} ({error}; compiler log {log})" if error else f"{reason} (compiler log {log})"


class _WorkerProcesses:
    """The run's pool of spawned compile workers: started by the first stream that needs it (or ahead of it,
    tune_gemm.run.start_up), kept for the next one with the same number of workers and the same environment (workers read
    theirs when they start: the Triton cache they fill, injected faults), else replaced."""

    def __init__(self):
        self._pool = None
        self._started_as: tuple[int, dict[str, str]] | None = None
        self._ready = None  # where each worker reports once it has loaded the compiler
        self._ready_count = 0
        self.starts = 0  # pools started so far

    def get(self, size: int):
        """The pool of `size` workers for the current environment, started (not waited for) when there is none."""
        wanted = (size, dict(os.environ))
        if self._pool is None or self._started_as != wanted:
            self.stop()
            import multiprocess

            context = multiprocess.get_context("spawn")
            self._ready, self._ready_count = context.Queue(), 0
            self._pool = context.Pool(size, initializer=_start_worker, initargs=(self._ready,))
            self._started_as = wanted
            self.starts += 1
        return self._pool

    def wait_ready(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds until every worker of the running pool has loaded the compiler; whether
        they all have."""
        if self._pool is None:
            return False
        deadline = time.monotonic() + timeout
        while self._ready_count < self._started_as[0]:
            try:
                self._ready.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return False
            self._ready_count += 1
        return True

    @property
    def running(self) -> bool:
        return self._pool is not None

    def stop(self) -> None:
        """End the workers now, whatever they are compiling."""
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None
            self._ready.close()
            self._ready = None


WORKER_PROCESSES = _WorkerProcesses()
atexit.register(WORKER_PROCESSES.stop)


def compile_stream(module_path: Path, names: list[str], workers: int, interpret: bool, pool: str = "process",
                   parts: Mapping[str, Path] | None = None) -> Iterator[CompileResult]:
    """Compile `names` with `workers` workers of kind `pool`, each config from its module in `parts` (tune_gemm.generate.parts)
    or else from the module at `module_path`; yields each result as it completes, roughly in the order of
    `names`. Closing the iterator early hands out no more configs; process workers stay for the next stream."""
    if pool not in POOLS:
        raise ValueError(f"compile pool must be one of {POOLS}, got {pool!r}")
    workers = max(1, workers)
    tasks = [(name, str((parts or {}).get(name, module_path))) for name in names]
    if interpret:  # the interpreter runs kernels from source: nothing to build, the helpers run in this process
        yield from map(_Worker().compile, tasks)
    elif pool == "thread":
        with ThreadPool(workers) as threads:
            yield from threads.imap_unordered(_Worker().compile, tasks)
    else:
        try:
            yield from _windowed(WORKER_PROCESSES.get(workers), tasks, WINDOW * workers)
        except GeneratorExit:  # closed early: the workers finish the configs handed out and stay for the next stream
            raise
        except BaseException:
            WORKER_PROCESSES.stop()
            raise


def _windowed(pool, tasks: list[Task], window: int) -> Iterator[CompileResult]:
    """Each task's result from `pool`'s workers as it completes, never more than `window` tasks handed out and not
    yet reported; a worker's exception (a module that does not load) is raised here."""
    results: queue.SimpleQueue = queue.SimpleQueue()
    pending = iter(tasks)
    handed_out = 0

    def hand_out_next() -> None:
        nonlocal handed_out
        task = next(pending, None)
        if task is not None:
            pool.apply_async(_compile_in_worker, (task,), callback=results.put, error_callback=results.put)
            handed_out += 1

    for _ in range(window):
        hand_out_next()
    while handed_out:
        result = results.get()
        handed_out -= 1
        if isinstance(result, BaseException):
            raise result
        hand_out_next()
        yield result


def compile_all(module_path: Path, names: list[str], workers: int, interpret: bool, on_done=None,
                pool: str = "process", parts: Mapping[str, Path] | None = None) -> CompileOutcome:
    """Compile `names` from the module or their parts (see compile_stream); on_done(name) after each."""
    outcome = CompileOutcome()
    started = time.perf_counter()
    for result in compile_stream(module_path, names, workers, interpret, pool, parts):
        add_result(outcome, result)
        if on_done:
            on_done(result[0])
    outcome.seconds = time.perf_counter() - started
    return outcome


def add_result(outcome: CompileOutcome, result: CompileResult) -> None:
    name, reason, resources = result
    if reason is None:
        outcome.compiled.append(name)
        outcome.resources[name] = resources
    else:
        outcome.failed[name] = reason


def default_workers() -> int:
    return os.cpu_count() or 1
