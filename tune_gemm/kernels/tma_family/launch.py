"""Launching a persistent TMA config (launch_tma), and compiling it ahead of its first launch (compile_tma_config)."""

import functools
from dataclasses import replace

import torch
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

from tune_gemm.core.geometry import PADDED_ROW_BYTES, edge_columns
from tune_gemm.kernels.matmul_family.device import INTERPRETED
from tune_gemm.kernels.matmul_family.host import loaded_resources, mock_scales
from tune_gemm.kernels.matmul_family.replay import (
    capture,
    remember,
    replay_key,
    replay_of,
)
from tune_gemm.kernels.matmul_family.specs import TileConfig
from tune_gemm.kernels.tma_family.copies import (
    TMA_ALIGNMENT_BYTES,
    copies_b_k_major,
    padded_columns,
)
from tune_gemm.kernels.tma_family.operands import (
    EdgeOperands,
    ReplayedTma,
    output_block,
    tile_operands,
    tma_arguments,
)
from tune_gemm.kernels.tma_family.slicing import (
    TmaVariant,
    accumulator_dtype,
    edge_options,
    edge_split,
    is_compound,
    launch_scratch,
    pdl_options,
    persistent_grid,
    tail_options,
    tail_split,
)


def launch_tma(kernel, config: TileConfig, variant: TmaVariant, a, b, c, bias=None, scale_a=None, scale_b=None):
    """C = scale_a scale_b A @ B (+ bias[m] on row m) with one persistent TMA config. A: (M, K), B: (K, N),
    C: (M, N), any strides; the scales (one-element fp32 tensors) only with fp8 inputs, both or neither.

    C is written in place: through a descriptor when the copy engine can address it, else through masked
    pointer stores. A padded copy of C would cost a copy back out after the kernel (and one in before it,
    to keep the caller's poison in a tile the kernel missed): about 30 us of a 190 us launch at 4095x4097.

    variant.swap_ab: the kernel computes C^T = B^T A^T on the transposed views, so C^T is written in place too.
    config.SPLIT_K > 1 (with fused_reduce): each tile's K loop runs in that many slices (split_k_part).
    variant.split_tail: the tiles past the last whole wave do, in tail_slices slices."""
    result = c  # the caller's C, also where the kernel writes its transpose
    if variant.swap_ab:
        if bias is not None:
            raise ValueError("SWAP_AB computes C^T, whose columns a bias on the rows of C would fall on: no bias")
        a, b, c = b.t(), a.t(), c.t()
    key = replay_key((config, variant), a, b, c, bias, scale_a, scale_b)
    replay = replay_of(kernel, key)
    if replay is not None:
        replay(*replay.template.leading(variant, a, b, c, bias, scale_a, scale_b))
        return result
    last_wave = variant.stream_k or variant.split_tail
    if config.SPLIT_K > 1 and (config.reduction_kernel or last_wave or variant.narrow_edge):
        raise ValueError("the TMA family splits K with FUSED_REDUCE (the slices sum their partials themselves), "
                         "without STREAM_K and NARROW_EDGE")
    if last_wave and variant.narrow_edge:
        raise ValueError("STREAM_K shares out the tiles of the last wave; NARROW_EDGE is another way: not both")
    if variant.stream_k and variant.split_tail:
        raise ValueError("stream-K and the split tail are two ways of sharing out the last wave: not both")
    if is_compound(config) and (config.SPLIT_K > 1 or last_wave or variant.narrow_edge):
        raise ValueError(f"a {config.BLOCK_SIZE_M}x{config.BLOCK_SIZE_N} tile (two parts on a side) is computed whole: "
                         "no SPLIT_K, STREAM_K or NARROW_EDGE")
    M, K = a.shape
    N = b.shape[1]
    args = tma_arguments(config, variant, a, b, c)
    grid = persistent_grid(config, M, N, c.device)
    slices = edge_split(config, variant, args.edges.widths, M, K, grid[0])
    tail = tail_split(config, variant, M, N, K, grid[0])
    scratch = functools.partial(launch_scratch, config, variant, args.edges.widths, slices, tail, M, N, grid[0],
                                accumulator_dtype(a.dtype), c.device)
    leading = args.leading(bias, scale_a, scale_b, *scratch())
    arguments = (*leading, M, N, K, args.stride_cm, args.stride_cn, bias.stride(0) if bias is not None else 0)
    compiled = kernel[grid](
        *arguments, A_COL=args.a_col, B_COL=args.b_col, C_TMA=args.c_tma, HAS_BIAS=bias is not None,
        HAS_SCALES=scale_a is not None, num_warps=config.num_warps, num_stages=config.num_stages,
        **edge_options(config, variant, args.edges.widths, N, slices), **tail_options(tail), **args.parts.options(),
        **pdl_options(args.after_copies), **dict(config.options),
    )
    if key:
        remember(kernel, key, capture(compiled, grid, arguments, len(leading), (config, variant),
                                      ReplayedTma(args.template(), scratch)))
    return result


