"""The persistent TMA kernel family (Hopper and newer): one program per SM walks the output tiles, loading A and B
through tensor descriptors. Generated modules import it as a library; tune_gemm.kernels.bound launches it at run time.

    device    the @triton.jit code: tma_persistent_tile and its parts (compound tiles, edge tiles, stream-K, split K)
    copies    operands copied before the GEMM: rows padded to whole lines, a B copied into K-major order
    slicing   TmaVariant, the persistent grid, K slices and scratch, and the constants that follow from them
    operands  the launch's descriptors, and the same rebuilt over another call's matrices (replays)
    launch    launch_tma and compile_tma_config

Module-level switches (INTERPRETER_PROGRAMS, a copy's PAD_BLOCK) live in the submodule that reads them. The integer
geometry (edge widths, K slices, tile-side parts) is tune_gemm.core.geometry's.
"""

from tune_gemm.kernels.tma_family.copies import (
    PAD_BLOCK,
    TMA_ALIGNMENT_BYTES,
    copies_b_k_major,
    is_column_major,
    k_major_copy,
    operand_matrix,
    pad_rows,
    tma_readable,
    tma_views,
)
from tune_gemm.kernels.tma_family.device import (
    compound_tile,
    edge_part,
    tma_persistent_tile,
)
from tune_gemm.kernels.tma_family.launch import (
    compile_tma_config,
    launch_tma,
    takes_copies,
)
from tune_gemm.kernels.tma_family.operands import (
    CompoundOperands,
    EdgeOperands,
    OperandViews,
    ReplayedTma,
    TmaArguments,
    edge_claims,
    output_block,
    rebased,
    tile_operands,
    tma_arguments,
    tma_operands,
)
from tune_gemm.kernels.tma_family.slicing import (
    INTERPRETER_PROGRAMS,
    TmaVariant,
    accumulator_dtype,
    edge_options,
    edge_split,
    edge_stages,
    is_compound,
    launch_scratch,
    pdl_options,
    persistent_grid,
    persistent_programs,
    tail_options,
    tail_split,
)

__all__ = [
    "INTERPRETER_PROGRAMS", "PAD_BLOCK", "TMA_ALIGNMENT_BYTES", "CompoundOperands", "EdgeOperands", "OperandViews",
    "ReplayedTma", "TmaArguments", "TmaVariant", "accumulator_dtype", "compile_tma_config", "copies_b_k_major",
    "compound_tile", "edge_claims", "edge_options", "edge_part", "edge_split", "edge_stages", "is_column_major",
    "is_compound", "k_major_copy", "launch_scratch", "launch_tma", "operand_matrix", "output_block", "pad_rows",
    "pdl_options", "persistent_grid", "persistent_programs", "rebased", "tail_options", "tail_split", "takes_copies",
    "tile_operands", "tma_arguments", "tma_operands", "tma_persistent_tile", "tma_readable",
    "tma_views",
]
