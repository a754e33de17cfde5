"""Speed-of-light references for one GEMM's inputs, timed beside the GEMMs (`bench_gemm.py --floors`).

A shape's time has two floors no GEMM kernel goes under, whatever its tiles:

- the launch floor: one program of one warp that does nothing. What is left in the timed window is the device
  events' own cost and the launch of a kernel; a launch-bound GEMM (16^3) is measured against it;
- the memory floor: one pass over the bytes a GEMM must move, A and B read once and C written once, by a
  streaming kernel with every block in flight at once. Timed like the GEMMs, after the benchmark's L2 flush, it
  pays what they pay: the flush leaves L2 full of dirty lines, and reading the operands writes those back first.
  A memory-bound GEMM (16x4096x4096) is measured against it.

Compute-bound shapes sit far above both; their floor is the tensor cores' peak at the clock the card holds under
its power limit, measured by benchmarks/sustained.py rather than here.
"""

from __future__ import annotations

from collections.abc import Callable

import triton
import triton.language as tl

from tune_gemm.space.rules import cdiv

STREAM_BLOCK = 8192  # elements per program of the streaming kernel: 16 KiB of fp16, in 16-byte loads
ELEMENTS_PER_WARP = 1024  # 32 per thread: a few 16-byte loads each
LAUNCH_FLOOR = "launch floor"
MEMORY_FLOOR = "memory floor"


@triton.jit
def empty_kernel(unused_ptr):
    """Nothing: the launch alone."""
    pass


@triton.jit
def block_sum(ptr, start, count, BLOCK: tl.constexpr):
    """The sum of elements [start, start + BLOCK) of a flat tensor of `count`, those past the end left out. Only
    the last block is masked: a mask on an odd count would cost the others their 16-byte loads."""
    index = start + tl.arange(0, BLOCK)
    if start + BLOCK <= count:
        values = tl.load(ptr + index)
    else:
        values = tl.load(ptr + index, mask=index < count, other=0)
    return tl.sum(values.to(tl.float32), axis=0)


@triton.jit
def zero_block(ptr, start, count, BLOCK: tl.constexpr):
    """Zeros into elements [start, start + BLOCK) of a flat tensor of `count`, masked in the last block only."""
    index = start + tl.arange(0, BLOCK)
    zeros = tl.zeros((BLOCK,), ptr.dtype.element_ty)
    if start + BLOCK <= count:
        tl.store(ptr + index, zeros)
    else:
        tl.store(ptr + index, zeros, mask=index < count)


@triton.jit
def stream_kernel(a_ptr, b_ptr, c_ptr, sums_ptr, a_count: tl.constexpr, b_count: tl.constexpr, c_count: tl.constexpr,
                  a_blocks: tl.constexpr, b_blocks: tl.constexpr, BLOCK: tl.constexpr):
    """Program p reads block p of A's storage, or of B's after A's blocks, or writes zeros into block p of C's after
    both. Each read block's sum is stored in sums[p], so that the compiler cannot drop the loads. The counts are
    compile-time constants, as a STATIC_SHAPE GEMM's sizes are: at launch-bound sizes the floor is not to pay for
    index arithmetic a GEMM kernel can do without."""
    pid = tl.program_id(axis=0)
    if pid < a_blocks:
        tl.store(sums_ptr + pid, block_sum(a_ptr, pid * BLOCK, a_count, BLOCK))
    elif pid < a_blocks + b_blocks:
        tl.store(sums_ptr + pid, block_sum(b_ptr, (pid - a_blocks) * BLOCK, b_count, BLOCK))
    else:
        zero_block(c_ptr, (pid - a_blocks - b_blocks) * BLOCK, c_count, BLOCK)


def storage(matrix):
    """The matrix's elements as a flat view in storage order: row- or column-major, both dense."""
    if matrix.is_contiguous():
        return matrix.reshape(-1)
    if matrix.t().is_contiguous():
        return matrix.t().reshape(-1)
    raise ValueError(f"a matrix of shape {tuple(matrix.shape)} and strides {matrix.stride()} is not dense")


def block_for(largest: int) -> int:
    """Elements per program: STREAM_BLOCK, or for small matrices the power of two that holds the largest whole,
    so that a tiny GEMM's floor is not a kernel mostly masked off."""
    return min(STREAM_BLOCK, triton.next_power_of_2(max(largest, 128)))


def stream_call(a, b, c, block: int | None = None) -> tuple[Callable[[], None], object]:
    """(a call streaming A and B once and writing C once, the tensor of its per-block sums)."""
    import torch

    flat_a, flat_b, flat_c = storage(a), storage(b), storage(c)
    block = block or block_for(max(flat_a.numel(), flat_b.numel(), flat_c.numel()))
    warps = min(8, max(1, block // ELEMENTS_PER_WARP))
    a_blocks, b_blocks = cdiv(flat_a.numel(), block), cdiv(flat_b.numel(), block)
    sums = torch.empty(a_blocks + b_blocks, dtype=torch.float32, device=a.device)
    grid = (a_blocks + b_blocks + cdiv(flat_c.numel(), block),)

    def call() -> None:
        stream_kernel[grid](flat_a, flat_b, flat_c, sums, flat_a.numel(), flat_b.numel(), flat_c.numel(), a_blocks,
                            b_blocks, BLOCK=block, num_warps=warps)

    return call, sums


def floor_calls(a, b, c) -> dict[str, Callable[[], None]]:
    """The two floors of C = A @ B as calls with no arguments, named as bench_gemm's columns. The memory floor
    writes C: time it after the GEMMs' correctness checks, as bench_gemm does."""
    scratch = c.new_empty(1)
    return {LAUNCH_FLOOR: lambda: empty_kernel[(1,)](scratch, num_warps=1), MEMORY_FLOOR: stream_call(a, b, c)[0]}
