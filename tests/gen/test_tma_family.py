"""tune_gemm.kernels.tma_family: the persistent TMA kernel family, generated and run under the interpreter at odd sizes: C stored
through its descriptor or, when the copy engine cannot address it, through masked pointers in place; fp8/bf8 with
their scales and int8 into int32."""

from __future__ import annotations

import ast
from dataclasses import replace

import pytest
import torch
from helpers import KernelSpy, problem, spied, spied_check
from triton.tools.tensor_descriptor import TensorDescriptor

from tune_gemm.core import geometry
from tune_gemm.core.config import (
    ATOMIC_REDUCE,
    FUSED_EDGE,
    SPLIT_EDGE,
    SPLIT_TAIL,
    Config,
)
from tune_gemm.generate import render, write_module
from tune_gemm.generate.loader import load_module
from tune_gemm.kernels import matmul_family as family
from tune_gemm.kernels import tma_family as tma
from tune_gemm.kernels.matmul_family import host as family_host
from tune_gemm.kernels.tma_family import copies, operands, slicing

TMA_CONFIGS = [
    Config(64, 64, 64, 2, 1, 4, 2, PERSISTENT_TMA=1),
    Config(64, 128, 64, 1, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1),
    Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, WARP_SPECIALIZE=1),
]
PLAIN = Config(16, 16, 16)



def test_tma_family_is_imported_only_when_a_config_needs_it():
    assert "tma_persistent_tile" not in render(problem(64, 64, 64), [PLAIN], "x.py")
    source = render(problem(64, 64, 64), [PLAIN, *TMA_CONFIGS], "x.py")
    # imported once, as a library: the family's source is not in the module
    assert source.count("from tune_gemm.kernels.tma_family import (") == 1 and "    tma_persistent_tile,\n" in source
    assert "def tma_persistent_tile(" not in source and "def split_k_part(" not in source
    assert "family-imports" not in source and "from gen." not in source
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
        error = family.check_config(launcher, module.PROBLEM, "cpu", seed=5)
        assert error <= module.PROBLEM.tolerance, (name, error)


def test_tma_configs_add_the_bias(tmp_path, interpreter_env):
    from dataclasses import replace

    p = replace(problem(70, 130, 90), bias=True)
    module = load_module(write_module(p, TMA_CONFIGS, tmp_path))
    for name, launcher in module.LAUNCHERS.items():
        a, b, c, bias = family.make_operands(module.PROBLEM, "cpu", seed=2)
        c.fill_(float("nan"))
        launcher(a, b, c, bias)
        assert family.relative_error(c, a, b, bias) <= module.PROBLEM.tolerance, name
        assert family.relative_error(c, a, b) > 10 * module.PROBLEM.tolerance, name  # the bias is really there


def test_unaligned_rows_are_padded_and_aligned_ones_are_not(interpreter_env, tmp_path):
    aligned = torch.randn(64, 64).half()
    assert tma.tma_views([aligned]) == [aligned]
    odd = torch.randn(64, 75).half()[:, :70]  # row stride 75 halves = 150 bytes
    [view] = tma.tma_views([odd])
    # rows padded to whole 128-byte lines, not just to the 16 bytes the copy engine needs
    assert view.shape == odd.shape and view.stride(0) == 128 and torch.equal(view, odd)
    assert tma.persistent_programs("cpu", 2) == 2 and tma.persistent_programs("cpu", 1000) >= 1


def test_align_rows_copies_rows_that_start_off_128_byte_lines(interpreter_env, tmp_path):
    whole_lines = torch.randn(64, 128).half()  # 256-byte rows
    off_line = torch.randn(64, 72).half()  # 144-byte rows: 16-byte aligned, the copy engine reads them as they are
    assert tma.tma_views([whole_lines, off_line]) == [whole_lines, off_line]
    kept, copied = tma.tma_views([whole_lines, off_line], align_rows=True)
    assert kept is whole_lines and copied.data_ptr() != off_line.data_ptr()
    assert copied.stride(0) == 128 and torch.equal(copied, off_line)


@pytest.mark.parametrize("wide_offsets", [False, True])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.int8])
def test_one_kernel_pads_every_unaligned_operand_of_a_launch(interpreter_env, tmp_path, monkeypatch, dtype,
                                                              wide_offsets):
    spy = KernelSpy(copies.pad_rows_kernel)
    monkeypatch.setattr(copies, "pad_rows_kernel", spy)
    if wide_offsets:  # the 64-bit path, without allocating 2^31 elements
        monkeypatch.setattr(copies, "INT32_OFFSETS", 1000)
    launches = spy.launches
    generator = torch.Generator().manual_seed(3)

    def matrix(rows, cols):
        return (torch.randn(rows, cols, generator=generator) * 8).to(dtype)

    def as_bits(t):
        return t.view(torch.int8) if dtype.itemsize == 1 else t
    # row strides of 1100 and 203 elements: not 16-byte aligned for 1- or 2-byte elements; copies of many blocks
    # whose block edges fall inside rows; b read through a column stride of 2
    assert tma.PAD_BLOCK < 70 * 1031
    a = matrix(70, 1100)[:, :1031]
    b = matrix(45, 406)[:, :266:2]
    aligned = matrix(64, 128)
    views = tma.tma_views([a, aligned, b])
    assert len(launches) == 1  # both copies in one launch
    assert launches[0][1]["WIDE"] == wide_offsets
    assert views[1] is aligned and all(view.data_ptr() != source.data_ptr() for source, view in ((a, views[0]),
                                                                                                (b, views[2])))
    for source, view in ((a, views[0]), (b, views[2])):
        assert view.shape == source.shape and view.stride(0) * view.element_size() % 128 == 0
        assert torch.equal(as_bits(view), as_bits(source))
        padding = view.as_strided((view.shape[0], view.stride(0)), view.stride())[:, view.shape[1]:]
        assert padding.numel() and not as_bits(padding).any()  # zero, not left over memory
    launches.clear()
    [single] = tma.tma_views([b])
    assert len(launches) == 1 and torch.equal(single.float(), b.float())


def test_launch_arguments_describe_a_column_major_operand_by_its_transpose(interpreter_env, tmp_path):
    config = TMA_CONFIGS[0]
    a, b, c = torch.randn(64, 64).half(), torch.randn(64, 64).half().t(), torch.empty(64, 64).half()
    args = tma.tma_arguments(config, tma.TmaVariant(), a, b, c)
    assert (args.a_col, args.b_col, args.c_tma) == (False, True, True)
    assert args.a_desc.base is a and list(args.a_desc.block_shape) == [config.BLOCK_SIZE_M, config.BLOCK_SIZE_K]
    assert args.b_desc.base.stride() == (64, 1)  # B's transpose: a unit inner stride, as the copy engine needs
    assert list(args.b_desc.block_shape) == [config.BLOCK_SIZE_N, config.BLOCK_SIZE_K]
    assert args.c.base is c and (args.stride_cm, args.stride_cn) == (None, None)


# N odd: fp16 rows of 2N bytes are not 16-byte aligned, so the copy engine cannot store C; N = 64: it can.
@pytest.mark.parametrize("N,through_descriptor", [(67, False), (64, True)])
def test_c_is_stored_in_place_through_its_descriptor_or_through_pointers(tmp_path, interpreter_env, monkeypatch, N,
                                                                         through_descriptor):
    module = load_module(write_module(problem(70, N, 90), TMA_CONFIGS, tmp_path))
    for config in TMA_CONFIGS:
        spy = spied(monkeypatch, module, config)
        a, b, c = family.make_operands(module.PROBLEM, "cpu", seed=4)
        family.poison(c)
        module.LAUNCHERS[str(config)](a, b, c)
        assert family.relative_error(c, a, b) <= module.PROBLEM.tolerance, config
        [(_, kwargs)] = spy.launches
        assert kwargs["C_TMA"] is through_descriptor, config
        named = spy.named()
        c_arg, strides = named["c"], (named["stride_cm"], named["stride_cn"])
        if through_descriptor:
            assert isinstance(c_arg, TensorDescriptor) and c_arg.base is c, config
            assert strides == (None, None)  # no strides: they stay out of the specialization
        else:
            assert c_arg is c and strides == c.stride(), config  # C itself: no copy in or out


SENTINEL = 7.0  # a finite value the kernels never write where it is checked
MARGIN = 136  # storage around C's view, wider than any tile: an unmasked store past the view lands in it and shows


