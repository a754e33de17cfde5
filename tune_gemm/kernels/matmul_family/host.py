"""The plain family's host side: a launch's grid and split-K buffers (launch), and compiling a config ahead of its
first launch (compile_config)."""

import torch
import triton

from tune_gemm.core.geometry import ceil_div
from tune_gemm.kernels.matmul_family.device import ATOMIC_SUM, INTERPRETED, REDUCE_BLOCK
from tune_gemm.kernels.matmul_family.replay import jit_launch, launch_replayed
from tune_gemm.kernels.matmul_family.specs import Problem, TileConfig, is_fp8


def _grid(config: TileConfig, M: int, N: int) -> tuple:
    # One program per output tile and K slice, whatever num_ctas: Triton runs each program as a cluster of num_ctas
    # CTAs that split its tile, and tl.program_id counts clusters.
    return (ceil_div(M, config.BLOCK_SIZE_M) * ceil_div(N, config.BLOCK_SIZE_N), config.SPLIT_K)


def partial_dtype(dtype_c):
    """Element type of split-K partial tiles: fp32, or int32 for an integer output (exact sums)."""
    return torch.float32 if dtype_c.is_floating_point else torch.int32


_kept_zero: dict = {}


def _kept_zero_buffer(device, purpose: str, numel: int, dtype):
    """A zeroed buffer of at least `numel` elements for `purpose`, which every launch that uses it leaves zero again:
    allocated once per device, stream, purpose and dtype and reused, so that no memset kernel runs before each
    launch, which at launch-bound sizes would cost what summing inside the GEMM saves. One per stream, since launches
    on two streams may run at once."""
    device = torch.device(device)
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = (device, stream, purpose, dtype)
    buffer = _kept_zero.get(key)
    if buffer is None or buffer.numel() < numel:
        buffer = _kept_zero[key] = torch.zeros(numel, dtype=dtype, device=device)
    return buffer


def arrival_counters(device, tiles: int):
    """Zeroed int32 counters, one per output tile, for FUSED_REDUCE launches on `device`'s current stream: the last
    slice of each tile sets its counter back to zero (summed_partials)."""
    return _kept_zero_buffer(device, "arrivals", tiles, torch.int32)


def running_sums(device, elements: int, dtype):
    """Zeroed running sums (`elements` of them: a whole tile per output tile) for ATOMIC_SUM launches on `device`'s
    current stream, in the accumulator's type: the last slice of each tile sets its sum back to zero
    (summed_partials)."""
    return _kept_zero_buffer(device, "running sums", elements, dtype)


def fused_partials(config: TileConfig, tiles: int, dtype, device) -> tuple:
    """(partials, arrivals) of a launch whose K slices sum their partials inside the GEMM (either family), laid out as
    tile_partials reads them: a slot per tile and K slice (SLOT_SUM), or a running sum per tile (ATOMIC_SUM,
    running_sums), in `dtype`; and the tiles' arrival counters. Every launch leaves the counters and running sums
    zero."""
    tile_size = config.BLOCK_SIZE_M * config.BLOCK_SIZE_N
    if config.fused_reduce == ATOMIC_SUM.value:
        partials = running_sums(device, tiles * tile_size, dtype)
    else:
        partials = torch.empty(tiles * config.SPLIT_K * tile_size, dtype=dtype, device=device)
    return partials, arrival_counters(device, tiles)


def split_buffers(config: TileConfig, M: int, N: int, c) -> tuple:
    """(what the kernel writes as C, partials_ptr, arrivals_ptr) of a launch: C itself without split K; the SPLIT_K
    partial products (M, N each) for the reduction kernel; or with fused_reduce C, the tiles' partials and arrival
    counters (fused_partials)."""
    if config.SPLIT_K == 1:
        return c, None, None
    if config.reduction_kernel:
        return torch.empty((config.SPLIT_K, M, N), dtype=partial_dtype(c.dtype), device=c.device), None, None
    return c, *fused_partials(config, _grid(config, M, N)[0], partial_dtype(c.dtype), c.device)


