"""The cache flush run before a timed launch, outside the time measured: before those of the round that picks the
winner by default, before every timed launch with `--flush all` or the ROCm script's `--icache_flush`.

The ROCm script invalidates AMD's instruction cache (s_icache_inv through hip-python) before each
launch. Nothing equivalent is open to user code on NVIDIA, and we do not depend on hip-python, so
on both vendors the flush is the one that user code can do: a Triton kernel overwrites a buffer of
twice the L2 size, which evicts from L2 every line of the previous launch, its inputs, its output
and its code, so that each launch starts from memory as a cold call in an application does. It
does not invalidate the per-SM/CU first-level caches (L1 data, instruction cache).

The flush kernel is named FLUSH_KERNEL so that timers and profiler parsers can drop its records.
"""

from __future__ import annotations

FLUSH_KERNEL = "tune_gemm_cache_flush"
_BLOCK = 8192  # int32 elements written per program
# Floor on the buffer, for the interpreter (no L2 given): one program's worth, about a millisecond a flush there.
MIN_FLUSH_BYTES = _BLOCK * 4


def flush_bytes(l2_bytes: int) -> int:
    return max(2 * l2_bytes, MIN_FLUSH_BYTES)


def _flush_kernel():
    """The kernel, built on first use so that importing this module needs no Triton."""
    import triton
    import triton.language as tl

    @triton.jit(do_not_specialize=["value"])
    def tune_gemm_cache_flush(buffer_ptr, count, value, BLOCK: tl.constexpr):
        offsets = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(buffer_ptr + offsets, tl.full((BLOCK,), value, tl.int32), mask=offsets < count)

    return tune_gemm_cache_flush


class CacheFlush:
    """Call it to flush: one launch of FLUSH_KERNEL over `flush_bytes(l2_bytes)` bytes."""

    def __init__(self, l2_bytes: int, device: str):
        import torch
        import triton

        self._kernel = _flush_kernel()
        self.buffer = torch.empty(flush_bytes(l2_bytes) // 4, dtype=torch.int32, device=device)
        self._grid = (triton.cdiv(self.buffer.numel(), _BLOCK),)
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1  # written as the value: each flush really rewrites every line
        self._kernel[self._grid](self.buffer, self.buffer.numel(), self.calls, BLOCK=_BLOCK)