def _c_in_storage(view: str, M: int, N: int) -> tuple:
    """(storage filled with SENTINEL, a view of it as C (M, N), the mask of the storage outside that view)."""
    if view == "transposed":  # C column-major: unit row stride, so pointers
        storage = torch.full((N + MARGIN, M + MARGIN), SENTINEL).half()
        index = (slice(1, N + 1), slice(0, M))
        c = storage[index].t()
    else:  # "sliced": rows of N + MARGIN - 5 halves, starting 2 halves in (not 16-byte aligned); "sliced_aligned":
        # rows of N + MARGIN halves (a multiple of 8), starting 8 halves in (aligned)
        width, first = (N + MARGIN - 5, 2) if view == "sliced" else (N + MARGIN, 8)
        storage = torch.full((M + MARGIN, width), SENTINEL).half()
        index = (slice(1, M + 1), slice(first, first + N))
        c = storage[index]
    outside = torch.ones_like(storage, dtype=torch.bool)
    outside[index] = False
    return storage, c, outside


# tiles: "whole" ones of 64 and 128 cut the view's edges (N = 64); "narrow edge" tiles of 16 cover the 8 columns
# past one whole tile of 64 (N = 72), half of each past the view. A store past the view would show either way.
@pytest.mark.parametrize("tiles", ["whole", "narrow edge"])
@pytest.mark.parametrize("view,through_descriptor", [("sliced", False), ("sliced_aligned", True),
                                                     ("transposed", False)])
def test_a_view_of_c_is_written_and_nothing_around_it(tmp_path, interpreter_env, monkeypatch, tiles, view,
                                                      through_descriptor):
    M, N, configs, edge_n = (70, 64, TMA_CONFIGS, 0) if tiles == "whole" else (
        70, 72, [NARROW_CONFIGS[0], NARROW_CONFIGS[2]], 16)
    module = load_module(write_module(problem(M, N, 90), configs, tmp_path))
    for config in configs:
        spy = spied(monkeypatch, module, config)
        storage, c, outside = _c_in_storage(view, M, N)
        family.poison(c)
        a, b, _ = family.make_operands(module.PROBLEM, "cpu", seed=6)
        module.LAUNCHERS[str(config)](a, b, c)
        [(_, kwargs)] = spy.launches
        assert kwargs["C_TMA"] is through_descriptor and kwargs.get("EDGE_N", 0) == edge_n, (config, view)
        if edge_n:  # the edge tiles' C: a descriptor of their width, or C itself
            assert isinstance(spy.named()["c_edge"], TensorDescriptor) is through_descriptor, (config, view)
        assert family.relative_error(c, a, b) <= module.PROBLEM.tolerance, (config, view)
        assert bool((storage[outside] == SENTINEL).all()), (config, view)


SWAPPED_CONFIGS = [
    Config(64, 128, 32, 2, 1, 4, 2, PERSISTENT_TMA=1, SWAP_AB=1),
    Config(64, 128, 64, 1, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, SWAP_AB=1),
    Config(64, 64, 32, 1, 1, 8, 2, PERSISTENT_TMA=1, WARP_SPECIALIZE=1, SWAP_AB=1),
]


# C^T = B^T A^T: the kernel sees N x M, B^T first (column-major where B is row-major), and stores C^T through
# pointers; odd sizes pad A and B as before, and edges cut tiles both ways.
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K,col_a,col_b", [
    (70, 130, 90, False, False),
    (67, 129, 33, True, True),
    (64, 72, 48, False, True),
    (129, 65, 40, True, False),
])
def test_swapped_configs_compute_c_through_its_transpose(tmp_path, interpreter_env, monkeypatch, dtype, M, N, K,
                                                         col_a, col_b):
    module = load_module(write_module(problem(M, N, K, dtype, col_a, col_b), SWAPPED_CONFIGS, tmp_path))
    for config in SWAPPED_CONFIGS:
        spy = spied(monkeypatch, module, config)
        error = family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cpu", seed=7)
        assert error <= module.PROBLEM.tolerance, (str(config), error)
        [(_, kwargs)] = spy.launches
        named = spy.named()
        assert (named["M"], named["N"], named["K"]) == (N, M, K), config
        assert (kwargs["A_COL"], kwargs["B_COL"], kwargs["C_TMA"]) == (not col_b, not col_a, False), config
        assert (named["stride_cm"], named["stride_cn"]) == (1, N), config  # C^T's strides: C, written in place


def test_a_swapped_config_writes_a_view_of_c_and_nothing_around_it(tmp_path, interpreter_env):
    M, N = 70, 64
    module = load_module(write_module(problem(M, N, 90), SWAPPED_CONFIGS, tmp_path))
    for view in ("sliced", "sliced_aligned", "transposed"):
        for config in SWAPPED_CONFIGS:
            storage, c, outside = _c_in_storage(view, M, N)
            family.poison(c)
            a, b, _ = family.make_operands(module.PROBLEM, "cpu", seed=8)
            assert module.LAUNCHERS[str(config)](a, b, c) is c  # the caller's C, not the transpose written
            assert family.relative_error(c, a, b) <= module.PROBLEM.tolerance, (config, view)
            assert bool((storage[outside] == SENTINEL).all()), (config, view)


ALIGNED_CONFIGS = [
    Config(64, 128, 32, 2, 1, 4, 2, PERSISTENT_TMA=1, ALIGN_ROWS=1),
    Config(64, 128, 64, 1, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, SWAP_AB=1, ALIGN_ROWS=1),
]


# (M, N, K, col_a, col_b): which rows are 16-byte aligned (with ALIGN_ROWS, 128-byte aligned) decides the padding
# copies, and with them the launch's programmatic dependent launch, a compile option that compiling ahead must match.
# 72 and 48 fp16 elements are 144 and 96 bytes: 16-byte aligned, off 128-byte lines.
@pytest.mark.parametrize("M,N,K,col_a,col_b", [
    (64, 64, 64, False, False), (64, 64, 67, False, False), (64, 67, 64, False, False), (67, 64, 64, True, False),
    (64, 64, 67, False, True), (67, 67, 64, True, True), (64, 72, 48, False, True), (64, 72, 64, False, False),
    (72, 64, 64, True, False), (64, 64, 48, False, False),
])
def test_compiling_ahead_knows_which_launches_pad(tmp_path, interpreter_env, monkeypatch, M, N, K, col_a, col_b):
    configs = [TMA_CONFIGS[0], SWAPPED_CONFIGS[0], *ALIGNED_CONFIGS]
    module = load_module(write_module(problem(M, N, K, "fp16", col_a, col_b), configs, tmp_path))
    made, pad = [], copies.pad_rows
    monkeypatch.setattr(copies, "pad_rows", lambda padded: (made.append(padded), pad(padded)))
    for config in configs:
        made.clear()
        error = family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cpu", seed=9)
        assert error <= module.PROBLEM.tolerance, config
        computed = module.PROBLEM.transposed() if config.SWAP_AB else module.PROBLEM
        assert bool(made) is tma.takes_copies(computed, bool(config.ALIGN_ROWS)), config
    # on a GPU (not interpreted) a launch that pads launches its GEMM as the copy's dependent
    monkeypatch.setattr(operands, "INTERPRETED", False)
    a, b, c = family.make_operands(module.PROBLEM, "cpu", seed=9)
    arguments = tma.tma_arguments(getattr(module, f"CONFIG_{TMA_CONFIGS[0]}"), tma.TmaVariant(), a, b, c)
    assert arguments.after_copies is tma.takes_copies(module.PROBLEM)


# Narrow edge tiles under the interpreter's 3 persistent programs: sizes whose last column of tiles (of C, or of C^T
# with SWAP_AB) N fills in part, through descriptors and pointers, row- and column-major; after the whole tiles, and
# fused with the last whole tile of their rows.
NARROW_CONFIGS = [
    Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, NARROW_EDGE=1),
    Config(64, 128, 32, 2, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, NARROW_EDGE=1),
    Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, WARP_SPECIALIZE=1, NARROW_EDGE=1),
    Config(64, 128, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, SWAP_AB=1, NARROW_EDGE=1),
    Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, NARROW_EDGE=FUSED_EDGE),
    Config(64, 128, 32, 2, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, WARP_SPECIALIZE=1, NARROW_EDGE=FUSED_EDGE),
    Config(64, 128, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, SWAP_AB=1, NARROW_EDGE=FUSED_EDGE),
]


