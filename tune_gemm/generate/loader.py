"""Loading a generated kernel module, the same way in the compile workers and in the profiling child.

Triton's on-disk cache key of a kernel includes the line its definition starts on. A config's kernel
has the same source in the module of every size, but not the same line (each size's pruned list is
different), so without help each size would compile again binaries that an earlier size already
built. Loading pins every kernel's line to 0: the key is then the kernel's source, its dependencies
and its specialization, and a size list compiles each distinct binary once. (The line only feeds the
key; the locations in the compiled code come from the real line, read when the kernel was defined.)
The family functions a kernel calls live in the kernel family modules (tune_gemm.kernels), the same file
and lines for every generated module, so their own keys need no pin. Loading also settles the keys of
those helper functions (settle_helper_keys), so that a kernel's key does not depend on which kernel a
process happened to build first. Both the compile workers and the child
load modules through here, so their keys agree; they load each module once, on first need (ModuleCache),
since they take configs from several part modules (tune_gemm.generate.parts).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from collections import OrderedDict
from pathlib import Path
from types import ModuleType

from tune_gemm.core.config import KERNEL_PREFIX

FAMILIES = "tune_gemm.kernels."  # the modules whose Triton functions generated kernels call


def load_module(path: str | Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pin_kernel_lines(module)
    settle_helper_keys(module)
    return module


def pin_kernel_lines(module: ModuleType) -> int:
    """Pin the cache-key line of every Triton kernel defined in `module`, before any is compiled; returns how
    many. Under the interpreter kernels are no JIT functions and nothing changes."""
    functions = _own_jit_functions(module)
    for value in functions.values():
        value.starting_line_number = 0
    return len(functions)


def _own_jit_functions(module: ModuleType) -> dict:
    from triton.runtime.jit import JITCallable

    return {name: value for name, value in vars(module).items()
            if isinstance(value, JITCallable) and value.__module__ == module.__name__}


def helper_functions(module: ModuleType) -> list:
    """The Triton functions `module`'s kernels may call: its own Triton functions but the per-config kernels, and
    every Triton function of the kernel family modules it imports Triton functions from, and of the family modules
    those import from, and so on (Triton's own functions are no helpers). Under the interpreter there are none."""
    from triton.runtime.jit import JITCallable

    helpers: dict[int, object] = {}
    visited = {module.__name__}
    pending = [module]
    while pending:
        current = pending.pop()
        for name, value in vars(current).items():
            if not isinstance(value, JITCallable):
                continue
            own = value.__module__ == module.__name__
            if (own and name.startswith(KERNEL_PREFIX)) or not (own or value.__module__.startswith(FAMILIES)):
                continue
            helpers.setdefault(id(value), value)
            owner = sys.modules.get(value.__module__)
            if owner is not None and owner.__name__ not in visited:
                visited.add(owner.__name__)
                pending.append(owner)
    return list(helpers.values())


def settle_helper_keys(module: ModuleType) -> int:
    """Compute the cache keys of the helper functions `module`'s kernels call (helper_functions: the kernel
    families') again and again until they stop changing; returns how many rounds that took (0 under the
    interpreter, where there are no keys).

    Triton 3.6 folds the global constants a callee uses into its caller's key from what the callee recorded
    *before* its own key is computed. So a kernel's key depends on which kernels the process asked for before
    it: a plain kernel asked for before any TMA kernel misses UPCAST_DOT_OPERANDS (used by dot_accumulate,
    which both families call), one asked for after gets it. A compile worker and the timing child ask in
    different orders: on the H100 the child missed the workers' binaries of most plain-family configs and
    compiled them again itself, one at a time (63 of 143 configs of one round at 4096³). With the helpers
    settled first, every kernel's key is the same in every process. Triton 3.9 computes callees first: its
    keys do not change after the first round."""
    helpers = helper_functions(module)
    if not helpers:
        return 0
    keys = None
    for rounds in range(1, len(helpers) + 2):
        for helper in helpers:
            helper.hash = None  # recomputed below from the constants its callees recorded last round
        settled = [helper.cache_key for helper in helpers]
        if settled == keys:
            return rounds
        keys = settled
    return len(helpers) + 1


class ModuleCache:
    """Generated modules by path, each loaded when a config first needs it, and again once the file at its path
    is another (a writer replaces a module whole, gen.write_module: `--benchmark` writes the module of each entry
    at its size's path, so two configs of one size come one after the other from one path); safe to share between
    threads.

    With a `limit`, only that many of the most recently used modules are kept (a compile worker that lives
    through a whole run would otherwise hold every part of every size, with the kernels it compiled)."""

    def __init__(self, limit: int | None = None):
        self._modules: OrderedDict[str, tuple[tuple | None, ModuleType]] = OrderedDict()
        self._lock = threading.Lock()
        self._limit = limit

    def get(self, path: str | Path) -> ModuleType:
        key = str(path)
        version = file_version(key)
        held = self._modules.get(key)  # loaded already: no waiting on a thread that loads another module
        if held is None or not _current(held[0], version):
            with self._lock:
                held = self._modules.get(key)
                if held is None or not _current(held[0], version):
                    held = self._modules[key] = (version, load_module(key))
                    self._modules.move_to_end(key)
                    while self._limit and len(self._modules) > self._limit:
                        self._modules.popitem(last=False)
        elif self._limit:
            with self._lock:
                if key in self._modules:
                    self._modules.move_to_end(key)
        return held[1]


def file_version(path: str | Path) -> tuple | None:
    """What tells one file at `path` from the next one written there: its inode (a replaced file has a new one),
    modification time and size; None when there is no file (a module removed after it was loaded)."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_ino, status.st_mtime_ns, status.st_size


def _current(loaded: tuple | None, now: tuple | None) -> bool:
    # a module whose file has gone stays usable as loaded
    return now is None or loaded == now
