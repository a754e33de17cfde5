"""Operands the copy engine cannot address as they are, copied first: rows padded to whole 128-byte lines
(tma_views, one kernel for a launch's copies) and a row-major 8-bit or fp32 B copied into K-major order
(k_major_copy)."""

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from tune_gemm.core.geometry import PADDED_ROW_BYTES, ceil_div
from tune_gemm.kernels.matmul_family.replay import jit_launch, launch_replayed

TMA_ALIGNMENT_BYTES = 16  # the copy engine reads rows whose start addresses are 16-byte aligned


def tma_readable(matrix, row_bytes: int = TMA_ALIGNMENT_BYTES) -> bool:
    """Whether the copy engine reads `matrix` as it is, its rows starting on multiples of `row_bytes` (at least 16)."""
    inner_unit = matrix.stride(1) == 1
    return inner_unit and (matrix.stride(0) * matrix.element_size()) % row_bytes == 0 and (
        matrix.data_ptr() % TMA_ALIGNMENT_BYTES == 0)


def padded_columns(cols: int, element_bytes: int) -> int:
    """Row length, in elements, of a padded copy: rounded up to whole 128-byte lines (PADDED_ROW_BYTES)."""
    per_row = PADDED_ROW_BYTES // element_bytes
    return ceil_div(cols, per_row) * per_row


PAD_BLOCK = 1024  # elements per program: with 4 warps, the fastest of four blocks tried at the odd public shape
INT32_OFFSETS = 2**31  # element offsets below this fit the 32-bit arithmetic the copy is fastest in


@triton.jit
def pad_rows_part(src, dst, program, rows, cols, src_stride_r, src_stride_c, PADDED_COLS: tl.constexpr,
                  BLOCK: tl.constexpr, WIDE: tl.constexpr):
    """Block `program` of dst (rows x PADDED_COLS, contiguous) in flat order: src (rows x cols, any strides) where
    a column exists, zero in the padding. Flat order keeps every store whole and aligned; the padded row length is a
    constant so that splitting a flat index into (row, column) needs no division at run time."""
    flat = program * BLOCK + tl.arange(0, BLOCK)
    if WIDE:
        flat = flat.to(tl.int64)
    r = flat // PADDED_COLS
    c = flat % PADDED_COLS
    values = tl.load(src + r * src_stride_r + c * src_stride_c, mask=(r < rows) & (c < cols), other=0.0)
    tl.store(dst + flat, values, mask=r < rows)