def _edge_claims(spy) -> list:
    """Per launch: (the edge widths EDGE_N and EDGE_N2, EDGE_FUSED, the claim counter as the programs left it,
    programs)."""
    claims = [spy.named(launch)["edge_claims"] for launch in range(len(spy.launches))]
    return [(tuple(width for width in (kwargs.get("EDGE_N", 0), kwargs.get("EDGE_N2", 0)) if width),
             kwargs.get("EDGE_FUSED", False), int(claim.item()) if claim is not None else None, grid[0])
            for (_, kwargs), claim, grid in zip(spy.launches, claims, spy.grids)]


# (M, N, K): edge widths for tiles 64 / 128 wide, and for C^T (N = M) 128 wide; where two, the first is half a tile
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K,col_a,col_b", [
    (200, 136, 90, False, False),  # 16 / 16, C^T 64 + 16 (72 past 128), apart: one whole tile
    (130, 200, 67, True, True),  # 16 / 64 + 16, C^T 16
    (70, 81, 33, False, True),  # 32 / 64 + 32; C's rows of 81 halves: stored through pointers
    (257, 150, 64, True, False),  # 32 / 32, C^T 16
    (90, 24, 40, False, False),  # 32 / 32, no whole tile beside them (fused configs compute them apart), C^T 64 + 32
    (100, 168, 70, False, True),  # 32 + 16, each fused beside a whole tile of 64 / 64, C^T none (100 past 0)
    (70, 336, 40, True, False),  # 16 / 64 + 16, each fused beside a whole tile of 128, C^T none (70 past 0)
])
def test_narrow_edge_tiles_match_float64_and_each_is_claimed_once(tmp_path, interpreter_env, monkeypatch, dtype, M, N,
                                                                   K, col_a, col_b):
    module = load_module(write_module(problem(M, N, K, dtype, col_a, col_b), NARROW_CONFIGS, tmp_path))
    narrowed = fused = two_fused = 0
    for config in NARROW_CONFIGS:
        spy = spied(monkeypatch, module, config)
        error = family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cpu", seed=11)
        assert error <= module.PROBLEM.tolerance, (str(config), error)
        rows, cols = (N, M) if config.SWAP_AB else (M, N)
        [(widths, edge_fused, claims, programs)] = _edge_claims(spy)
        assert widths == geometry.edge_columns(cols, config.BLOCK_SIZE_N), config
        assert edge_fused is (config.NARROW_EDGE == FUSED_EDGE and bool(widths)
                              and cols >= len(widths) * config.BLOCK_SIZE_N)
        if widths:  # every edge tile (or fused pair) of each width claimed once, then one claim too many per program
            narrowed += 1
            fused += edge_fused
            two_fused += edge_fused and len(widths) == 2
            assert claims == len(widths) * -(-rows // config.BLOCK_SIZE_M) + programs, config
        else:
            assert claims is None
    assert narrowed >= 3 and (fused >= 1 or N < 64) and (two_fused >= 1 or N not in (168, 336))


@pytest.mark.parametrize("narrow_edge", [1, FUSED_EDGE])
@pytest.mark.parametrize("dtype, dtype_c, bias", [("fp16", "fp16", True), ("fp8", "fp32", True),
                                                  ("int8", "int32", False)])
# N: 8 columns past two whole tiles of 64, an edge of 16; 40 past them, edges of 32 and 16
@pytest.mark.parametrize("N, widths", [(136, (16,)), (168, (32, 16))])
def test_narrow_edge_with_the_bias_fp8_scales_and_int8(tmp_path, interpreter_env, monkeypatch, dtype, dtype_c, bias,
                                                       narrow_edge, N, widths):
    from dataclasses import replace

    config = Config(64, 64, 128, 1, 1, 4, 2, PERSISTENT_TMA=1, NARROW_EDGE=narrow_edge)
    p = replace(problem(200, N, 300, dtype, dtype_c=dtype_c), bias=bias)
    module = load_module(write_module(p, [config], tmp_path))
    spy = spied(monkeypatch, module, config)
    error = family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cpu", seed=13)
    assert error <= p.dtype_a.tolerance, (dtype, error)  # int8: 0, exact
    assert _edge_claims(spy)[0][:2] == (widths, narrow_edge == FUSED_EDGE)


def _spied_twice(monkeypatch, module, config) -> KernelSpy:
    """A KernelSpy on `config`'s kernel after two launches checked against float64 on the CPU, the second finding the
    running sums and counters the first left."""
    spy = spied(monkeypatch, module, config)
    for seed in (17, 18):
        error = family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cpu", seed=seed)
        assert error <= module.PROBLEM.tolerance, (str(config), seed, error)
    return spy


# Split edge tiles under 8 interpreted persistent programs (the default 3 would rarely split): one edge width or two, C
# and C^T, odd K that the slices share unevenly, a C stored through pointers.
SPLIT_EDGE_CONFIGS = [
    Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, NARROW_EDGE=SPLIT_EDGE),
    Config(64, 128, 32, 2, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, NARROW_EDGE=SPLIT_EDGE),
    Config(64, 64, 32, 1, 1, 8, 2, PERSISTENT_TMA=1, WARP_SPECIALIZE=1, NARROW_EDGE=SPLIT_EDGE),
    Config(64, 128, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, SWAP_AB=1, NARROW_EDGE=SPLIT_EDGE),
]


