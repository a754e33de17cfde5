"""On a GPU (`pytest -m gpu`): tiles of fewer rows than a matrix instruction (BLOCK_M < 16, multiplied without one:
tune_gemm.kernels.matmul_family.row_products) compile ahead of launch and are right against float64, with C poisoned, at M < 16,
odd N and K, both B layouts, split K every way, bias, STATIC_SHAPE and every input type."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from helpers import check_compiled_ahead, needs_fp8, problem

from tune_gemm.core.config import ATOMIC_REDUCE, Config

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

CONFIGS = [
    Config(1, 16, 256, 1, 1, 4, 1),
    Config(1, 4, 1024, 1, 1, 4, 1),  # few columns, long rows: a column-major B's best (BENCHMARKS.md)
    Config(1, 1, 2048, 1, 1, 8, 2),
    Config(2, 64, 32, 1, 4, 1, 3, FUSED_REDUCE=ATOMIC_REDUCE),  # a row-major B's: wide, short, split
    Config(4, 8, 512, 4, 2, 4, 2, FUSED_REDUCE=1),
    Config(8, 16, 64, 1, 2, 2, 2),  # split K summed by the reduction kernel
    Config(1, 32, 128, 1, 1, 2, 2, STATIC_SHAPE=1),
    Config(1, 1, 4096, 1, 1, 32, 1, STATIC_SHAPE=1),  # a row of 4096 over 1024 threads, masked where K is shorter
]
SIZES = [(1, 4096, 4096, True), (1, 999, 1000, False), (3, 129, 4101, True), (7, 33, 777, False), (15, 300, 64, True)]


@pytest.mark.parametrize("M,N,K,col_b", SIZES)
@pytest.mark.parametrize("bias", [False, True])
def test_small_row_tiles_compiled_ahead_and_correct(tmp_path, M, N, K, col_b, bias):
    check_compiled_ahead(tmp_path, replace(problem(M, N, K, col_b=col_b), bias=bias), CONFIGS)


@pytest.mark.parametrize("dtype,dtype_c", [("bf16", "bf16"), ("fp32", "fp32"),
                                           pytest.param("fp8", "fp16", marks=needs_fp8), ("int8", "int32"),
                                           ("fp16", "fp32")])
@pytest.mark.parametrize("M,N,K,col_b", [(1, 1000, 4096, True), (5, 257, 1024, False)])
def test_small_row_tiles_every_input_type(tmp_path, dtype, dtype_c, M, N, K, col_b):
    check_compiled_ahead(tmp_path, problem(M, N, K, dtype, col_b=col_b, dtype_c=dtype_c), CONFIGS)
