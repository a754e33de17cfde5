"""tune_gemm.core.problem.GemmProblem: C^T = B^T A^T as a problem of its own (what a SWAP_AB config computes)."""

from __future__ import annotations

from dataclasses import replace

from helpers import problem

from tune_gemm.core.dtypes import DTYPES


def test_the_transposed_problem_swaps_the_operands_and_their_layouts():
    p = replace(problem(4095, 4097, 1023, col_b=True), dtype_a=DTYPES["fp8"], dtype_c=DTYPES["fp16"])
    t = p.transposed()
    assert (t.M, t.N, t.K) == (4097, 4095, 1023)
    assert (t.dtype_a, t.dtype_b, t.dtype_c) == (p.dtype_b, p.dtype_a, p.dtype_c)
    assert (t.col_a, t.col_b) == (False, True)  # B^T of a column-major B is row-major; A^T of a row-major A is not
    assert t.transposed() == p
    assert t.flops == p.flops


def test_arithmetic_intensity_counts_each_operand_moved_once():
    assert problem(1, 4096, 4096).arithmetic_intensity == 2 * 4096 * 4096 / (2 * (4096 + 4096 * 4096 + 4096))
    p = problem(4096, 4096, 4096)
    assert p.arithmetic_intensity == 4096 / 3  # 2 n^3 flops over three n^2 matrices of 2 bytes
    fp8 = replace(p, dtype_a=DTYPES["fp8"], dtype_b=DTYPES["fp8"])
    assert fp8.arithmetic_intensity == 2 * 4096**3 / (4096**2 * (1 + 1 + 2))  # 1-byte operands, a 2-byte C