@pytest.mark.parametrize("M,N,K,col_a,col_b,split", [
    (60, 136, 400, False, False, True),  # 8 past two tiles of 64: one edge tile in 3 slices of 13 K tiles
    (100, 296, 300, True, True, True),  # 40 past four tiles of 64: edges of 32 and 16 over 2 rows, 2 slices each
    (64, 450, 513, False, True, True),  # C's rows of 450 halves: stored through pointers; C^T: none past 64
    (70, 81, 90, True, False, False),  # K in 3 tiles: too few to split, the edge runs as NARROW_EDGE 1's
])
def test_split_edge_tiles_match_float64_twice_and_leave_their_sums_zero(tmp_path, interpreter_env, monkeypatch, M, N, K,
                                                                        col_a, col_b, split):
    module = load_module(write_module(problem(M, N, K, "fp16", col_a, col_b), SPLIT_EDGE_CONFIGS, tmp_path))
    monkeypatch.setattr(slicing, "INTERPRETER_PROGRAMS", 8)
    split_somewhere = False
    for config in SPLIT_EDGE_CONFIGS:
        spy = _spied_twice(monkeypatch, module, config)
        rows, cols = (N, M) if config.SWAP_AB else (M, N)
        widths = geometry.edge_columns(cols, config.BLOCK_SIZE_N)
        row_tiles = -(-rows // config.BLOCK_SIZE_M)
        slices = spy.launches[0][1].get("EDGE_SPLIT", 1)
        assert slices == geometry.edge_slices(spy.grids[0][0], len(widths) * row_tiles, -(-K // config.BLOCK_SIZE_K))
        claims = [claim for _, _, claim, _ in _edge_claims(spy)]
        if widths:  # every slice of every edge tile claimed once, then one claim too many per program
            assert claims == [len(widths) * row_tiles * slices + spy.grids[0][0]] * 2, config
        if slices > 1:
            split_somewhere = True
            named = spy.named()
            assert not named["workspace"].any() and not named["arrivals"].any(), config
        else:
            assert spy.named()["workspace"] is None, config
    assert split_somewhere is split


@pytest.mark.parametrize("dtype, dtype_c, bias", [("fp16", "fp16", True), ("fp8", "fp32", True),
                                                  ("int8", "int32", False)])
def test_split_edge_with_the_bias_fp8_scales_and_int8(tmp_path, interpreter_env, monkeypatch, dtype, dtype_c, bias):
    from dataclasses import replace

    config = Config(64, 64, 128, 1, 1, 4, 2, PERSISTENT_TMA=1, NARROW_EDGE=SPLIT_EDGE)
    p = replace(problem(60, 136, 1100, dtype, dtype_c=dtype_c), bias=bias)  # 9 K tiles: 2 slices of 4 and 5
    module = load_module(write_module(p, [config], tmp_path))
    error, kwargs, _ = spied_check(monkeypatch, module, config, seed=19)
    assert error <= p.dtype_a.tolerance, (dtype, error)  # int8: 0, exact
    assert kwargs["EDGE_SPLIT"] == 2 and kwargs["EDGE_N"] == 16


# Split tails under 8 interpreted persistent programs: the tiles past the last whole wave in K slices that add into one
# running sum per tile. C and C^T, rows of tiles in groups, K that the slices share unevenly, C stored through pointers.
SPLIT_TAIL_CONFIGS = [
    Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, STREAM_K=SPLIT_TAIL),
    Config(64, 128, 32, 2, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, STREAM_K=SPLIT_TAIL),
    Config(64, 64, 32, 4, 1, 4, 2, PERSISTENT_TMA=1, SWAP_AB=1, STREAM_K=SPLIT_TAIL),
]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K,col_a,col_b,split", [
    (300, 200, 600, False, False, True),  # 20 / 10 tiles / C^T 20: 4 / 2 / 4 past the last wave, 19 K tiles: 2 slices
    (70, 581, 1000, True, True, True),  # C's rows of 581 halves (pointers); 20 / 10 / 20 tiles, 2 / 4 / 2 slices
    (520, 130, 300, False, True, False),  # 27 tiles: 3 past the last wave, but 10 K tiles make one slice of 8
    (100, 100, 600, True, False, False),  # 4 / 2 tiles: less than a wave
])
def test_split_tail_tiles_match_float64_twice_and_leave_their_sums_zero(tmp_path, interpreter_env, monkeypatch, dtype,
                                                                        M, N, K, col_a, col_b, split):
    module = load_module(write_module(problem(M, N, K, dtype, col_a, col_b), SPLIT_TAIL_CONFIGS, tmp_path))
    monkeypatch.setattr(slicing, "INTERPRETER_PROGRAMS", 8)
    split_somewhere = False
    for config in SPLIT_TAIL_CONFIGS:
        spy = _spied_twice(monkeypatch, module, config)
        rows, cols = (N, M) if config.SWAP_AB else (M, N)
        tiles = -(-rows // config.BLOCK_SIZE_M) * -(-cols // config.BLOCK_SIZE_N)
        programs = spy.grids[0][0]
        slices = spy.launches[0][1].get("TAIL_SPLIT", 1)
        assert slices == geometry.tail_slices(tiles, programs, -(-K // config.BLOCK_SIZE_K)), config
        named = spy.named()
        if slices > 1:
            split_somewhere = True
            # (at least) one running sum and one counter per tile past the last whole wave, all left zero
            assert named["workspace"].numel() >= tiles % programs * config.BLOCK_SIZE_M * config.BLOCK_SIZE_N
            assert named["arrivals"].numel() >= tiles % programs
            assert not named["workspace"].any() and not named["arrivals"].any(), config
        else:
            assert named["workspace"] is None, config
    assert split_somewhere is split


@pytest.mark.parametrize("dtype, dtype_c, bias", [("fp16", "fp16", True), ("fp8", "fp32", True),
                                                  ("int8", "int32", False)])
def test_split_tail_with_the_bias_fp8_scales_and_int8(tmp_path, interpreter_env, monkeypatch, dtype, dtype_c, bias):
    from dataclasses import replace

    config = Config(64, 64, 128, 1, 1, 4, 2, PERSISTENT_TMA=1, STREAM_K=SPLIT_TAIL)
    p = replace(problem(300, 200, 2100, dtype, dtype_c=dtype_c), bias=bias)  # 20 tiles, 17 K tiles: 2 slices of 9, 8
    module = load_module(write_module(p, [config], tmp_path))
    monkeypatch.setattr(slicing, "INTERPRETER_PROGRAMS", 8)
    error, kwargs, _ = spied_check(monkeypatch, module, config, seed=23)
    assert error <= p.dtype_a.tolerance, (dtype, error)  # int8: 0, exact
    assert kwargs["TAIL_SPLIT"] == 2


def test_tail_slices_are_the_pruners(tmp_path, interpreter_env):
    from tune_gemm.core.device import INTERPRETER_PROFILE
    from tune_gemm.space.rules import tail_slices

    tail = tma.TmaVariant(split_tail=True)
    for M, N, K in [(5120, 5120, 4096), (5120, 5120, 1024), (5120, 2560, 4096), (4096, 4096, 4096), (4096, 5120, 4096),
                    (8448, 512, 4096), (1024, 1024, 4096), (3000, 5000, 4096), (300, 200, 600)]:
        for block_m, block_n in [(128, 256), (256, 128), (64, 64)]:
            config = Config(block_m, block_n, 64, PERSISTENT_TMA=1, STREAM_K=SPLIT_TAIL)
            launch_tile = family.TileConfig(BLOCK_SIZE_M=block_m, BLOCK_SIZE_N=block_n, BLOCK_SIZE_K=64,
                                            GROUP_SIZE_M=1, SPLIT_K=1, num_warps=8, num_stages=3)
            programs = min(132, -(-M // block_m) * -(-N // block_n))
            assert tma.tail_split(launch_tile, tail, M, N, K, programs) == (
                tail_slices(problem(M, N, K), config, INTERPRETER_PROFILE)), (M, N, K, config)
    whole = family.TileConfig(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, SPLIT_K=1,
                              num_warps=8, num_stages=3)
    assert tma.tail_split(whole, tail, 5120, 5120, 4096, 132) == 8
    assert tma.tail_split(whole, tma.TmaVariant(), 5120, 5120, 4096, 132) == 1  # not a split-tail config
    assert tma.tail_options(8) == {"TAIL_SPLIT": 8} and tma.tail_options(1) == {}


def test_edge_widths_and_depths_are_the_pruners(tmp_path, interpreter_env):
    from tune_gemm.space.rules import edge_columns

    for block_n in (64, 128, 256):
        config = Config(128, block_n, 64, PERSISTENT_TMA=1, NARROW_EDGE=1)
        assert [geometry.edge_columns(n, block_n) for n in range(1, 600)] == [
            edge_columns(problem(64, n, 64), config) for n in range(1, 600)]
    assert [geometry.edge_columns(n, 256) for n in (2048, 2049, 2056, 2064, 2065, 2176, 2177, 2200, 2240, 2241)] == [
        (), (16,), (16,), (16,), (32,), (128,), (128, 16), (128, 32), (128, 64), ()]
    # the edge's K loop as deep as the whole tiles' stages' shared memory holds: 3 x (128 + 256) / (128 + 16)
    tile = family.TileConfig(BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=8, SPLIT_K=1,
                             num_warps=8, num_stages=3)
    assert tma.edge_stages(tile, 16) == 8
    narrow, fused = tma.TmaVariant(narrow_edge=True), tma.TmaVariant(narrow_edge=True, fused_edge=True)
    assert tma.edge_options(tile, narrow, (), 2048) == tma.edge_options(tile, fused, (), 2048) == {}
    assert tma.edge_options(tile, narrow, (16,), 2056) == {"EDGE_N": 16, "EDGE_STAGES": 8}
    assert tma.edge_options(tile, fused, (16,), 2056) == {"EDGE_N": 16, "EDGE_FUSED": True}
    # no whole tile to fuse 8 columns with: they are computed apart
    assert tma.edge_options(tile, fused, (16,), 8) == {"EDGE_N": 16, "EDGE_STAGES": 8}
    # two widths: 3 x 384 / 256 and 3 x 384 / 160 stages apart; fused, each beside its own whole tile
    assert tma.edge_options(tile, narrow, (128, 32), 2200) == {"EDGE_N": 128, "EDGE_STAGES": 4, "EDGE_N2": 32,
                                                                  "EDGE_STAGES2": 7}
    assert tma.edge_options(tile, fused, (128, 32), 2200) == {"EDGE_FUSED": True, "EDGE_N": 128, "EDGE_N2": 32}
    assert tma.edge_options(tile, fused, (128, 32), 408) == tma.edge_options(tile, narrow, (128, 32), 408)
    # the split edge's slices, as the pruner counts them on a GPU of 132 SMs, and its option
    from tune_gemm.core.device import INTERPRETER_PROFILE
    from tune_gemm.space.rules import edge_slices

    split = tma.TmaVariant(narrow_edge=True, split_edge=True)
    for M, N, K in [(4096, 4248, 4096), (4096, 4248, 1024), (4096, 4248, 448), (256, 2056, 4096), (16384, 1176, 4096),
                    (4096, 4096, 4096), (200, 136, 90)]:
        for block_m, block_n in [(128, 256), (256, 128), (64, 64)]:
            config = Config(block_m, block_n, 64, PERSISTENT_TMA=1, NARROW_EDGE=SPLIT_EDGE)
            launch_tile = family.TileConfig(BLOCK_SIZE_M=block_m, BLOCK_SIZE_N=block_n, BLOCK_SIZE_K=64,
                                            GROUP_SIZE_M=1, SPLIT_K=1, num_warps=8, num_stages=3)
            programs = min(132, -(-M // block_m) * -(-N // block_n))
            assert tma.edge_split(launch_tile, split, geometry.edge_columns(N, block_n), M, K, programs) == (
                edge_slices(problem(M, N, K), config, INTERPRETER_PROFILE)), (M, N, K, config)
    assert tma.edge_split(tile, narrow, (16,), 4096, 4096, 132) == 1
    assert tma.edge_options(tile, split, (32,), 4248, 8) == {"EDGE_N": 32, "EDGE_STAGES": 7, "EDGE_SPLIT": 8}


def test_a_swapped_config_refuses_a_bias(tmp_path, interpreter_env):
    module = load_module(write_module(problem(70, 130, 90), SWAPPED_CONFIGS[:1], tmp_path))
    a, b, c = family.make_operands(module.PROBLEM, "cpu", seed=1)
    with pytest.raises(ValueError, match="SWAP_AB"):
        module.LAUNCHERS[str(SWAPPED_CONFIGS[0])](a, b, c, bias=torch.ones(70, dtype=c.dtype))


# 8-bit inputs take K tiles of 128 (prune rule tma_tile); one config subtiles the epilogue, one specializes warps.
TMA_8BIT_CONFIGS = [
    Config(64, 64, 128, 1, 1, 4, 2, PERSISTENT_TMA=1),
    Config(64, 128, 128, 2, 1, 8, 2, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1),
    Config(64, 64, 128, 1, 1, 4, 3, PERSISTENT_TMA=1, WARP_SPECIALIZE=1),
]


# N = 45: C's rows are not 16-byte aligned for any output type (pointer store); N = 64: they are (descriptor).
# K = 150: A's and B's rows are padded copies, and the last K tile is cut.
@pytest.mark.parametrize("dtype,dtype_c", [("fp8", "fp16"), ("bf8", "bf16"), ("fp8", "fp32"), ("int8", "int32")])
@pytest.mark.parametrize("col_b", [False, True])
@pytest.mark.parametrize("M,N,K,bias", [(37, 45, 150, False), (70, 64, 256, True)])
def test_8_bit_inputs_match_float64(tmp_path, interpreter_env, dtype, dtype_c, col_b, M, N, K, bias):
    from dataclasses import replace

    p = replace(problem(M, N, K, dtype, False, col_b, dtype_c), bias=bias)
    module = load_module(write_module(p, TMA_8BIT_CONFIGS, tmp_path))
    for name, launcher in module.LAUNCHERS.items():
        error = family.check_config(launcher, module.PROBLEM, "cpu", seed=8)
        assert error <= p.dtype_a.tolerance, (name, error)  # int8: 0, exact


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.int8, torch.float16, torch.float32])
@pytest.mark.parametrize("K,N", [(150, 45), (64, 128), (300, 70)])
def test_k_major_copy_holds_b_transposed_in_padded_rows(interpreter_env, tmp_path, dtype, K, N):
    b = (torch.randn(K, N, generator=torch.Generator().manual_seed(K)) * 8).to(dtype)
    copy = tma.k_major_copy(b)
    assert copy.shape == (K, N) and copy.stride(0) == 1 and tma.is_column_major(copy)
    assert copy.stride(1) * copy.element_size() % 128 == 0  # B^T's rows: whole 128-byte lines

    def bits(t):
        return t.view(torch.int8) if dtype.itemsize == 1 else t
    assert torch.equal(bits(copy), bits(b))
    rows = copy.t()
    padding = rows.as_strided((N, rows.stride(0)), rows.stride())[:, K:]
    assert not padding.numel() or not bits(padding).any()  # zero, not left over memory


# 8-bit or fp32 B row-major: wgmma reads it K-major, so the launch copies it (k_major_copy) and the kernel reads the
# copy as a column-major B; a column-major one, or a 16-bit B, is read as it is.
@pytest.mark.parametrize("dtype,col_b,copied", [("fp8", False, True), ("int8", False, True), ("fp8", True, False),
                                                ("fp32", False, True), ("fp32", True, False), ("fp16", False, False)])
def test_an_8_or_32_bit_row_major_b_is_copied_k_major(tmp_path, interpreter_env, monkeypatch, dtype, col_b, copied):
    config = TMA_8BIT_CONFIGS[0] if dtype in ("fp8", "int8") else TMA_CONFIGS[0]
    p = problem(64, 64, 256, dtype, col_b=col_b, dtype_c={"fp8": "fp16", "int8": "int32"}.get(dtype))
    module = load_module(write_module(p, [config], tmp_path))
    spy = spied(monkeypatch, module, config)
    assert family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cpu", seed=14) <= p.dtype_a.tolerance
    [(args, kwargs)] = spy.launches
    assert kwargs["B_COL"] is (col_b or copied)
    b_desc = args[1]
    assert (b_desc.shape[0], b_desc.strides[0]) == ((64, 256) if col_b or copied else (256, 64))
    # compiling ahead specializes as the launch does: the copy makes the GEMM a dependent launch on a GPU
    assert tma.takes_copies(module.PROBLEM) is copied
    monkeypatch.setattr(operands, "INTERPRETED", False)
    a, b, c = family.make_operands(module.PROBLEM, "cpu", seed=14)[:3]
    arguments = tma.tma_arguments(getattr(module, f"CONFIG_{config}"), tma.TmaVariant(), a, b, c)
    assert arguments.after_copies is copied and arguments.b_col is (col_b or copied)


@pytest.mark.parametrize("dtype", ["fp8", "bf8"])
def test_the_fp8_scales_are_applied_once_before_the_bias(tmp_path, interpreter_env, dtype):
    from dataclasses import replace

    module = load_module(write_module(replace(problem(37, 45, 150, dtype, col_b=True, dtype_c="fp32"), bias=True),
                                      TMA_8BIT_CONFIGS[:2], tmp_path))
    a, b, c, bias, scale_a, scale_b = family.make_operands(module.PROBLEM, "cpu", seed=1)
    bias *= 10  # as large as the products, so that a scaled bias shows too
    for name, launcher in module.LAUNCHERS.items():
        family.poison(c)
        launcher(a, b, c, bias, scale_a, scale_b)
        assert family.relative_error(c, a, b, bias, scale_a, scale_b) <= module.PROBLEM.tolerance, name
        # the scales are far from 1: leaving them out, applying one twice, or scaling the bias are all far off
        assert family.relative_error(c, a, b, bias) > 0.5, name
        assert family.relative_error(c, a, b.float() * scale_b, bias, scale_a, scale_b) > 0.5, name
        assert family.relative_error(c, a, b, bias * scale_a * scale_b, scale_a, scale_b) > 0.5, name


def test_int8_accumulates_exactly_in_int32(tmp_path, interpreter_env):
    # 127*127*2048 products reach ~3.3e7 > 2^24: an fp32 accumulator would round, an int32 one is exact
    module = load_module(write_module(problem(33, 17, 2048, "int8", dtype_c="int32"), TMA_8BIT_CONFIGS[:1], tmp_path))
    a, b, c = family.make_operands(module.PROBLEM, "cpu", seed=2)
    a.fill_(127)
    b.fill_(127)
    a[0, 0] = 126  # one product less: 127*127*2048 - 127 is not an fp32 value
    for launcher in module.LAUNCHERS.values():
        family.poison(c)
        launcher(a, b, c)
        assert c.dtype == torch.int32
        assert bool((c[0] == 127 * 127 * 2048 - 127).all()) and bool((c[1:] == 127 * 127 * 2048).all())


# Stream-K under the interpreter's 3 persistent programs: sizes whose tile count is more than 3 and not a multiple
# of 3, so that the last tiles are shared out by K iterations and some are split between two programs.
STREAM_K_CONFIGS = [
    Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, STREAM_K=1),
    Config(64, 128, 32, 4, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, STREAM_K=1),
    Config(64, 64, 32, 2, 1, 4, 2, PERSISTENT_TMA=1, WARP_SPECIALIZE=1, STREAM_K=1),
]


def _scratch_spy(monkeypatch, module, maker: str) -> list:
    """Records the (workspace, arrivals) of every launch that takes them from `module.<maker>` (stream_k_scratch,
    split_k_scratch), the partial-tile slots poisoned first, so that a slot read unwritten shows in C; read after
    the launch, they hold what the programs stored and counted."""
    made = []
    scratch = getattr(slicing, maker)

    def spy(*args):
        workspace, arrivals = scratch(*args)
        if not any(workspace is kept for kept in family_host._kept_zero.values()):  # running sums start at zero
            workspace.fill_(float("nan") if workspace.is_floating_point() else 2**30)
        made.append((workspace, arrivals))
        return workspace, arrivals
    monkeypatch.setattr(slicing, maker, spy)
    return made


# (M, N, K): 64x64 tiles / 64x128 tiles, K tiles of 32
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K,col_a,col_b", [
    (70, 260, 200, False, False),  # 10 / 6 tiles, 7 K tiles
    (200, 70, 97, True, False),  # 8 / 4 tiles, 4 K tiles (the last one cut)
    (67, 129, 33, False, True),  # 6 / 4 tiles, 2 K tiles
    (257, 190, 64, True, True),  # 15 / 10 tiles, 2 K tiles
])
def test_stream_k_matches_float64_with_tiles_split_between_programs(tmp_path, interpreter_env, monkeypatch, dtype, M,
                                                                    N, K, col_a, col_b):
    module = load_module(write_module(problem(M, N, K, dtype, col_a, col_b), STREAM_K_CONFIGS, tmp_path))
    launches = _scratch_spy(monkeypatch, module, "stream_k_scratch")
    split = 0
    for config in STREAM_K_CONFIGS:
        error = family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cpu", seed=3)
        assert error <= module.PROBLEM.tolerance, (str(config), error)
        counted = launches[-1][1]  # the arrival counters
        assert set(counted.tolist()) <= {0, 2}, (str(config), counted)  # a split tile: exactly its two halves
        split += int((counted == 2).sum())
    assert split > 0  # these sizes do split tiles: the partial-sum path ran


def test_tiles_filling_whole_waves_are_not_shared_out(tmp_path, interpreter_env, monkeypatch):
    # 6 tiles on 3 programs: no stream-K part, so no counter moves; the config still computes C
    module = load_module(write_module(problem(128, 192, 96), STREAM_K_CONFIGS[:1], tmp_path))
    launches = _scratch_spy(monkeypatch, module, "stream_k_scratch")
    assert family.check_config(module.LAUNCHERS[str(STREAM_K_CONFIGS[0])], module.PROBLEM, "cpu", seed=1) <= (
        module.PROBLEM.tolerance)
    assert int(launches[-1][1].sum()) == 0


# Split K under the interpreter's 3 persistent programs: K slices of consecutive K tiles, a slice whose K tiles all
# lie past K (33 = 2 K tiles of 32 in 3 or 4 slices), and more units than programs, so each program walks several.
SPLIT_CONFIGS = [
    Config(64, 64, 32, 1, 2, 4, 2, PERSISTENT_TMA=1, FUSED_REDUCE=1),
    Config(64, 128, 32, 4, 4, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, FUSED_REDUCE=1),
    Config(64, 64, 32, 2, 3, 4, 2, PERSISTENT_TMA=1, FUSED_REDUCE=1),
    Config(64, 64, 32, 1, 2, 4, 2, PERSISTENT_TMA=1, FUSED_REDUCE=ATOMIC_REDUCE),
    Config(64, 128, 32, 4, 4, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, FUSED_REDUCE=ATOMIC_REDUCE),
]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K,col_a,col_b", [
    (70, 260, 200, False, False),  # 10 / 6 tiles, 7 K tiles
    (67, 129, 33, True, True),  # 6 / 4 tiles, 2 K tiles: some slices have none
    (200, 70, 97, True, False),  # 8 / 4 tiles, 4 K tiles (the last one cut)
])
def test_split_k_matches_float64_with_every_slice_stored_and_the_counters_left_zero(tmp_path, interpreter_env,
                                                                                     monkeypatch, dtype, M, N, K,
                                                                                     col_a, col_b):
    module = load_module(write_module(problem(M, N, K, dtype, col_a, col_b), SPLIT_CONFIGS, tmp_path))
    launches = _scratch_spy(monkeypatch, module, "split_k_scratch")
    for config in SPLIT_CONFIGS:
        for seed in (3, 4):  # the second launch finds the counters (and running sums) the first left
            error = family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cpu", seed=seed)
            assert error <= module.PROBLEM.tolerance, (str(config), seed, error)
            if config.FUSED_REDUCE == 1:
                assert not launches[-1][0].isnan().any(), str(config)  # every tile's every slice stored its partial
        assert all(not buffer.any() for buffer in family_host._kept_zero.values())  # counters and running sums


