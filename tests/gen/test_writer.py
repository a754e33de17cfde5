"""tune_gemm.generate.writer: the generated module imports, holds one kernel per config, names round-trip, kernels are right."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from dataclasses import replace

import pytest
import torch
from helpers import problem, spied_check

from tune_gemm.core.config import ATOMIC_REDUCE, Config
from tune_gemm.core.dtypes import DTYPES
from tune_gemm.generate import generated_filename, render, write_module
from tune_gemm.generate.loader import load_module
from tune_gemm.generate.naming import config_of_kernel, kernel_name, reduce_kernel_name
from tune_gemm.kernels import matmul_family as family
from tune_gemm.kernels.matmul_family import host as family_host

CONFIGS = [Config(16, 16, 16, 1, 1, 1, 1), Config(32, 16, 32, 2, 2, 1, 2), Config(16, 32, 16, 1, 4, 2, 1)]



def test_file_name_names_the_size_layouts_and_dtypes():
    assert generated_filename(problem(16, 16, 16)) == "generated_kernel_16x16x16.py"
    assert generated_filename(problem(16, 16, 16, col_a=True)) == "generated_kernel_16x16x16_NT.py"
    assert generated_filename(problem(8, 8, 8, "bf16")) == "generated_kernel_8x8x8_bf16_bf16.py"
    assert generated_filename(problem(8, 8, 8, "fp8", dtype_c="fp16")) == "generated_kernel_8x8x8_fp8_fp16.py"
    mixed = replace(problem(8, 8, 8, "fp8", dtype_c="fp16"), dtype_b=DTYPES["bf8"])
    assert generated_filename(mixed) == "generated_kernel_8x8x8_fp8_bf8_fp16.py"
    assert generated_filename(replace(problem(8, 8, 8), bias=True)) == "generated_kernel_8x8x8_bias.py"


def test_no_two_problems_share_a_file_name():
    # sizes whose digits run together alike, two layouts and two dtypes of one size, with and without a bias
    problems = [problem(16, 16, 16), problem(161, 6, 16), problem(1616, 1, 6), problem(1, 616, 16),
                problem(16, 16, 16, col_a=True), problem(16, 16, 16, col_b=True), problem(16, 16, 16, "bf16"),
                problem(16, 16, 16, "fp32"), problem(16, 16, 16, "fp8", dtype_c="fp16"),
                problem(16, 16, 16, "fp8", dtype_c="fp32"), replace(problem(16, 16, 16), bias=True)]
    names = [generated_filename(p) for p in problems]
    assert len(set(names)) == len(problems), names
    assert len({p.file_tag for p in problems}) == len(problems)  # checkpoints and scratch folders too
    assert all(name.startswith("generated_kernel_") for name in names)


def test_one_kernel_per_config_and_names_round_trip():
    source = render(problem(64, 48, 96), CONFIGS, "x.py")
    tree = ast.parse(source)
    jitted = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)
              and any("jit" in ast.unparse(d) for d in node.decorator_list)]
    main_kernels = [name for name in jitted if name.startswith("matmul_kernel_") and not name.endswith("_reduce")]
    assert main_kernels == [kernel_name(c) for c in CONFIGS]
    # split-K configs, and only they, get a reduction kernel
    assert [n for n in jitted if n.endswith("_reduce")] == [reduce_kernel_name(c) for c in CONFIGS if c.SPLIT_K > 1]
    assert [config_of_kernel(name) for name in main_kernels] == CONFIGS
    for function in (*(f"try_config_{c}" for c in CONFIGS), *(f"matmul_{c}" for c in CONFIGS)):
        assert function in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    # the family's code is imported, not copied: the module defines only the per-config functions
    assert set(jitted) == {*map(kernel_name, CONFIGS), *(reduce_kernel_name(c) for c in CONFIGS if c.SPLIT_K > 1)}
    imported = {alias.name for node in tree.body if isinstance(node, ast.ImportFrom)
                and node.module == "tune_gemm.kernels.matmul_family" for alias in node.names}
    assert {"main", "matmul_tile", "splitk_reduce_tile", "launch", "compile_config"} <= imported
    assert "def matmul_tile(" not in source and "def test_gemm(" not in source


def test_render_refuses_an_empty_config_list():
    with pytest.raises(ValueError):
        render(problem(16, 16, 16), [], "x.py")


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("col_a,col_b", [(False, False), (True, False), (False, True), (True, True)])
def test_every_config_matches_float64_at_an_odd_size(tmp_path, interpreter_env, dtype, col_a, col_b):
    p = problem(33, 17, 40 if not col_a else 64, dtype, col_a, col_b)  # K=40: masked K loop; 64: split K
    module = load_module(write_module(p, CONFIGS, tmp_path))
    assert set(module.LAUNCHERS) == {str(c) for c in CONFIGS}
    for name, launcher in module.LAUNCHERS.items():
        error = family.check_config(launcher, module.PROBLEM, "cpu", seed=3)
        assert error <= p.dtype_a.tolerance, (name, error)


def test_check_config_catches_an_unwritten_output(tmp_path, interpreter_env):
    module = load_module(write_module(problem(32, 32, 32), CONFIGS[:1], tmp_path))
    assert family.check_config(lambda a, b, c: c, module.PROBLEM, "cpu") == float("inf")  # left poisoned
    assert family.check_config(lambda a, b, c: c.copy_(a @ b * 1.1), module.PROBLEM, "cpu") > 0.05


def test_generated_file_runs_standalone(tmp_path):
    path = write_module(problem(24, 40, 32), CONFIGS, tmp_path)
    run = subprocess.run([sys.executable, str(path), "--interpret"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("PASS") == len(CONFIGS)


def test_split_k_partials_are_summed(tmp_path, interpreter_env):
    p = problem(16, 16, 128)
    module = load_module(write_module(p, [Config(16, 16, 16, 1, 8, 1, 1)], tmp_path))
    a, b, c = family.make_operands(module.PROBLEM, "cpu")
    module.LAUNCHERS[str(Config(16, 16, 16, 1, 8, 1, 1))](a, b, c)
    torch.testing.assert_close(c.float(), (a.float() @ b.float()), rtol=2e-2, atol=2e-2)


# STATIC_SHAPE: the kernel declares the sizes and strides tl.constexpr, so Triton compiles one binary per shape
STATIC_CONFIGS = [replace(CONFIGS[0], STATIC_SHAPE=1), replace(CONFIGS[1], STATIC_SHAPE=1)]  # the second splits K
SHAPE_PARAMETERS = ["M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm", "stride_cn",
                    "stride_cs", "stride_bias"]


def constant_parameters(kernel) -> list[str]:
    """The parameters a @triton.jit function declares tl.constexpr, in order."""
    return [name for name, parameter in inspect.signature(kernel.fn).parameters.items()
            if "constexpr" in str(parameter.annotation)]


def test_static_shape_kernels_declare_sizes_and_strides_constant(tmp_path, interpreter_env):
    module = load_module(write_module(problem(33, 17, 64), [CONFIGS[0], *STATIC_CONFIGS], tmp_path))
    assert not set(SHAPE_PARAMETERS) & set(constant_parameters(getattr(module, kernel_name(CONFIGS[0]))))
    for config in STATIC_CONFIGS:
        assert constant_parameters(getattr(module, kernel_name(config))) == [
            *SHAPE_PARAMETERS, "EVEN_K", "HAS_BIAS", "HAS_SCALES"]


@pytest.mark.parametrize("col_a,col_b", [(False, False), (True, True)])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_static_shape_configs_match_float64_at_an_odd_size(tmp_path, interpreter_env, monkeypatch, dtype, col_a,
                                                           col_b):
    p = problem(33, 17, 64, dtype, col_a, col_b)
    module = load_module(write_module(p, STATIC_CONFIGS, tmp_path))
    for config in STATIC_CONFIGS:
        error, kwargs, grid = spied_check(monkeypatch, module, config, seed=5)
        assert error <= p.dtype_a.tolerance, (config, error)
        assert grid == (-(-33 // config.BLOCK_SIZE_M) * -(-17 // config.BLOCK_SIZE_N), config.SPLIT_K)  # as without


# Split-K configs whose K slices sum their partials themselves: one kernel, no reduction kernel after it.
FUSED_CONFIGS = [Config(16, 16, 16, 1, 4, 1, 2, FUSED_REDUCE=1), Config(32, 16, 32, 2, 2, 4, 2, FUSED_REDUCE=1),
                 Config(16, 32, 16, 1, 2, 2, 1, STATIC_SHAPE=1, FUSED_REDUCE=1),
                 Config(16, 16, 16, 1, 4, 1, 2, FUSED_REDUCE=ATOMIC_REDUCE),
                 Config(16, 32, 16, 1, 2, 2, 1, STATIC_SHAPE=1, FUSED_REDUCE=ATOMIC_REDUCE)]


def test_a_fused_reduction_config_has_no_reduction_kernel_and_says_so_in_its_tile_config():
    source = render(problem(64, 48, 96), [*FUSED_CONFIGS, CONFIGS[1]], "x.py")
    tree = ast.parse(source)
    jitted = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    assert [c for c in FUSED_CONFIGS if reduce_kernel_name(c) in jitted] == []
    assert reduce_kernel_name(CONFIGS[1]) in jitted  # its twin without the knob keeps its reduction kernel
    # each says by name how its slices sum their partials
    assert source.count("fused_reduce=SLOT_SUM.value") == source.count("FUSED_REDUCE=SLOT_SUM)") == 3
    assert source.count("fused_reduce=ATOMIC_SUM.value") == source.count("FUSED_REDUCE=ATOMIC_SUM)") == 2
    assert "FUSED_REDUCE=0)" in source  # the twin with a reduction kernel


@pytest.mark.parametrize("dtype", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("col_a,col_b", [(False, False), (True, True)])
@pytest.mark.parametrize("bias", [False, True])
def test_fused_reduction_configs_match_float64_in_one_launch(tmp_path, interpreter_env, monkeypatch, dtype, col_a,
                                                            col_b, bias):
    p = replace(problem(33, 17, 64, dtype, col_a, col_b), bias=bias)  # every tile partly past C's edges
    module = load_module(write_module(p, FUSED_CONFIGS, tmp_path))
    for config in FUSED_CONFIGS:
        for seed in (5, 6):  # twice: the first launch leaves the arrival counters as it found them
            error, _, grid = spied_check(monkeypatch, module, config, seed=seed)
            assert error <= p.dtype_a.tolerance, (config, error)
        assert grid == (-(-33 // config.BLOCK_SIZE_M) * -(-17 // config.BLOCK_SIZE_N), config.SPLIT_K)
    assert all(not buffer.any() for buffer in family_host._kept_zero.values())  # counters and running sums


# num_ctas=2: Triton runs each program as a cluster of two CTAs that split its tile; the grid stays one program per
# tile (and K slice). The interpreter ignores num_ctas, so these check what reaches the launch.
CLUSTER_CONFIGS = [Config(32, 64, 32, 2, 1, 4, 2, num_ctas=2), Config(32, 64, 32, 1, 2, 4, 2, num_ctas=2)]


def _tile_config_options(source: str) -> dict:
    """Config name -> the options its TileConfig is built with in a generated source (() when it names none)."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and node.targets[0].id.startswith("CONFIG_"):
            options = [ast.literal_eval(k.value) for k in node.value.keywords if k.arg == "options"]
            found[node.targets[0].id.removeprefix("CONFIG_")] = options[0] if options else ()
    return found


