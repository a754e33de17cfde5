"""Helpers shared by the tests: small problems and a small range space."""

from __future__ import annotations

from tuner.dtypes import DTYPES
from tuner.problem import GemmProblem

SMALL_SPACE_YAML = """\
BLOCK_SIZE_M: [16, 32]
BLOCK_SIZE_N: [16, 32]
BLOCK_SIZE_K: [16, 32]
GROUP_SIZE_M: [1, 2]
SPLIT_K: [1, 2]
num_warps: [1]
num_stages: [1, 2]
"""


def problem(M: int, N: int, K: int, dtype: str = "fp16", col_a: bool = False, col_b: bool = False,
            dtype_c: str | None = None) -> GemmProblem:
    d = DTYPES[dtype]
    return GemmProblem(M, N, K, d, d, DTYPES[dtype_c or dtype], col_a=col_a, col_b=col_b)