def test_split_k_sums_the_slices_in_slice_order(tmp_path, interpreter_env, monkeypatch):
    # C is the fp16 rounding of slot 0 + slot 1 + ... summed in that order, whichever slice came last
    config = SPLIT_CONFIGS[2]
    module = load_module(write_module(problem(70, 130, 480), [config], tmp_path))  # 6 tiles, 15 K tiles in 3 slices
    launches = _scratch_spy(monkeypatch, module, "split_k_scratch")
    a, b, c = family.make_operands(module.PROBLEM, "cpu", seed=7)[:3]
    module.LAUNCHERS[str(config)](a, b, c)
    slices = launches[-1][0].view(6, 3, 64, 64)  # tile, slice, rows, columns

    def c_of(tiles):  # GROUP_SIZE_M 2 over 2 rows of tiles: tile t is row t % 2, column t // 2
        return tiles.view(3, 2, 64, 64).permute(1, 2, 0, 3).reshape(128, 192)[:70, :130].half()
    assert torch.equal(c, c_of((slices[:, 0] + slices[:, 1]) + slices[:, 2]))
    assert not torch.equal(c, c_of((slices[:, 2] + slices[:, 0]) + slices[:, 1]))  # another order: other bits here


# Stream-K (tiles split between two programs) and split K (every tile in slices): partial sums of fp8 products scaled
# once, the bias added once, int8 summed exactly in int32
@pytest.mark.parametrize("config", [Config(64, 64, 128, 1, 1, 4, 2, PERSISTENT_TMA=1, STREAM_K=1),
                                    Config(64, 64, 128, 1, 2, 4, 2, PERSISTENT_TMA=1, FUSED_REDUCE=1),
                                    Config(64, 64, 128, 1, 2, 4, 2, PERSISTENT_TMA=1, FUSED_REDUCE=ATOMIC_REDUCE)],
                         ids=["stream_k", "split_k", "split_k_atomic"])
