"""What the benchmark scripts do at their edges: read a sizes or results file, pick the entries a --sizes list names,
require a GPU, and end on bad input or a missing GPU with one line on stderr and a non-zero exit (as
tune_gemm does, tune_gemm.core.errors), never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from tune_gemm.core.errors import UserError

if TYPE_CHECKING:
    from tune_gemm.files.sizes import SizeRequest


def chosen_entries(requests: list[SizeRequest], spec: str | None) -> list[tuple[int, SizeRequest]]:
    """`--sizes 1,3,4096x4096x4096`: (1-based number, entry) of the entries named by number or MxNxK, each once, in
    the list's order; all when `spec` is empty. UserError for a name that matches no entry."""
    numbered = list(enumerate(requests, start=1))
    if not spec:
        return numbered
    chosen: list[tuple[int, SizeRequest]] = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        hits = [(i, r) for i, r in numbered if item == str(i) or item == f"{r.problem.M}x{r.problem.N}x{r.problem.K}"]
        if not hits:
            raise UserError(f"--sizes: {item!r} names no entry of the sizes file")
        chosen += [hit for hit in hits if hit not in chosen]
    return chosen


def file_entries(path: Path) -> list[SizeRequest]:
    """Every entry of a sizes or results file, fp16 where it names no dtype (tune_gemm's default); UserError for a
    missing, unreadable or malformed file."""
    # the tuner's modules import torch: a script's --help need not wait for it
    from tune_gemm.core.dtypes import DTYPES
    from tune_gemm.core.problem import GemmProblem
    from tune_gemm.files.sizes import load_sizes

    fp16 = DTYPES["fp16"]
    return load_sizes(path, GemmProblem(1, 1, 1, fp16, fp16, fp16))


def recorded_winners(path: Path, script: str, sizes: str | None = None) -> list[SizeRequest]:
    """The entries of a results file that `sizes` names (chosen_entries; all by default), each with its config;
    UserError for a file that is not one, or an entry that has no config (a plain sizes file: `script` needs the
    tuner's results)."""
    from tune_gemm.run.pipeline import (
        require_config,  # imports pandas and the pipeline: only once a script runs
    )

    requests = file_entries(path)
    for number, request in enumerate(requests, 1):
        require_config(request.config, f"{path} entry {number}", script)
    return [request for _, request in chosen_entries(requests, sizes)]


def require_gpu() -> None:
    """UserError where torch sees no GPU (CUDA, or ROCm through torch.cuda): the scripts time kernels on one."""
    import torch

    if not torch.cuda.is_available():
        raise UserError("needs a GPU, and torch sees none (torch.cuda.is_available() is False)")


def run_script(script: str, main: Callable[[], int]) -> int:
    """main()'s exit code; a UserError raised in it becomes `script: error: message` on stderr and its exit code."""
    try:
        return main()
    except UserError as error:
        print(f"{script}: error: {error}", file=sys.stderr)
        return error.exit_code
