"""On a GPU (`pytest -m gpu`, device machine): bench_gemm's max-autotune column compiles the fp8 baseline,
torch._scaled_mm with per-tensor scales, and its C is right against float64."""

from __future__ import annotations

import pytest
import torch
from helpers import load_benchmark

from tune_gemm.core.dtypes import DTYPES
from tune_gemm.kernels.matmul_family import Problem, make_operands, relative_error
from tune_gemm.measure.baselines import SCALED_MM

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def test_max_autotune_compiles_scaled_mm_with_per_tensor_scales():
    fp8 = DTYPES["fp8"]
    problem = Problem(M=256, N=512, K=1024, col_a=False, col_b=True, dtype_a=fp8.torch_dtype, dtype_b=fp8.torch_dtype,
                      dtype_c=torch.float16, tolerance=fp8.tolerance)
    a, b, c, bias, scale_a, scale_b = make_operands(problem, "cuda", seed=3)
    assert scale_a.shape == (1,)  # the shape the tuner's operands have, which Inductor's templates failed to lower
    bench = load_benchmark("bench_gemm")
    call, why = bench.compiled_peer(*bench.inductor_target(SCALED_MM, (a, b, c, bias, scale_a, scale_b)))
    assert why is None, why
    result = call()  # a C of its own, not written into c
    assert result.dtype == torch.float16
    assert relative_error(result, a, b, None, scale_a, scale_b) < problem.tolerance