def takes_copies(problem, align_rows: bool = False) -> bool:
    """Whether a launch on this problem's contiguous operands copies one of them, as tma_arguments decides: an 8-bit
    or fp32 row-major B (k_major_copy), or a row of A (K elements), of a column-major A's transpose (M), of B (N) or
    of a column-major B's transpose (K) that does not start 16-byte aligned, or with align_rows 128-byte aligned."""
    if copies_b_k_major(problem.dtype_b.itemsize, problem.col_b):
        return True
    row_bytes = [(problem.M if problem.col_a else problem.K) * problem.dtype_a.itemsize,
                 (problem.K if problem.col_b else problem.N) * problem.dtype_b.itemsize]
    alignment = PADDED_ROW_BYTES if align_rows else TMA_ALIGNMENT_BYTES
    return any(row % alignment for row in row_bytes)


def _mock_descriptor(dtype, rows: int, cols: int, block: list):
    """A descriptor on no memory, enough for Triton to specialize and compile the kernel."""
    strides = [padded_columns(cols, dtype.itemsize), 1]  # as the launch pads odd rows
    return TensorDescriptor(triton.runtime.jit.MockTensor(dtype), [rows, cols], strides, block)


def compile_tma_config(kernel, config: TileConfig, variant: TmaVariant, problem) -> dict:
    """compile_config for the TMA family: compile the specialization launch_tma will use for this problem's
    layouts and dtypes (C contiguous, as the tuner allocates it), without launching."""
    if INTERPRETED:
        return {}
    if variant.swap_ab:
        problem = problem.transposed()
    copies = takes_copies(problem, variant.align_rows)
    if copies_b_k_major(problem.dtype_b.itemsize, problem.col_b):
        problem = replace(problem, col_b=True)  # the launch reads B's K-major copy
    mock = triton.runtime.jit.MockTensor
    M, N, K = problem.M, problem.N, problem.K
    bm, bn, bk = config.BLOCK_SIZE_M, config.BLOCK_SIZE_N, config.BLOCK_SIZE_K

    def a_block(rows):
        return _mock_descriptor(problem.dtype_a, K, M, [bk, rows]) if problem.col_a else _mock_descriptor(
            problem.dtype_a, M, K, [rows, bk])

    def b_block(cols):
        return _mock_descriptor(problem.dtype_b, N, K, [cols, bk]) if problem.col_b else _mock_descriptor(
            problem.dtype_b, K, N, [bk, cols])
    # a contiguous C's rows, as tma_readable sees them; C^T (SWAP_AB) has no unit inner stride
    c_tma = not variant.swap_ab and N * problem.dtype_c.itemsize % TMA_ALIGNMENT_BYTES == 0
    c_pointer = mock(problem.dtype_c)

    def c_block(rows, cols, subtile=False):
        return _mock_descriptor(problem.dtype_c, M, N, output_block(rows, cols, subtile)) if c_tma else c_pointer
    # the real strides of a contiguous C, or of C^T: Triton specializes on them (divisibility by 16, a 1)
    c_strides = (None, None) if c_tma else ((1, M) if variant.swap_ab else (N, 1))
    a_desc, b_desc, c_arg, parts = tile_operands(config, variant.epilogue_subtile, a_block, b_block, c_block)
    bias = mock(problem.dtype_c) if problem.bias else None
    scaled, scales = mock_scales(problem)
    widths = edge_columns(N, bn) if variant.narrow_edge else ()
    grid = persistent_grid(config, M, N, "cuda")
    slices = edge_split(config, variant, widths, M, K, grid[0])
    tail = tail_split(config, variant, M, N, K, grid[0])
    scratch = (mock(accumulator_dtype(problem.dtype_a)), mock(torch.int32)) if (
        variant.stream_k or config.SPLIT_K > 1 or slices > 1 or tail > 1) else (None, None)
    edges = EdgeOperands(widths, tuple(b_block(width) for width in widths),
                         tuple(c_block(bm, width) for width in widths),
                         mock(torch.int32) if widths else None)
    return loaded_resources(kernel.warmup(
        a_desc, b_desc, c_arg, bias, *scales, *scratch, *edges.kernel_arguments(), *parts.kernel_arguments(), M, N, K,
        *c_strides, 1 if problem.bias else 0,
        A_COL=problem.col_a, B_COL=problem.col_b, C_TMA=c_tma, HAS_BIAS=problem.bias, HAS_SCALES=scaled,
        num_warps=config.num_warps, num_stages=config.num_stages, grid=grid,
        **edge_options(config, variant, widths, N, slices), **tail_options(tail), **parts.options(),
        **pdl_options(copies), **dict(config.options),
    ))
