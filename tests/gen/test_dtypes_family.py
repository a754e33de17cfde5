"""fp8 (e4m3/e5m2, per-tensor scales) and int8 (int32 output) through the plain kernel family, under the interpreter:
correct vs float64 at odd sizes, both layouts, split-K, bias; scales and int32 accumulation really applied."""

from __future__ import annotations

import pytest
import torch
from helpers import problem

from tune_gemm.core.config import Config
from tune_gemm.core.problem import GemmProblem
from tune_gemm.generate import write_module
from tune_gemm.generate.loader import load_module
from tune_gemm.kernels import matmul_family as family

# BLOCK_K 32: the smallest K tile of a 1-byte dot (prune rule matrix_instruction); the second config splits K.
CONFIGS = [Config(32, 16, 32, 1, 1, 1, 1), Config(16, 32, 32, 2, 2, 1, 2)]
VARIANTS = [("fp8", "fp16"), ("fp8", "bf16"), ("fp8", "fp32"), ("bf8", "fp16"), ("bf8", "fp32"), ("int8", "int32")]


def _module(tmp_path, p: GemmProblem, bias: bool = False):
    if bias:
        p = GemmProblem(p.M, p.N, p.K, p.dtype_a, p.dtype_b, p.dtype_c, p.col_a, p.col_b, bias=True)
    return load_module(write_module(p, CONFIGS, tmp_path))


@pytest.mark.parametrize("dtype,dtype_c", VARIANTS)
@pytest.mark.parametrize("col_a,col_b", [(False, False), (True, True), (False, True)])
@pytest.mark.parametrize("bias", [False, True])
def test_every_config_matches_float64_at_an_odd_size(tmp_path, interpreter_env, dtype, dtype_c, col_a, col_b, bias):
    # K=96 divides by BLOCK_K*SPLIT_K: the split-K config runs; K=71: a masked K loop (the split one still runs)
    p = problem(37, 19, 71 if col_a == col_b else 96, dtype, col_a, col_b, dtype_c)
    module = _module(tmp_path, p, bias)
    for name, launcher in module.LAUNCHERS.items():
        error = family.check_config(launcher, module.PROBLEM, "cpu", seed=3)
        assert error <= p.dtype_a.tolerance, (name, error)


@pytest.mark.parametrize("dtype", ["fp8", "bf8"])
def test_the_scales_are_applied_once_in_both_kernels(tmp_path, interpreter_env, dtype):
    module = _module(tmp_path, problem(33, 17, 64, dtype, dtype_c="fp32"), bias=True)
    a, b, c, bias, scale_a, scale_b = family.make_operands(module.PROBLEM, "cpu", seed=1)
    assert a.dtype == module.PROBLEM.dtype_a and scale_a.dtype == torch.float32 and scale_a.numel() == 1
    assert a.float().abs().max() == torch.finfo(a.dtype).max  # the operand fills the type's range
    for name, launcher in module.LAUNCHERS.items():
        launcher(a, b, c, bias, scale_a, scale_b)
        assert family.relative_error(c, a, b, bias, scale_a, scale_b) <= module.PROBLEM.tolerance, name
        # the scales are far from 1: leaving them out, or applying one twice, is far outside the tolerance
        assert family.relative_error(c, a, b, bias) > 0.5, name
        assert family.relative_error(c, a, b.float() * scale_b, bias, scale_a, scale_b) > 0.5, name


def test_int8_is_exact_where_fp32_accumulation_would_not_be(tmp_path, interpreter_env):
    # 127*127*2048 products reach ~3.3e7 > 2^24: only an int32 accumulator (and int32 split-K partials) is exact
    module = _module(tmp_path, problem(33, 17, 2048, "int8", dtype_c="int32"), bias=True)
    a, b, c, bias = family.make_operands(module.PROBLEM, "cpu", seed=2)
    a.fill_(127)
    b.fill_(127)
    bias.fill_(1)
    for name, launcher in module.LAUNCHERS.items():
        family.poison(c)
        launcher(a, b, c, bias)
        assert c.dtype == torch.int32 and bool((c == 127 * 127 * 2048 + 1).all()), name


def test_a_poisoned_int_output_left_unwritten_fails(tmp_path, interpreter_env):
    module = _module(tmp_path, problem(32, 32, 32, "int8", dtype_c="int32"))
    assert family.check_config(lambda a, b, c: c, module.PROBLEM, "cpu") > 1e3
    assert family.check_config(lambda a, b, c: c.copy_(a.int() @ b.int() + 1), module.PROBLEM, "cpu") > 0


@pytest.mark.parametrize("init_type", ["randn", "hpl", "trig_float", "zeros"])
def test_quantized_operands_for_every_init_type(tmp_path, interpreter_env, init_type):
    module = _module(tmp_path, problem(20, 24, 32, "int8", dtype_c="int32"))
    a, b, _ = family.make_operands(module.PROBLEM, "cpu", init_type=init_type)
    expected_peak = 0 if init_type == "zeros" else family.INT_RANGE
    assert a.dtype == torch.int8 and a.abs().max() == expected_peak and b.abs().max() == expected_peak
