"""The arguments of a persistent TMA launch: tensor descriptors over A, B (or their copies) and C for each part of a
tile and each edge width (tma_arguments), and the same arguments rebuilt over another call's matrices for a replayed
launch (TmaArguments.on, ReplayedTma)."""

import functools
from dataclasses import dataclass

import torch
from triton.tools.tensor_descriptor import TensorDescriptor

from tune_gemm.core.geometry import block_parts, edge_columns
from tune_gemm.kernels.matmul_family.device import INTERPRETED
from tune_gemm.kernels.matmul_family.specs import TileConfig
from tune_gemm.kernels.tma_family.copies import (
    copies_b_k_major,
    is_column_major,
    k_major_copy,
    operand_matrix,
    tma_readable,
    tma_views,
)
from tune_gemm.kernels.tma_family.slicing import TmaVariant


def output_block(rows: int, cols: int, epilogue_subtile: bool) -> list:
    """The block of C's descriptor for a rows x cols output tile (or part of one): half as wide with EPILOGUE_SUBTILE,
    which stores it in two halves."""
    return [rows, cols // 2 if epilogue_subtile else cols]



def rebased(descriptor: TensorDescriptor, base) -> TensorDescriptor:
    """`descriptor` over another matrix of the same shape, strides and dtype: a copy, without the constructor's
    checks, which matrices of one call signature pass alike (about 3 us a descriptor)."""
    copy = object.__new__(type(descriptor))
    copy.__dict__.update(descriptor.__dict__, base=base)
    return copy


_NO_MATRIX = object()  # C in a template of launch arguments (TmaArguments.template)


def _on(operand, matrix):
    """A launch's operand for another call: a descriptor over `matrix`, `matrix` itself where the operand is a matrix
    (C stored through pointers), None where there is none."""
    if operand is None:
        return None
    return rebased(operand, matrix) if isinstance(operand, TensorDescriptor) else matrix


@dataclass(frozen=True)
class EdgeOperands:
    """What a NARROW_EDGE launch passes for its edge tiles, one entry per edge width (edge_columns)."""

    widths: tuple[int, ...] = ()  # the kernel's EDGE_N (and EDGE_N2)
    b_descs: tuple = ()  # B's descriptor for the tiles of each width
    c_args: tuple = ()  # C's descriptor for them, or C itself where C is stored through pointers
    claims: object = None  # the counter the programs claim edge tiles from, zero at launch

    def kernel_arguments(self) -> tuple:
        """The kernel's b_edge, c_edge, b_edge2, c_edge2 and edge_claims: None where there is no such edge."""
        pairs = list(zip(self.b_descs, self.c_args)) + [(None, None)] * (2 - len(self.widths))
        return (*(operand for pair in pairs for operand in pair), self.claims)

    def on(self, b_view, c, claims=None) -> "EdgeOperands":
        """The same operands over other matrices (see TmaArguments.on), with another claims counter."""
        return EdgeOperands(self.widths, tuple(_on(desc, b_view) for desc in self.b_descs),
                            tuple(_on(arg, c) for arg in self.c_args), claims)


@dataclass(frozen=True)
class CompoundOperands:
    """What a launch passes for the parts of a compound tile (compound_tile): the kernel's a_lower, b_right, c_right,
    c_lower and c_corner, None where the tile has no such part, and its EXTRA_M and EXTRA_N."""

    extra_m: int = 0
    extra_n: int = 0
    a_lower: object = None  # A's descriptor for the rows of the lower part
    b_right: object = None  # B's descriptor for the columns of the right part
    c_parts: tuple = (None, None, None)  # C's descriptors (or C itself) for the right, lower and corner parts

    def kernel_arguments(self) -> tuple:
        return (self.a_lower, self.b_right, *self.c_parts)

    def on(self, a_view, b_view, c) -> "CompoundOperands":
        """The same operands over other matrices (see TmaArguments.on)."""
        if not (self.extra_m or self.extra_n):
            return self
        return CompoundOperands(self.extra_m, self.extra_n, _on(self.a_lower, a_view), _on(self.b_right, b_view),
                                tuple(_on(arg, c) for arg in self.c_parts))

    def options(self) -> dict:
        """EXTRA_M and EXTRA_N where set: kernels specialized before compound tiles existed stay the same."""
        return {name: extra for name, extra in (("EXTRA_M", self.extra_m), ("EXTRA_N", self.extra_n)) if extra}


def tile_operands(config: TileConfig, epilogue_subtile: bool, a_block, b_block, c_block) -> tuple:
    """(A's, B's and C's operand for a tile's main part, CompoundOperands for the other parts) of a launch, the launch's
    and the compile-ahead's alike: a_block(rows) and b_block(cols) make A's and B's descriptors for a part's rows or
    columns, c_block(rows, cols, epilogue_subtile) C's (or return C itself where C is stored through pointers)."""
    main_m, extra_m = block_parts(config.BLOCK_SIZE_M)
    main_n, extra_n = block_parts(config.BLOCK_SIZE_N)
    main = (a_block(main_m), b_block(main_n), c_block(main_m, main_n, epilogue_subtile))
    if not (extra_m or extra_n):
        return (*main, CompoundOperands())
    c_parts = (c_block(main_m, extra_n, epilogue_subtile) if extra_n else None,
               c_block(extra_m, main_n, epilogue_subtile) if extra_m else None,
               c_block(extra_m, extra_n, epilogue_subtile) if extra_m and extra_n else None)
    return (*main, CompoundOperands(extra_m, extra_n, a_block(extra_m) if extra_m else None,
                                    b_block(extra_n) if extra_n else None, c_parts))


@dataclass(frozen=True)
class OperandViews:
    """A and B as a launch's descriptors read them: each operand_matrix of the caller's matrix or of its copy."""

    a: object
    b: object
    a_col: bool  # whether A (B) is read column-major: `a` (`b`) is its transpose
    b_col: bool
    copied: bool  # whether a copy (K-major or padding) made either of them


def tma_operands(variant: TmaVariant, a, b) -> OperandViews:
    """A and B as the copy engine reads them, copied where it must be (a row-major 8-bit or fp32 B into K-major order,
    k_major_copy; operands the copy engine cannot address or, with variant.align_rows, whose rows start off 128-byte
    lines, padded: tma_views). What is copied follows from the call_signature."""
    b_copy = k_major_copy(b) if copies_b_k_major(b.element_size(), is_column_major(b)) else b
    a_col, b_col = is_column_major(a), is_column_major(b_copy)
    operands = [operand_matrix(a, a_col), operand_matrix(b_copy, b_col)]
    a_view, b_view = views = tma_views(operands, variant.align_rows)
    copied = b_copy is not b or any(view is not operand for view, operand in zip(views, operands))
    return OperandViews(a_view, b_view, a_col, b_col, copied)


def edge_claims(device):
    """The zeroed counter a NARROW_EDGE launch's programs claim edge tiles from."""
    return torch.zeros(1, dtype=torch.int32, device=device)


@dataclass(frozen=True)
class TmaArguments:
    """What a launch passes for A, B and C: built on the host at every call."""

    a_desc: TensorDescriptor
    b_desc: TensorDescriptor
    c: object  # C's descriptor when c_tma, else C itself
    stride_cm: int | None  # None with a descriptor: unused, and kept out of the kernel's specialization
    stride_cn: int | None
    a_col: bool
    b_col: bool
    c_tma: bool
    after_copies: bool  # a copy (K-major or padding) runs just before the GEMM (see pdl_options)
    edges: EdgeOperands
    parts: CompoundOperands

    def on(self, views: OperandViews | None, c, claims=None) -> "TmaArguments":
        """These arguments for another call of the same call_signature: each descriptor over the same part of that
        call's operand views (tma_operands) or C, C itself where C is stored through pointers, and the edge tiles'
        `claims` counter (edge_claims) where there are edge tiles."""
        a_view, b_view = (views.a, views.b) if views else (None, None)
        return TmaArguments(_on(self.a_desc, a_view), _on(self.b_desc, b_view), _on(self.c, c), self.stride_cm,
                            self.stride_cn, self.a_col, self.b_col, self.c_tma, self.after_copies,
                            self.edges.on(b_view, c, claims), self.parts.on(a_view, b_view, c))

    def template(self) -> "TmaArguments":
        """These arguments over no caller's matrix, as a Replay keeps them (`on` puts a call's matrices in)."""
        return self.on(None, _NO_MATRIX)

    def leading(self, bias, scale_a, scale_b, workspace=None, arrivals=None) -> tuple:
        """The kernel's arguments before M: the matrices' descriptors (or C), the bias, scales and scratch."""
        return (self.a_desc, self.b_desc, self.c, bias, scale_a, scale_b, workspace, arrivals,
                *self.edges.kernel_arguments(), *self.parts.kernel_arguments())


def tma_arguments(config: TileConfig, variant: TmaVariant, a, b, c) -> TmaArguments:
    """The descriptors of one launch, over A and B as tma_operands reads them (and copies them)."""
    views = tma_operands(variant, a, b)
    bm, bn, bk = config.BLOCK_SIZE_M, config.BLOCK_SIZE_N, config.BLOCK_SIZE_K
    widths = edge_columns(b.shape[1], bn) if variant.narrow_edge else ()
    c_tma = tma_readable(c)
    if c_tma:
        def c_block(rows, cols, subtile=False):
            return TensorDescriptor.from_tensor(c, output_block(rows, cols, subtile))
        stride_cm = stride_cn = None
    else:
        def c_block(rows, cols, subtile=False):
            return c
        stride_cm, stride_cn = c.stride()

    def a_block(rows):
        return TensorDescriptor.from_tensor(views.a, [bk, rows] if views.a_col else [rows, bk])

    def b_block(cols):
        return TensorDescriptor.from_tensor(views.b, [cols, bk] if views.b_col else [bk, cols])
    edges = EdgeOperands(widths, tuple(b_block(width) for width in widths),
                         tuple(c_block(bm, width) for width in widths), edge_claims(c.device) if widths else None)
    a_desc, b_desc, c_arg, parts = tile_operands(config, variant.epilogue_subtile, a_block, b_block, c_block)
    return TmaArguments(a_desc, b_desc, c_arg, stride_cm, stride_cn, views.a_col, views.b_col, c_tma,
                        views.copied and not INTERPRETED, edges, parts)


@dataclass(frozen=True)
class ReplayedTma:
    """What a replayed TMA launch (a Replay's template) builds again at each call: its arguments over the call's
    matrices (a TmaArguments.template), and its scratch (launch_scratch for the launch's sizes)."""

    arguments: TmaArguments
    scratch: functools.partial

    def leading(self, variant: TmaVariant, a, b, c, bias, scale_a, scale_b) -> tuple:
        """The leading arguments of a launch on these matrices, after their copies, if the launch makes any."""
        claims = edge_claims(c.device) if self.arguments.edges.widths else None
        return self.arguments.on(tma_operands(variant, a, b), c, claims).leading(bias, scale_a, scale_b,
                                                                                  *self.scratch())