def test_num_ctas_is_a_launch_option_in_the_generated_source():
    tma = Config(64, 64, 64, 1, 1, 4, 2, PERSISTENT_TMA=1, num_ctas=2)
    source = render(problem(70, 130, 90), [CLUSTER_CONFIGS[0], tma, CONFIGS[0]], "x.py")
    assert _tile_config_options(source) == {str(CLUSTER_CONFIGS[0]): (("num_ctas", 2),), str(tma): (("num_ctas", 2),),
                                            str(CONFIGS[0]): ()}
    assert source.count('options=(("num_ctas", 2),)') == 2  # readable as written


@pytest.mark.parametrize("col_a,col_b", [(False, False), (True, True)])
def test_num_ctas_reaches_the_plain_launch_with_one_program_per_tile(tmp_path, interpreter_env, monkeypatch, col_a,
                                                                     col_b):
    module = load_module(write_module(problem(70, 130, 90, col_a=col_a, col_b=col_b), CLUSTER_CONFIGS, tmp_path))
    for config in CLUSTER_CONFIGS:
        error, kwargs, grid = spied_check(monkeypatch, module, config, seed=4)
        assert error <= module.PROBLEM.tolerance, (str(config), error)
        assert kwargs["num_ctas"] == 2 and grid == (3 * 3, config.SPLIT_K), config  # ceil(70/32) x ceil(130/64) tiles