def test_partial_sums_with_the_bias_fp8_scales_and_int8(tmp_path, interpreter_env, monkeypatch, config):
    from dataclasses import replace

    for dtype, dtype_c in [("fp16", "fp16"), ("fp8", "fp32"), ("int8", "int32")]:
        p = replace(problem(200, 200, 300, dtype, dtype_c=dtype_c), bias=dtype != "int8")  # 16 tiles, 3 K tiles
        module = load_module(write_module(p, [config], tmp_path))
        launches = _scratch_spy(monkeypatch, module, "split_k_scratch" if config.SPLIT_K > 1 else "stream_k_scratch")
        error = family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cpu", seed=6)
        assert error <= p.dtype_a.tolerance, (dtype, error)  # int8: 0, exact
        if config.SPLIT_K > 1:  # the partials in the accumulator's type
            assert launches[-1][0].dtype == (torch.int32 if dtype == "int8" else torch.float32)
        else:  # some tile was split between two programs
            assert int((launches[-1][1] == 2).sum()) > 0


# Tile sides that are two powers of two (96 = 64 + 32, 48 = 32 + 16): each tile computed as up to four products, its
# parts loaded and stored through descriptors (or pointers) of their own. Small sides keep the interpreter quick; the
# GPU tests run 192 = 128 + 64.
COMPOUND_CONFIGS = [
    Config(96, 96, 32, 2, 1, 4, 2, PERSISTENT_TMA=1),  # both sides in two parts: four products
    Config(64, 96, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1),  # the columns only, each part in halves
    Config(96, 48, 32, 4, 1, 4, 2, PERSISTENT_TMA=1, SWAP_AB=1),  # C^T's rows and columns
]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K,col_a,col_b", [
    (200, 300, 90, False, False),  # edges that cut main parts and extra parts; K past whole BLOCK_K
    (97, 581, 64, True, True),  # C's rows of 581 halves (pointer stores); the operands column-major
    (96, 192, 32, False, True),  # whole tiles only, one K tile
])
def test_compound_tiles_match_float64_part_by_part(tmp_path, interpreter_env, monkeypatch, dtype, M, N, K, col_a,
                                                   col_b):
    module = load_module(write_module(problem(M, N, K, dtype, col_a, col_b), COMPOUND_CONFIGS, tmp_path))
    for config in COMPOUND_CONFIGS:
        error, kwargs, _ = spied_check(monkeypatch, module, config, seed=29)
        assert error <= module.PROBLEM.tolerance, (str(config), error)
        sides = (config.BLOCK_SIZE_M, config.BLOCK_SIZE_N)
        extras = {name: side - (1 << (side.bit_length() - 1)) for name, side in zip(("EXTRA_M", "EXTRA_N"), sides)}
        assert {name: kwargs.get(name, 0) for name in extras} == extras, config