def launch(kernel, reduce_kernel, config: TileConfig, a, b, c, bias=None, scale_a=None, scale_b=None):
    """C = scale_a scale_b A @ B (+ bias[m] on row m) with one config. A: (M, K), B: (K, N), C: (M, N), any
    strides; the scales (one-element fp32 tensors) only with fp8 inputs, both or neither."""
    M, K = a.shape
    N = b.shape[1]
    has_bias = bias is not None
    has_scales = scale_a is not None
    out, partials, arrivals = split_buffers(config, M, N, c)
    leading = (a, b, out, bias, scale_a, scale_b, partials, arrivals)
    launch_replayed(kernel, leading, (config,), lambda: jit_launch(
        kernel, _grid(config, M, N),
        (*leading, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(-2), out.stride(-1),
         out.stride(0) if out.dim() == 3 else 0, bias.stride(0) if has_bias else 0),
        EVEN_K=K % (config.BLOCK_SIZE_K * config.SPLIT_K) == 0, HAS_BIAS=has_bias, HAS_SCALES=has_scales,
        num_warps=config.num_warps, num_stages=config.num_stages, **dict(config.options)))
    if out is not c:
        reduce_leading = (out, c, bias, scale_a, scale_b)
        launch_replayed(reduce_kernel, reduce_leading, (), lambda: jit_launch(
            reduce_kernel, (ceil_div(M, REDUCE_BLOCK.value), ceil_div(N, REDUCE_BLOCK.value)),
            (*reduce_leading, M, N, out.stride(0), out.stride(1), out.stride(2), c.stride(0), c.stride(1),
             bias.stride(0) if has_bias else 0), HAS_BIAS=has_bias, HAS_SCALES=has_scales))
    return c


def _operand_strides(rows: int, cols: int, column_major: bool) -> tuple:
    return (1, rows) if column_major else (cols, 1)


def compile_config(kernel, reduce_kernel, config: TileConfig, problem: Problem) -> dict:
    """Compile one config for this problem's exact argument specialization, without launching it.

    Returns the compiled kernel's resource use; raises what Triton raises (e.g. OutOfResources)."""
    if INTERPRETED:
        return {}
    mock = triton.runtime.jit.MockTensor
    M, N, K = problem.M, problem.N, problem.K
    out_dtype = partial_dtype(problem.dtype_c) if config.reduction_kernel else problem.dtype_c
    out_strides = (N, 1, M * N) if config.reduction_kernel else (N, 1, 0)
    fused = (mock(partial_dtype(problem.dtype_c)), mock(torch.int32)) if config.fused_reduce else (None, None)
    bias, bias_stride = (mock(problem.dtype_c), 1) if problem.bias else (None, 0)  # as launch() passes them
    scaled, scales = mock_scales(problem)
    resources = loaded_resources(kernel.warmup(
        mock(problem.dtype_a), mock(problem.dtype_b), mock(out_dtype), bias, *scales, *fused, M, N, K,
        *_operand_strides(M, K, problem.col_a), *_operand_strides(K, N, problem.col_b), *out_strides, bias_stride,
        EVEN_K=K % (config.BLOCK_SIZE_K * config.SPLIT_K) == 0, HAS_BIAS=problem.bias, HAS_SCALES=scaled,
        num_warps=config.num_warps, num_stages=config.num_stages, grid=_grid(config, M, N), **dict(config.options),
    ))
    if config.reduction_kernel:
        reduce_kernel.warmup(mock(out_dtype), mock(problem.dtype_c), bias, *scales, M, N, M * N, N, 1, N, 1,
                             bias_stride, HAS_BIAS=problem.bias, HAS_SCALES=scaled, grid=(1, 1))._init_handles()
    return resources


def mock_scales(problem: Problem) -> tuple:
    """(whether the launch passes fp8 scales, the two scale arguments' stand-ins for compiling ahead)."""
    mock = triton.runtime.jit.MockTensor
    scaled = is_fp8(problem.dtype_a)
    return scaled, ((mock(torch.float32), mock(torch.float32)) if scaled else (None, None))


def loaded_resources(compiled) -> dict:
    """Load a compiled kernel's binary (raises OutOfResources when it cannot run) and return its resource use."""
    compiled._init_handles()
    return {"registers": compiled.n_regs, "spills": compiled.n_spills, "shared_bytes": compiled.metadata.shared}

