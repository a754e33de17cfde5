"""Loading a generated kernel module, the same way in the compile workers and in the profiling child.

Triton's on-disk cache key of a kernel includes the line its definition starts on. A config's kernel
has the same source in the module of every size, but not the same line (each size's pruned list is
different), so without help each size would compile again binaries that an earlier size already
built. Loading pins every kernel's line to 0: the key is then the kernel's source, its dependencies
and its specialization, and a size list compiles each distinct binary once. (The line only feeds the
key; the locations in the compiled code come from the real line, read when the kernel was defined.)
Both the compile workers and the child load modules through here, so their keys agree; they load each
module once, on first need (ModuleCache), since they take configs from several part modules (gen.parts).
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from types import ModuleType


def load_module(path: str | Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pin_kernel_lines(module)
    return module


def pin_kernel_lines(module: ModuleType) -> int:
    """Pin the cache-key line of every Triton kernel defined in `module`, before any is compiled; returns how
    many. Under the interpreter kernels are no JIT functions and nothing changes."""
    from triton.runtime.jit import JITCallable

    pinned = 0
    for value in vars(module).values():
        if isinstance(value, JITCallable) and value.__module__ == module.__name__:
            value.starting_line_number = 0
            pinned += 1
    return pinned


class ModuleCache:
    """Generated modules by path, each loaded once, when a config first needs it; safe to share between threads."""

    def __init__(self):
        self._modules: dict[str, ModuleType] = {}
        self._lock = threading.Lock()

    def get(self, path: str | Path) -> ModuleType:
        key = str(path)
        module = self._modules.get(key)  # loaded already: no waiting on a thread that loads another module
        if module is None:
            with self._lock:
                module = self._modules.get(key)
                if module is None:
                    module = self._modules[key] = load_module(key)
        return module