def test_compound_parts_have_descriptors_of_their_own(tmp_path, interpreter_env, monkeypatch):
    config = COMPOUND_CONFIGS[0]
    module = load_module(write_module(problem(200, 304, 64), [config], tmp_path))
    spy = spied(monkeypatch, module, config)
    family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cpu", seed=3)
    named = spy.named()
    blocks = {name: list(named[name].block_shape) for name in ("a_desc", "a_lower", "b_desc", "b_right", "c", "c_right",
                                                             "c_lower", "c_corner")}
    assert blocks == {"a_desc": [64, 32], "a_lower": [32, 32], "b_desc": [32, 64], "b_right": [32, 32],
                      "c": [64, 64], "c_right": [64, 32], "c_lower": [32, 64], "c_corner": [32, 32]}
    power_of_two = TMA_CONFIGS[0]
    (tmp_path / "whole").mkdir()
    module = load_module(write_module(problem(200, 304, 64), [power_of_two], tmp_path / "whole"))
    spy = spied(monkeypatch, module, power_of_two)
    family.check_config(module.LAUNCHERS[str(power_of_two)], module.PROBLEM, "cpu", seed=3)
    named = spy.named()
    assert all(named[name] is None for name in ("a_lower", "b_right", "c_right", "c_lower", "c_corner"))
    assert "EXTRA_M" not in spy.launches[0][1] and "EXTRA_N" not in spy.launches[0][1]


@pytest.mark.parametrize("dtype, dtype_c, bias", [("fp16", "fp16", True), ("fp8", "fp32", True),
                                                  ("int8", "int32", False)])
def test_compound_tiles_with_the_bias_fp8_scales_and_int8(tmp_path, interpreter_env, monkeypatch, dtype, dtype_c, bias):
    from dataclasses import replace

    config = Config(96, 96, 128, 1, 1, 4, 2, PERSISTENT_TMA=1)
    p = replace(problem(150, 170, 300, dtype, dtype_c=dtype_c), bias=bias)
    module = load_module(write_module(p, [config], tmp_path))
    error, kwargs, _ = spied_check(monkeypatch, module, config, seed=31)
    assert error <= p.dtype_a.tolerance, (dtype, error)  # int8: 0, exact
    assert kwargs["EXTRA_M"] == kwargs["EXTRA_N"] == 32


def test_the_kernel_splits_tile_sides_as_the_pruner_takes_them(tmp_path, interpreter_env):
    # one block_parts (tune_gemm.core.geometry) serves the kernel's compound tiles and the pruner's is_tile_side
    from tune_gemm.core.geometry import block_parts, is_tile_side

    for side in range(1, 1025):
        if is_tile_side(side):
            main, extra = block_parts(side)
            assert main + extra == side and main & (main - 1) == 0 and extra in (0, *(2 ** i for i in range(4, 10)))
        else:
            with pytest.raises(ValueError, match=f"tile side of {side} "):
                block_parts(side)
    assert block_parts(192) == (128, 64) and block_parts(256) == (256, 0)
    assert not is_tile_side(40) and not is_tile_side(100) and is_tile_side(48)
    compound = family.TileConfig(BLOCK_SIZE_M=192, BLOCK_SIZE_N=128, BLOCK_SIZE_K=64, GROUP_SIZE_M=1, SPLIT_K=1,
                                 num_warps=8, num_stages=3)
    assert tma.is_compound(compound) and not tma.is_compound(replace(compound, BLOCK_SIZE_M=128))


@pytest.mark.parametrize("knobs", [{"STREAM_K": 1}, {"STREAM_K": SPLIT_TAIL}, {"NARROW_EDGE": 1}])
def test_compound_tiles_are_computed_whole(tmp_path, interpreter_env, knobs):
    # the rules keep compound tiles only whole (compound_tile); the launch refuses a module edited by hand
    from dataclasses import replace

    config = replace(COMPOUND_CONFIGS[0], **knobs)
    module = load_module(write_module(problem(300, 200, 600), [config], tmp_path))
    a, b, c = family.make_operands(module.PROBLEM, "cpu", seed=1)[:3]
    name = str(config)
    with pytest.raises(ValueError, match="computed whole"):
        tma.launch_tma(getattr(module, f"matmul_kernel_{name}"), getattr(module, f"CONFIG_{name}"),
                          getattr(module, f"VARIANT_{name}"), a, b, c)


@pytest.mark.parametrize("knobs", [{"STREAM_K": 1}, {"STREAM_K": SPLIT_TAIL}, {"NARROW_EDGE": 1}, {}])
def test_split_k_in_the_tma_family_only_fused_and_alone(tmp_path, interpreter_env, knobs):
    # Config refuses a TMA split without FUSED_REDUCE, and the rules keep none with STREAM_K or NARROW_EDGE; the launch
    # refuses them too, for a generated module edited by hand
    from dataclasses import replace

    config = replace(SPLIT_CONFIGS[0], **knobs)
    module = load_module(write_module(problem(70, 100, 64), [config], tmp_path))
    a, b, c = family.make_operands(module.PROBLEM, "cpu", seed=1)[:3]
    name = str(config)
    tile = getattr(module, f"CONFIG_{name}")
    if not knobs:
        tile = replace(tile, fused_reduce=False)
    with pytest.raises(ValueError, match="FUSED_REDUCE"):
        tma.launch_tma(getattr(module, f"matmul_kernel_{name}"), tile, getattr(module, f"VARIANT_{name}"), a, b, c)


@pytest.mark.parametrize("knobs, refusal", [
    ({"stream_k": True, "narrow_edge": True, "split_edge": True}, "STREAM_K .* NARROW_EDGE"),
    ({"split_tail": True, "narrow_edge": True}, "STREAM_K .* NARROW_EDGE"),
    ({"stream_k": True, "split_tail": True}, "stream-K and the split tail"),
])
def test_ways_of_sharing_out_the_last_wave_are_refused_together(tmp_path, interpreter_env, knobs, refusal):
    # the rules keep no such config (each takes the scratch arguments); the launch refuses a module edited by hand
    config = Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, NARROW_EDGE=SPLIT_EDGE)
    module = load_module(write_module(problem(60, 136, 400), [config], tmp_path))
    a, b, c = family.make_operands(module.PROBLEM, "cpu", seed=1)[:3]
    name = str(config)
    variant = tma.TmaVariant(**knobs)
    with pytest.raises(ValueError, match=refusal):
        tma.launch_tma(getattr(module, f"matmul_kernel_{name}"), getattr(module, f"CONFIG_{name}"), variant, a, b, c)


# num_ctas=2: each persistent program is a cluster of two CTAs, so the grid holds half as many programs. The
# interpreter ignores num_ctas; 6 stand-in SMs give 3 programs, fewer than the tiles below, so the division shows.
# As the prune rules keep them (cluster_epilogue_subtile, tma_clusters): no EPILOGUE_SUBTILE, no STREAM_K, and A
# row-major, the only TMA configs in clusters that ran right on the H100.
CLUSTER_TMA_CONFIGS = [
    Config(64, 64, 64, 2, 1, 4, 2, PERSISTENT_TMA=1, num_ctas=2),
    Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, WARP_SPECIALIZE=1, num_ctas=2),
]
CLUSTER_SMS = 6


