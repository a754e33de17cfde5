"""tune_gemm.measure.baselines: which library call is the baseline for each dtype and layout, that each computes the
configs' product on their own operands (scales, bias, int32), and that the results entry names it."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from helpers import problem

from tune_gemm.core.config import Config
from tune_gemm.files.results import ResultEntry
from tune_gemm.kernels.matmul_family import Problem, make_operands, poison, relative_error
from tune_gemm.measure.baselines import (
    FP8_DEQUANTIZED,
    INT8_AS_FP32,
    INT_MM,
    MATMUL,
    MATMUL_TF32,
    SCALED_MM,
    baseline_for,
    baseline_label,
    peer_precision,
)


def _family_problem(M, N, K, dtype, dtype_c, col_a=False, col_b=False, bias=False) -> Problem:
    """The kernel family's Problem for the tuner's problem of these sizes, dtypes and layouts."""
    p = problem(M, N, K, dtype, col_a, col_b, dtype_c)
    return Problem(M, N, K, col_a, col_b, p.dtype_a.torch_dtype, p.dtype_b.torch_dtype, p.dtype_c.torch_dtype,
                   p.dtype_a.tolerance, bias)


CASES = [  # dtype, dtype_c, M, N, K, col_a, col_b: the baseline that runs
    ("fp16", "fp16", 33, 17, 40, False, False, MATMUL),
    ("fp32", "fp32", 33, 17, 40, True, True, MATMUL_TF32),
    ("fp8", "fp16", 33, 32, 48, False, True, SCALED_MM),
    ("fp8", "fp32", 33, 32, 48, False, False, FP8_DEQUANTIZED),  # B row-major
    ("fp8", "bf16", 33, 32, 48, True, True, FP8_DEQUANTIZED),  # A column-major
    ("fp8", "fp16", 33, 17, 48, False, True, FP8_DEQUANTIZED),  # N not a multiple of 16
    ("bf8", "fp16", 33, 32, 48, False, True, FP8_DEQUANTIZED),  # no e5m2 x e5m2 in cuBLASLt
    ("int8", "int32", 33, 24, 40, False, False, INT_MM),
    ("int8", "int32", 16, 24, 40, False, True, INT8_AS_FP32),  # M <= 16
    ("int8", "int32", 33, 20, 40, False, False, INT8_AS_FP32),  # N not a multiple of 8
]


@pytest.mark.parametrize("dtype,dtype_c,M,N,K,col_a,col_b,expected", CASES)
@pytest.mark.parametrize("bias", [False, True])
def test_each_baseline_computes_the_configs_product(dtype, dtype_c, M, N, K, col_a, col_b, expected, bias):
    p = _family_problem(M, N, K, dtype, dtype_c, col_a, col_b, bias)
    sets = [make_operands(p, "cpu", seed=seed) for seed in (1, 2)]
    baseline = baseline_for(sets)
    assert baseline.label == expected == baseline_label(problem(M, N, K, dtype, col_a, col_b, dtype_c))
    for launch, operands in enumerate(sets):
        a, b, c, *extra = operands
        poison(c)
        with baseline.precision():
            baseline(launch)
        if expected in (FP8_DEQUANTIZED, INT8_AS_FP32):
            continue  # the fallback writes its own output, in its own dtype; timing only
        assert relative_error(c, a, b, *extra) <= p.tolerance, (launch, expected)


def test_a_fallback_is_fed_the_dequantized_operands():
    p = _family_problem(33, 32, 48, "fp8", "fp32")
    a, b, c, bias, scale_a, scale_b = make_operands(p, "cpu")
    baseline = baseline_for([(a, b, c, bias, scale_a, scale_b)])
    with baseline.precision():
        baseline(0)
    assert relative_error(c, a, b, None, scale_a, scale_b) < 1e-5  # fp32: only the dequantization rounds


def test_the_results_entry_names_a_baseline_other_than_torch_matmul():
    def entry(p):
        return ResultEntry(p, Config(32, 32, 32), 1.0, 2.0, "gpu", "cupti", matmul_time_us=1.5).to_mapping()

    assert "matmul_baseline" not in entry(problem(64, 64, 64))
    fp8 = entry(problem(64, 64, 64, "fp8", col_b=True, dtype_c="fp16"))
    assert fp8["matmul_baseline"] == SCALED_MM and fp8["dtype_a"] == "fp8" and fp8["dtype_c"] == "fp16"
    assert entry(problem(64, 64, 64, "bf8", dtype_c="bf16"))["matmul_baseline"] == FP8_DEQUANTIZED
    assert entry(replace(problem(64, 64, 64, "int8", dtype_c="int32"), bias=True))["matmul_baseline"] == INT_MM
    no_baseline = ResultEntry(problem(64, 64, 64, "fp8", dtype_c="fp16"), Config(32, 32, 32), 1.0, 2.0, "g", "c")
    assert "matmul_baseline" not in no_baseline.to_mapping()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int8])
@pytest.mark.parametrize("before", ["highest", "medium"])
def test_peers_of_fp32_inputs_run_as_tf32_and_the_precision_before_comes_back(dtype, before):
    saved = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(before)
    try:
        with peer_precision(dtype):
            inside = torch.get_float32_matmul_precision()
        assert inside == ("high" if dtype == torch.float32 else before)
        assert torch.get_float32_matmul_precision() == before
        with pytest.raises(KeyError), peer_precision(dtype):
            raise KeyError("a failed timing")
        assert torch.get_float32_matmul_precision() == before
    finally:
        torch.set_float32_matmul_precision(saved)


def test_an_fp32_baseline_enters_tf32():
    sets = [make_operands(_family_problem(33, 17, 40, "fp32", "fp32"), "cpu")]
    baseline = baseline_for(sets)
    with baseline.precision():
        assert torch.get_float32_matmul_precision() == "high"
