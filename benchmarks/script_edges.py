"""What the benchmark scripts do at their edges: read the winners of a results file, require a GPU, and end on bad
input or a missing GPU with one line on stderr and a non-zero exit (as tune_gemm does, tuner.errors), never a
traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from tuner.dtypes import DTYPES
from tuner.errors import UserError
from tuner.pipeline import require_config
from tuner.problem import GemmProblem
from tuner.sizes import SizeRequest, load_sizes


def recorded_winners(path: Path, script: str) -> list[SizeRequest]:
    """Every entry of a results file, each with its config; UserError for a file that is not one, or an entry that
    has no config (a plain sizes file: `script` needs the tuner's results)."""
    fp16 = DTYPES["fp16"]
    requests = load_sizes(path, GemmProblem(1, 1, 1, fp16, fp16, fp16))
    for number, request in enumerate(requests, 1):
        require_config(request.config, f"{path} entry {number}", script)
    return requests


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
