"""Part modules: one size's configs written again in slices of at most PART_SIZE, so a process loads only the
kernels it needs.

Importing a generated module costs milliseconds per kernel (Triton's JIT decorator reads and tokenizes each
kernel's source, and Python's inspect copies the rest of the file's lines for each one), so the module of a
large pruned space takes half a minute to import, once in every compile worker and in every timing child
before it can start. A part is the writer's output for a contiguous slice of the configs (in the order of the
list): the same family and the same kernel text per config. The tuner's compile workers and children load the
part of each config they handle (tune_gemm.generate.loader.ModuleCache), while the complete generated_kernel_<size>.py
stays what users open.

A binary compiled from a part is found by a process that loads the same config from another module, because
Triton's cache key does not depend on the file (triton/runtime/jit.py, JITCallable.cache_key): it hashes the
kernel's source from its `def` on, the cache keys of the JIT functions it calls (recursively, by the same
rule: DependenciesFinder), the names and values of the constexpr globals they read, and the starting line,
which tune_gemm.generate.loader pins to 0. The module's name and path enter no key (DependenciesFinder uses the function's
qualified name for error messages only); the compiler adds the specialization, options, backend and Triton
version (triton/compiler/compiler.py, get_cache_key). Only the debug locations inside a binary name the file
that compiled it first.
"""

from __future__ import annotations

from pathlib import Path

from tune_gemm.core.config import Config
from tune_gemm.core.problem import GemmProblem
from tune_gemm.generate.writer import generated_filename, write_module

PART_SIZE = 256  # configs per part: its import takes well under a second


def part_filename(problem: GemmProblem, index: int) -> str:
    return generated_filename(problem).removesuffix(".py") + f"_part{index}.py"


def write_parts(problem: GemmProblem, configs: list[Config], folder: Path, size: int | None = None) -> dict[str, Path]:
    """Write `configs` into `folder` as part modules of at most `size` (default PART_SIZE) configs each, in list
    order; returns config name -> the part that holds it."""
    size = size or PART_SIZE
    parts: dict[str, Path] = {}
    for index, start in enumerate(range(0, len(configs), size)):
        chunk = configs[start:start + size]
        path = write_module(problem, chunk, folder, part_filename(problem, index))
        parts.update((str(config), path) for config in chunk)
    return parts
