"""tune_gemm/kernels/matmul_family.py run knobs: the bias epilogue (--bias_vector), input initialisation (--init_type), and the
split-K partials summed in the GEMM (FUSED_REDUCE) with its reused arrival counters."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
from helpers import problem

from tune_gemm.core.config import ATOMIC_REDUCE, Config
from tune_gemm.generate import render, write_module
from tune_gemm.generate.loader import load_module
from tune_gemm.kernels import matmul_family as family
from tune_gemm.kernels.matmul_family import host as family_host
from tune_gemm.measure.run_knobs import INIT_TYPES

SPLIT_K_1 = Config(16, 16, 16, 1, 1, 1, 1)
SPLIT_K_4 = Config(16, 16, 16, 1, 4, 1, 1)
SPLIT_K_2 = Config(32, 16, 32, 2, 2, 1, 2)
SPLIT_K_4_FUSED = replace(SPLIT_K_4, FUSED_REDUCE=1)
SPLIT_K_4_ATOMIC = replace(SPLIT_K_4, FUSED_REDUCE=ATOMIC_REDUCE)


def _module(tmp_path, p, configs):
    path = write_module(p, configs, tmp_path)
    return load_module(str(path))


@pytest.mark.parametrize("config", [SPLIT_K_1, SPLIT_K_4, SPLIT_K_2, SPLIT_K_4_FUSED, SPLIT_K_4_ATOMIC], ids=str)
@pytest.mark.parametrize("col_a", [False, True])
def test_bias_is_added_once_per_row_with_and_without_split_k(tmp_path, interpreter_env, config, col_a):
    p = replace(problem(33, 17, 64, col_a=col_a), bias=True)
    module = _module(tmp_path, p, [config])
    launcher = module.LAUNCHERS[str(config)]
    a, b, c, bias = family.make_operands(module.PROBLEM, "cpu", seed=5)
    bias.mul_(8)  # as large as the products: a missing or repeated bias is far outside the tolerance
    c.fill_(float("nan"))
    launcher(a, b, c, bias)
    reference = a.double() @ b.double() + bias.double()[:, None]
    assert family.relative_error(c, a, b, bias) <= p.dtype_a.tolerance
    torch.testing.assert_close(c.double(), reference, rtol=2e-2, atol=2e-2)
    without = a.double() @ b.double()
    assert (c.double() - without).norm() / without.norm() > 0.5  # the bias really is in C
    assert family.check_config(launcher, module.PROBLEM, "cpu") <= p.dtype_a.tolerance


def test_the_check_fails_a_kernel_that_drops_the_bias(tmp_path, interpreter_env):
    module = _module(tmp_path, replace(problem(32, 32, 32), bias=True), [SPLIT_K_1])
    launcher = module.LAUNCHERS[str(SPLIT_K_1)]
    assert family.check_config(lambda a, b, c, bias: launcher(a, b, c), module.PROBLEM, "cpu") > 0.05


def test_bias_uses_the_shared_epilogue_helper():
    source = render(replace(problem(16, 16, 16), bias=True), [SPLIT_K_1, SPLIT_K_2, SPLIT_K_4_FUSED, SPLIT_K_4_ATOMIC],
                    "x.py")
    assert "bias=True" in source and "plus a bias per row of C" in source
    # the family's epilogue helper, called from the tile kernel (SPLIT_K 1), the split-K reduction and the fused one,
    # nowhere per config
    import inspect

    from tune_gemm.kernels.matmul_family import device

    family_source = inspect.getsource(device)
    assert "def add_row_bias(" in family_source and family_source.count("= add_row_bias(") == 3
    assert "add_row_bias" not in source


@pytest.mark.parametrize("col", [False, True])
def test_init_types_fill_as_named(interpreter_env, tmp_path, col):
    module = _module(tmp_path, problem(64, 48, 32, col_a=col), [SPLIT_K_1])
    filled = {init: family.make_operands(module.PROBLEM, "cpu", seed=1, init_type=init)[0].float()
              for init in INIT_TYPES}
    randn, hpl, trig, zeros = (filled[name] for name in ("randn", "hpl", "trig_float", "zeros"))
    assert abs(randn.mean()) < 0.1 and 0.8 < randn.std() < 1.2 and randn.abs().max() > 1
    assert hpl.min() >= -0.5 and hpl.max() <= 0.5 and hpl.std() > 0.2
    storage = trig.t() if col else trig  # sin of the position in memory, whatever the layout
    expected = torch.arange(64 * 32, dtype=torch.float64).sin().reshape(storage.shape)
    torch.testing.assert_close(storage.double(), expected, atol=1e-3, rtol=0)
    assert zeros.abs().max() == 0
    assert math.isclose(family.make_operands(module.PROBLEM, "cpu", seed=1)[0].float().std(), randn.std())


def test_unknown_init_type_is_refused(interpreter_env, tmp_path):
    module = _module(tmp_path, problem(16, 16, 16), [SPLIT_K_1])
    with pytest.raises(ValueError, match="init_type"):
        family.make_operands(module.PROBLEM, "cpu", init_type="ones")


def test_bias_vector_follows_init_type(interpreter_env, tmp_path):
    module = _module(tmp_path, replace(problem(16, 16, 16), bias=True), [SPLIT_K_1])
    assert family.make_operands(module.PROBLEM, "cpu", init_type="zeros")[3].abs().max() == 0
    bias = family.make_operands(module.PROBLEM, "cpu", init_type="trig_float")[3]
    assert bias.shape == (16,) and bias.dtype == torch.float16
    torch.testing.assert_close(bias.double(), torch.arange(16, dtype=torch.float64).sin(), atol=1e-3, rtol=0)


def test_arrival_counters_are_made_once_per_device_and_stream_and_grow_when_more_tiles_need_them(interpreter_env,
                                                                                                  tmp_path):
    family_host._kept_zero.clear()
    first = family.arrival_counters("cpu", 6)
    assert first.dtype == torch.int32 and first.numel() == 6 and not first.any()
    assert family.arrival_counters("cpu", 4) is first  # reused: no allocation, no memset, per launch
    grown = family.arrival_counters("cpu", 9)
    assert grown.numel() == 9 and not grown.any() and family.arrival_counters("cpu", 9) is grown
    # the running sums of int8 products are int32 too, but never the counters
    sums = family.running_sums("cpu", 9, torch.int32)
    assert sums is not grown and family.running_sums("cpu", 5, torch.int32) is sums and not sums.any()
    assert family.running_sums("cpu", 9, torch.float32) is not sums


@pytest.mark.parametrize("dtype, dtype_c", [("fp16", "fp16"), ("bf16", "fp32"), ("fp8", "fp16"), ("int8", "int32")])
def test_atomic_sums_match_float64_and_are_left_zero_for_the_next_launch(interpreter_env, tmp_path, dtype, dtype_c):
    # 2 x 2 tiles in 4 slices of 2 K tiles each, the last cut; int8 sums exactly
    module = _module(tmp_path, problem(33, 17, 120, dtype, dtype_c=dtype_c), [SPLIT_K_4_ATOMIC])
    launcher = module.LAUNCHERS[str(SPLIT_K_4_ATOMIC)]
    family_host._kept_zero.clear()  # the buffers live in the family, shared by every module of the process
    for seed in (1, 2):  # the second launch adds into the sums the first left
        assert family.check_config(launcher, module.PROBLEM, "cpu", seed=seed) <= module.PROBLEM.tolerance
    [sums] = [buffer for (_, _, purpose, _), buffer in family_host._kept_zero.items() if purpose == "running sums"]
    assert sums.numel() >= 4 * 16 * 16 and not sums.any()
    assert sums.dtype == (torch.int32 if dtype == "int8" else torch.float32)


def test_a_fused_reduction_gives_the_reduction_kernels_bits(interpreter_env, tmp_path):
    # both sum the same K slices' partials in slice order, so C does not depend on which slice arrives last
    configs = [SPLIT_K_4, SPLIT_K_4_FUSED]
    module = _module(tmp_path, problem(40, 24, 256, dtype_c="fp32"), configs)
    a, b, c = family.make_operands(module.PROBLEM, "cpu", seed=9)
    results = []
    for config in configs:
        c.fill_(float("nan"))
        module.LAUNCHERS[str(config)](a, b, c)
        results.append(c.clone())
    assert family.relative_error(results[1], a, b) <= module.PROBLEM.tolerance
    assert torch.equal(results[0], results[1])
