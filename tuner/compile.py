"""Compile stage: every config of a generated module compiled in parallel, before any timing.

Workers are separate processes (spawned, so none inherits a GPU context); each imports the
generated module once and calls its try_config_* helpers, which fill Triton's on-disk cache that
the profiling child then loads from. A config that fails to compile is recorded, never fatal.
"""

from __future__ import annotations

import importlib.util
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

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
    spec = importlib.util.spec_from_file_location(Path(module_path).stem, module_path)
    _module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(_module)


def _compile_one(name: str) -> tuple[str, str | None, dict]:
    try:
        if _faults.get(name) == "compile":
            trigger("compile", on_gpu=False)
        return name, None, _module.COMPILERS[name]() or {}
    except Exception as error:  # any compiler error only disqualifies this config
        reason = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
        return name, reason, {}


def compile_all(module_path: Path, names: list[str], jobs: int, interpret: bool, on_done=None) -> CompileOutcome:
    """Compile `names` from the module with `jobs` worker processes; on_done(name) after each."""
    outcome = CompileOutcome()
    started = time.perf_counter()
    if interpret:  # the interpreter runs kernels from source: nothing to build, the helpers run in this process
        _load(str(module_path))
        _collect(outcome, map(_compile_one, names), on_done)
    else:
        import multiprocess

        context = multiprocess.get_context("spawn")
        with context.Pool(max(1, min(jobs, len(names))), initializer=_load, initargs=(str(module_path),)) as pool:
            _collect(outcome, pool.imap_unordered(_compile_one, names), on_done)
    outcome.seconds = time.perf_counter() - started
    return outcome


def _collect(outcome: CompileOutcome, results, on_done) -> None:
    for name, reason, resources in results:
        if reason is None:
            outcome.compiled.append(name)
            outcome.resources[name] = resources
        else:
            outcome.failed[name] = reason
        if on_done:
            on_done(name)


def default_jobs() -> int:
    return os.cpu_count() or 1