def test_persistent_programs_are_one_per_cluster(interpreter_env, tmp_path, monkeypatch):
    monkeypatch.setattr(slicing, "INTERPRETER_PROGRAMS", CLUSTER_SMS)
    assert [tma.persistent_programs("cpu", 1000, n) for n in (1, 2, 4, 8)] == [6, 3, 1, 1]  # 8 > 6 SMs: still one
    assert tma.persistent_programs("cpu", 2, 2) == 2  # never more than the tiles


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K,col_a,col_b", [
    (70, 130, 90, False, False),  # 6 tiles of 64x64
    (67, 129, 33, False, True),
])
def test_num_ctas_reaches_the_launch_of_a_grid_of_clusters(tmp_path, interpreter_env, monkeypatch, dtype, M, N, K,
                                                          col_a, col_b):
    module = load_module(write_module(problem(M, N, K, dtype, col_a, col_b), CLUSTER_TMA_CONFIGS, tmp_path))
    monkeypatch.setattr(slicing, "INTERPRETER_PROGRAMS", CLUSTER_SMS)
    for config in CLUSTER_TMA_CONFIGS:
        error, kwargs, grid = spied_check(monkeypatch, module, config, seed=5)
        assert error <= module.PROBLEM.tolerance, (str(config), error)
        assert kwargs["num_ctas"] == 2 and grid == (CLUSTER_SMS // 2,), config


def _described(operand) -> tuple:
    """What a launch argument hands the kernel: a descriptor's address, box and extents, or a matrix's address."""
    if operand is None or isinstance(operand, torch.Tensor):
        return None if operand is None else ("matrix", operand.data_ptr(), tuple(operand.shape), operand.stride())
    return ("descriptor", operand.base.data_ptr(), tuple(operand.shape), tuple(operand.strides),
            tuple(operand.block_shape), operand.padding)


def _matrices(M, N, K, col_a, col_b, seed, dtype=torch.float16):
    generator = torch.Generator().manual_seed(seed)
    a = torch.randn(K, M, generator=generator).to(dtype).t() if col_a else torch.randn(M, K, generator=generator).to(
        dtype)
    b = torch.randn(N, K, generator=generator).to(dtype).t() if col_b else torch.randn(K, N, generator=generator).to(
        dtype)
    return a, b, torch.empty(M, N).to(dtype)


def _layout(operand) -> tuple:
    """_described without the address."""
    described = _described(operand)
    return described and (described[0], *described[2:])


# A whole tile, a compound one (192 = 128 + 64 columns), narrow edge tiles; C through its descriptor or (N odd)
# through pointers; A or B column-major; rows of A padded (K = 60: 120 bytes), an fp32 B copied K-major
@pytest.mark.parametrize("config,variant,M,N,K,col_a,col_b,dtype,copied", [
    (TMA_CONFIGS[0], {}, 64, 64, 64, False, True, torch.float16, False),
    (TMA_CONFIGS[1], {"epilogue_subtile": True}, 96, 67, 48, True, True, torch.float16, False),
    (Config(64, 192, 64, 1, 1, 8, 2, PERSISTENT_TMA=1), {}, 200, 400, 64, False, False, torch.float16, False),
    (Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, NARROW_EDGE=1), {"narrow_edge": True}, 80, 72, 64, True, False,
     torch.float16, False),
    (TMA_CONFIGS[0], {}, 64, 64, 60, False, True, torch.float16, True),
    (TMA_CONFIGS[0], {}, 64, 72, 64, True, False, torch.float32, True),
])
def test_launch_arguments_rebuilt_for_another_call_are_the_ones_that_call_builds(tmp_path, interpreter_env, config,
                                                                                variant, M, N, K, col_a, col_b, dtype,
                                                                                copied):
    variant = tma.TmaVariant(**variant)
    first, second = _matrices(M, N, K, col_a, col_b, 1, dtype), _matrices(M, N, K, col_a, col_b, 2, dtype)
    template = tma.tma_arguments(config, variant, *first).template()
    kept = [template.a_desc, template.b_desc, template.c, *template.edges.kernel_arguments(),
            *template.parts.kernel_arguments()]
    assert not any(isinstance(getattr(operand, "base", operand), torch.Tensor) for operand in kept)  # nothing kept
    views = tma.tma_operands(variant, *second[:2])
    assert views.copied is copied
    claims = tma.edge_claims("cpu") if variant.narrow_edge else None
    rebuilt, built = template.on(views, second[2], claims), tma.tma_arguments(config, variant, *second)
    for field in ("a_desc", "b_desc", "c"):
        assert _layout(getattr(rebuilt, field)) == _layout(getattr(built, field))
    edges, parts = rebuilt.edges.kernel_arguments(), rebuilt.parts.kernel_arguments()
    assert list(map(_layout, edges[:-1])) == list(map(_layout, built.edges.kernel_arguments()[:-1]))
    assert list(map(_layout, parts)) == list(map(_layout, built.parts.kernel_arguments()))
    assert any(edges[:-1]) == variant.narrow_edge and any(parts) == (config.BLOCK_SIZE_N == 192)
    assert edges[-1] is claims
    # each descriptor over this call's operand views: its matrices, or their copies
    assert rebuilt.a_desc.base.data_ptr() == views.a.data_ptr() and rebuilt.b_desc.base.data_ptr() == views.b.data_ptr()
    a, b, c = second
    assert torch.equal(views.a.t() if views.a_col else views.a, a)
    assert torch.equal(views.b.t() if views.b_col else views.b, b)
    assert (views.a.data_ptr() != a.data_ptr() or views.b.data_ptr() != b.data_ptr()) is copied
    assert _described(rebuilt.c)[1] == c.data_ptr()


# Launches replayed (tune_gemm.kernels.matmul_family.Replay) where they copy an operand (rows padded; an 8-bit or fp32 B copied
# K-major) or take scratch (split K, stream-K, a split tail, split edge tiles and their claims counter), C and C^T
@pytest.mark.parametrize("config,M,N,K,dtype,col_b,bias,copies", [
    (TMA_CONFIGS[0], 70, 130, 90, "fp16", False, True, ["pad_rows_kernel"]),
    (Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1), 64, 72, 64, "fp32", False, False, ["k_major_copy_kernel"]),
    (Config(64, 64, 128, 1, 1, 4, 2, PERSISTENT_TMA=1), 70, 130, 200, "fp8", False, True,
     ["k_major_copy_kernel", "pad_rows_kernel"]),
    (Config(64, 64, 32, 1, 2, 4, 2, PERSISTENT_TMA=1, FUSED_REDUCE=1), 100, 100, 304, "fp16", True, True, []),
    (Config(64, 64, 32, 1, 2, 4, 2, PERSISTENT_TMA=1, FUSED_REDUCE=ATOMIC_REDUCE), 100, 100, 304, "bf16", True, False,
     []),
    (Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, STREAM_K=1), 300, 200, 600, "fp16", False, False, []),
    (Config(64, 64, 32, 4, 1, 4, 2, PERSISTENT_TMA=1, SWAP_AB=1, STREAM_K=SPLIT_TAIL), 300, 200, 600, "fp16", True,
     False, []),
    (Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, NARROW_EDGE=SPLIT_EDGE), 60, 136, 400, "fp16", False, True, []),
])
def test_replayed_launches_copy_and_take_scratch_again_and_match_float64(tmp_path, interpreter_env, monkeypatch, config,
                                                                        M, N, K, dtype, col_b, bias, copies):
    from dataclasses import replace

    from helpers import replaying

    from tune_gemm.generate.naming import kernel_name

    p = replace(problem(M, N, K, dtype, col_b=col_b, dtype_c="fp16" if dtype == "fp8" else None), bias=bias)
    module = load_module(write_module(p, [config], tmp_path))
    monkeypatch.setattr(slicing, "INTERPRETER_PROGRAMS", 8)
    kernels = replaying(monkeypatch, module, kernel_name(config), "k_major_copy_kernel", "pad_rows_kernel")
    for seed in range(3):  # new matrices each call, C poisoned
        error = family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cpu", seed=seed)
        assert error <= module.PROBLEM.tolerance, (str(config), seed, error)
    counts = {name: (kernel.launched, kernel.replayed) for name, kernel in kernels.items()}
    assert counts == {name: ((1, 2) if name == kernel_name(config) or name in copies else (0, 0)) for name in kernels}