@triton.jit
def pad_rows_kernel(src0, dst0, src1, dst1, rows0, cols0, src_stride_r0, src_stride_c0, blocks0,
                    rows1, cols1, src_stride_r1, src_stride_c1,
                    PADDED_COLS0: tl.constexpr, PADDED_COLS1: tl.constexpr, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    """The padding copies of one launch in one kernel: programs 0..blocks0-1 copy the first matrix, the rest the
    second (src1 is None when only one matrix needs it)."""
    program = tl.program_id(axis=0)
    if program < blocks0:
        pad_rows_part(src0, dst0, program, rows0, cols0, src_stride_r0, src_stride_c0, PADDED_COLS0, BLOCK, WIDE)
    elif src1 is not None:
        pad_rows_part(src1, dst1, program - blocks0, rows1, cols1, src_stride_r1, src_stride_c1, PADDED_COLS1, BLOCK,
                      WIDE)


TRANSPOSE_BLOCK = 64  # a square tile of B per program of the K-major copy


@triton.jit
def k_major_copy_kernel(src, dst, K, N, stride_k, stride_n, dst_stride, PADDED_K, BLOCK: tl.constexpr):
    """dst[n, k] = src[k, n] for one BLOCK x BLOCK tile, zero in dst's padding columns (K <= k < PADDED_K). Triton
    lays the loaded tile out along src's unit stride and the stored one along dst's rows, turning it through shared
    memory between the two, so that both sides are read and written whole."""
    n = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    k = tl.program_id(axis=1) * BLOCK + tl.arange(0, BLOCK)
    tile = tl.load(src + k[:, None].to(tl.int64) * stride_k + n[None, :].to(tl.int64) * stride_n,
                   mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
    tl.store(dst + n[:, None].to(tl.int64) * dst_stride + k[None, :], tl.trans(tile),
             mask=(n[:, None] < N) & (k[None, :] < PADDED_K))


def k_major_copy(b):
    """A row-major B (K x N) copied into the rows of B^T (N x K, rows padded to whole 128-byte lines): the K-major
    layout in which wgmma reads 8-bit and tf32 operands. Given such a row-major B, Triton re-lays each tile out in
    shared memory inside the GEMM instead: at 4096^3 fp8 that GEMM took 308.9 us, against 97.7 with B column-major;
    in fp32 (tf32) 1719.8 us against 356.1, the copy 50.3. Returns B's column-major view of the copy."""
    K, N = b.shape
    padded = torch.empty((N, padded_columns(K, b.element_size())), dtype=b.dtype, device=b.device)
    launch_replayed(k_major_copy_kernel, (b, padded), (), lambda: jit_launch(
        k_major_copy_kernel, (ceil_div(N, TRANSPOSE_BLOCK), ceil_div(padded.shape[1], TRANSPOSE_BLOCK)),
        (b, padded, K, N, b.stride(0), b.stride(1), padded.stride(0), padded.shape[1]), BLOCK=TRANSPOSE_BLOCK))
    return padded[:, :K].t()


def copies_b_k_major(element_bytes: int, column_major: bool) -> bool:
    """Whether the launch copies B into K-major order (k_major_copy): an 8-bit or 32-bit B that is not column-major
    (wgmma reads only 16-bit operands in either order)."""
    return element_bytes != 2 and not column_major


@dataclass(frozen=True)
class PaddingCopy:
    """One operand the copy engine cannot address, and the row-padded buffer it is copied to."""

    source: object
    padded: object

    @property
    def blocks(self) -> int:
        return ceil_div(self.padded.numel(), PAD_BLOCK)

    def sizes(self) -> tuple:
        """The kernel's rows, cols and source strides for this copy."""
        return (*self.source.shape, *self.source.stride())

    def needs_wide_offsets(self) -> bool:
        rows, cols = self.source.shape
        source_extent = (rows - 1) * abs(self.source.stride(0)) + (cols - 1) * abs(self.source.stride(1)) + 1
        return max(self.blocks * PAD_BLOCK, source_extent) >= INT32_OFFSETS


def pad_rows(copies: list) -> None:
    """Run the copies (one or two) as one kernel launch."""
    first, second = copies[0], (copies[1] if len(copies) > 1 else None)
    matrices = (first.source, first.padded, *((second.source, second.padded) if second else (None, None)))
    launch_replayed(pad_rows_kernel, matrices, (), lambda: jit_launch(
        pad_rows_kernel, (sum(copy.blocks for copy in copies),),
        (*matrices, *first.sizes(), first.blocks, *(second.sizes() if second else (0, 0, 0, 0))),
        PADDED_COLS0=first.padded.shape[1], PADDED_COLS1=second.padded.shape[1] if second else 1, BLOCK=PAD_BLOCK,
        WIDE=any(copy.needs_wide_offsets() for copy in copies)))


def tma_views(matrices: list, align_rows: bool = False) -> list:
    """Each matrix (rows, cols) itself when the copy engine can address it, else a copy whose rows are padded to
    128 bytes (a view of the original shape). align_rows: copy rows that start 16-byte aligned but off a 128-byte
    line too (Config.ALIGN_ROWS). The copies of one launch run as one kernel: odd leading dimensions
    of A and B pay for it inside the timed launch, as they would in use. At 4095x4097x1023 (fp16, H100) it takes
    13.8 us, Inductor's two padding kernels 17.5 us, torch's two copies 27.2 us."""
    views, copies = [], []
    for matrix in matrices:
        if tma_readable(matrix, PADDED_ROW_BYTES if align_rows else TMA_ALIGNMENT_BYTES):
            views.append(matrix)
            continue
        rows, cols = matrix.shape
        padded = torch.empty((rows, padded_columns(cols, matrix.element_size())), dtype=matrix.dtype,
                             device=matrix.device)
        views.append(padded[:, :cols])
        copies.append(PaddingCopy(matrix, padded))
    if copies:
        pad_rows(copies)
    return views


def operand_matrix(matrix, column_major: bool):
    """The (rows, cols) matrix the copy engine reads for an operand: a column-major one's transpose."""
    return matrix.t() if column_major else matrix


def is_column_major(matrix) -> bool:
    return matrix.stride(0) == 1 and matrix.stride(1) != 1