def test_warp_group_configs_render_a_gluon_kernel_that_binds_the_config(tmp_path, interpreter_env):
    wg = Config(192, 192, 32, 8, 1, 12, 5, PERSISTENT_TMA=1, WARP_GROUPS=1)
    tma = Config(128, 128, 64, 8, 1, 4, 3, PERSISTENT_TMA=1)
    p = problem(3072, 1536, 4096)
    source = render(p, [wg, tma], "g.py")
    tree = ast.parse(source)
    kernel = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == kernel_name(wg))
    assert [ast.unparse(d) for d in kernel.decorator_list] == ["gluon.jit"]
    [call] = [node for node in ast.walk(kernel) if isinstance(node, ast.Call)]
    assert ast.unparse(call.func) == "warp_group_gemm"
    assert {k.arg: ast.unparse(k.value) for k in call.keywords} == {"BLOCK_SIZE_M": "192", "GROUP_SIZE_M": "8",
                                                                     "STAGES": "5"}
    assert "launch_warp_groups(" in source and "compile_warp_group_config(" in source
    # the Gluon family is imported once, after the TMA family, and only where a config needs it
    assert source.count("from tune_gemm.kernels.warp_group_family import (") == 1
    assert "def warp_group_gemm(" not in source
    assert source.index("from tune_gemm.kernels.tma_family import") < source.index(
        "from tune_gemm.kernels.warp_group_family import")
    assert "gluon" not in render(p, [tma], "g.py")
    module = load_module(write_module(p, [wg, tma], tmp_path))  # imports wherever Triton has Gluon
    assert sorted(module.LAUNCHERS) == sorted([str(wg), str(tma)])
    assert module.COMPILERS[str(wg)]() == {}  # under the interpreter nothing compiles
