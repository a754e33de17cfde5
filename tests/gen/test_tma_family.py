"""gen.tma_family: the persistent TMA kernel family, generated and run under the interpreter at odd sizes."""

from __future__ import annotations

import ast

import pytest
import torch
from helpers import problem

from gen import render, write_module
from gen.loader import load_module
from prune.config import Config

TMA_CONFIGS = [
    Config(64, 64, 64, 2, 1, 4, 2, PERSISTENT_TMA=1),
    Config(64, 128, 64, 1, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1),
    Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, WARP_SPECIALIZE=1),
]
PLAIN = Config(16, 16, 16)



def test_tma_family_is_inlined_only_when_a_config_needs_it():
    assert "tma_persistent_tile" not in render(problem(64, 64, 64), [PLAIN], "x.py")
    source = render(problem(64, 64, 64), [PLAIN, *TMA_CONFIGS], "x.py")
    assert source.count("def tma_persistent_tile(") == 1
    assert "family-imports" not in source and "from gen." not in source  # the generated file stands alone
    tree = ast.parse(source)
    jitted = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert {f"matmul_kernel_{c}" for c in TMA_CONFIGS} <= jitted
    # each TMA kernel binds its own knobs
    assert "WARP_SPECIALIZE=True" in source and "EPILOGUE_SUBTILE=True" in source


# M, N, K with odd leading dimensions (rows not 16-byte aligned: the launcher pads a copy), edges that
# cut tiles, and a K shorter than one BLOCK_K.
@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("M,N,K,col_a,col_b", [
    (70, 130, 90, False, False),
    (67, 129, 33, True, True),
    (64, 72, 48, False, True),
    (65, 64, 16, True, False),
])
def test_tma_configs_match_float64(tmp_path, interpreter_env, dtype, M, N, K, col_a, col_b):
    module = load_module(write_module(problem(M, N, K, dtype, col_a, col_b), [PLAIN, *TMA_CONFIGS], tmp_path))
    for name, launcher in module.LAUNCHERS.items():
        error = module.check_config(launcher, module.PROBLEM, "cpu", seed=5)
        assert error <= module.PROBLEM.tolerance, (name, error)


def test_tma_configs_add_the_bias(tmp_path, interpreter_env):
    from dataclasses import replace

    p = replace(problem(70, 130, 90), bias=True)
    module = load_module(write_module(p, TMA_CONFIGS, tmp_path))
    for name, launcher in module.LAUNCHERS.items():
        a, b, c, bias = module.make_operands(module.PROBLEM, "cpu", seed=2)
        c.fill_(float("nan"))
        launcher(a, b, c, bias)
        assert module.relative_error(c, a, b, bias) <= module.PROBLEM.tolerance, name
        assert module.relative_error(c, a, b) > 10 * module.PROBLEM.tolerance, name  # the bias is really there


def test_unaligned_rows_are_padded_and_aligned_ones_are_not(interpreter_env, tmp_path):
    module = load_module(write_module(problem(64, 64, 64), TMA_CONFIGS[:1], tmp_path))
    aligned = torch.randn(64, 64).half()
    assert module.tma_view(aligned) is aligned
    odd = torch.randn(64, 65).half()[:, :63]  # row stride 65 halves = 130 bytes
    view = module.tma_view(odd)
    assert view.shape == odd.shape and view.stride(0) * 2 % 16 == 0 and torch.equal(view, odd)
    assert module.persistent_programs("cpu", 2) == 2 and module.persistent_programs("cpu", 1000) >= 1
