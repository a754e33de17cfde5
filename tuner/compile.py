"""Compile stage: every config of a generated module compiled in parallel, results streamed as they come.

Workers (`--num_threads`) are separate processes (spawned, so none inherits a GPU context) or threads
of the tuner (`--compile_pool thread`: no start-up, and ptxas runs as a process of its own; how much of
Triton's own passes run without holding the GIL decides whether they keep up, which
benchmarks/bench_compile.py measures). Each imports the
generated module once and calls its try_config_* helpers, which fill Triton's on-disk cache that the
profiling child then loads from. A config that fails to compile is recorded, never fatal.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from multiprocessing.pool import ThreadPool
from pathlib import Path

from gen.loader import load_module
from profiling.faults import injected_faults, trigger

_module = None
_faults: dict[str, str] = {}


@dataclass
class CompileOutcome:
    compiled: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # config name -> reason
    resources: dict[str, dict] = field(default_factory=dict)  # config name -> registers/spills/shared
    seconds: float = 0.0


def _load(module_path: str) -> None:
    global _module, _faults
    _faults = injected_faults()
    _module = load_module(module_path)


def _compile_one(name: str) -> tuple[str, str | None, dict]:
    try:
        if _faults.get(name) == "compile":
            trigger("compile", on_gpu=False)
        return name, None, _module.COMPILERS[name]() or {}
    except Exception as error:  # any compiler error only disqualifies this config
        reason = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
        return name, reason, {}


POOLS = ("process", "thread")
CompileResult = tuple[str, str | None, dict]  # config name, failure reason (None: compiled), resources


def compile_stream(module_path: Path, names: list[str], workers: int, interpret: bool,
                   pool: str = "process") -> Iterator[CompileResult]:
    """Compile `names` from the module with `workers` workers of kind `pool`; yields each result as it
    completes, roughly in the order of `names`. Closing the iterator early stops the workers."""
    if pool not in POOLS:
        raise ValueError(f"compile pool must be one of {POOLS}, got {pool!r}")
    workers = max(1, min(workers, len(names)))
    if interpret:  # the interpreter runs kernels from source: nothing to build, the helpers run in this process
        _load(str(module_path))
        yield from map(_compile_one, names)
    elif pool == "thread":
        _load(str(module_path))
        with ThreadPool(workers) as threads:
            yield from threads.imap_unordered(_compile_one, names)
    else:
        import multiprocess

        context = multiprocess.get_context("spawn")
        with context.Pool(workers, initializer=_load, initargs=(str(module_path),)) as processes:
            yield from processes.imap_unordered(_compile_one, names)


def compile_all(module_path: Path, names: list[str], workers: int, interpret: bool, on_done=None,
                pool: str = "process") -> CompileOutcome:
    """Compile `names` from the module (see compile_stream); on_done(name) after each."""
    outcome = CompileOutcome()
    started = time.perf_counter()
    for result in compile_stream(module_path, names, workers, interpret, pool):
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
