"""Pruning rules: which configs of the range space are worth compiling for one size on one GPU.

Each rule is a predicate on (problem, config, device) that says whether a config is kept, written against the GPU's
own facts (`DeviceProfile`) instead of numbers for one card. The rules every family shares are in `common`, those of
the plain family's knobs in `plain`, of the persistent TMA family in `tma` and `tma_waves`, and of the warp-group
kernel in `warp_group`; AMD's knobs (the MFMA size and kpack) are the matrix_instruction rule's. Here they are put in
the order the pruner asks them, which is the order it counts removals in.
"""

from __future__ import annotations

from tune_gemm.core.geometry import (
    EDGE_SLICE_K_TILES,
    NARROWEST_DOT,
    PADDED_ROW_BYTES,
    TAIL_SLICE_K_TILES,
    cdiv,
    k_slices,
    next_power_of_two,
)
from tune_gemm.space.rules.common import (
    BLOCK_SIZE_RULE,
    CLUSTERS_RULE,
    DOT_MIN_ROWS,
    GROUP_M_RULE,
    K_TILING_RULE,
    LARGE_GEMM_LEAST_BLOCK_K,
    LARGE_GEMM_RULE,
    MASKED_K_MAX_PADDING,
    MATRIX_INSTRUCTION_RULE,
    NUM_STAGES_RULE,
    REGISTERS_RULE,
    SHARED_MEMORY_RULE,
    TILE,
    VECTOR_BYTES,
    WIDEST_PART,
    Rule,
    accumulator_registers,
    even_k,
    k_iterations,
    least_block_k,
    min_block_k,
    operand_row_bytes,
    output_tiles,
    pads_k_little,
    repeats_group_order,
    shared_memory_bytes,
    tile_columns,
    tile_rows,
    without_instruction,
)
from tune_gemm.space.rules.plain import (
    FUSED_REDUCE_RULE,
    SPLIT_K_RULE,
    STATIC_SHAPE_MAX_K_ITERATIONS,
    STATIC_SHAPE_PLAIN_RULE,
    STATIC_SHAPE_RULE,
)
from tune_gemm.space.rules.tma import (
    ALIGN_ROWS_RULE,
    CLUSTER_EPILOGUE_SUBTILE_RULE,
    COMPOUND_LEAST_PART,
    COMPOUND_TILE_COST,
    COMPOUND_TILE_RULE,
    EPILOGUE_SUBTILE_RULE,
    TMA_CLUSTERS_RULE,
    TMA_HARDWARE_RULE,
    TMA_SHARED_MEMORY_RULE,
    TMA_SPLIT_K_RULE,
    TMA_TILE_RULE,
    WARP_SPECIALIZE_WARPS_RULE,
    WARP_SPECIALIZED_TILE_4_WARPS,
    WIDE_TILE_COST,
    c_stored_by_descriptor,
    epilogue_shared_bytes,
    swap_ab_rule,
    wave_cost,
)
from tune_gemm.space.rules.tma_waves import (
    NARROW_EDGE_RULE,
    STREAM_K_LEAST_IDLE,
    STREAM_K_RULE,
    TAIL_LEAST_SLICES,
    edge_columns,
    edge_slices,
    persistent_programs,
    tail_slices,
)
from tune_gemm.space.rules.warp_group import (
    WARP_GROUP_LEAST_EXTRA,
    WARP_GROUP_ONLY_WARPS,
    WARP_GROUP_ROWS,
    WARP_GROUP_TILES_RULE,
    WARP_GROUPS_RULE,
    WIDEST_OF_FOUR_WARP_GROUPS,
    WIDEST_OF_TWO_WARP_GROUPS,
    warp_group_warps,
)

# The rules that read no kernel-family knob: pruning checks them once per tile config.
RULES: tuple[Rule, ...] = (
    # first, at two comparisons for most configs: 12 warps and 96-wide tiles exist for one kernel
    WARP_GROUP_TILES_RULE,
    FUSED_REDUCE_RULE,  # next: it removes half the space (FUSED_REDUCE without a split) at one comparison each
    MATRIX_INSTRUCTION_RULE,
    K_TILING_RULE,
    SPLIT_K_RULE,
    GROUP_M_RULE,
    SHARED_MEMORY_RULE,
    REGISTERS_RULE,
    BLOCK_SIZE_RULE,
    LARGE_GEMM_RULE,
    NUM_STAGES_RULE,
    CLUSTERS_RULE,
    STATIC_SHAPE_RULE,
)

# Rules about the kernel family knobs (PERSISTENT_TMA, WARP_SPECIALIZE, EPILOGUE_SUBTILE, STREAM_K, ...). They run after
# RULES, which never look at those knobs: pruning checks RULES once per tile config and these once per family.
FAMILY_RULES: tuple[Rule, ...] = (
    WARP_GROUPS_RULE,
    COMPOUND_TILE_RULE,  # next: most of a compound tile's family variants fail it, at two comparisons for the others
    TMA_HARDWARE_RULE,
    STATIC_SHAPE_PLAIN_RULE,
    TMA_TILE_RULE,
    TMA_SPLIT_K_RULE,
    EPILOGUE_SUBTILE_RULE,
    TMA_SHARED_MEMORY_RULE,
    STREAM_K_RULE,
    WARP_SPECIALIZE_WARPS_RULE,
    CLUSTER_EPILOGUE_SUBTILE_RULE,
    swap_ab_rule(RULES),  # C^T must pass RULES
    ALIGN_ROWS_RULE,
    NARROW_EDGE_RULE,
    TMA_CLUSTERS_RULE,
)

RULES_BY_NAME = {rule.name: rule for rule in RULES + FAMILY_RULES}

__all__ = [
    "COMPOUND_LEAST_PART",
    "COMPOUND_TILE_COST",
    "DOT_MIN_ROWS",
    "EDGE_SLICE_K_TILES",
    "FAMILY_RULES",
    "LARGE_GEMM_LEAST_BLOCK_K",
    "MASKED_K_MAX_PADDING",
    "NARROWEST_DOT",
    "PADDED_ROW_BYTES",
    "RULES",
    "RULES_BY_NAME",
    "STATIC_SHAPE_MAX_K_ITERATIONS",
    "STREAM_K_LEAST_IDLE",
    "TAIL_LEAST_SLICES",
    "TAIL_SLICE_K_TILES",
    "TILE",
    "VECTOR_BYTES",
    "WARP_GROUP_LEAST_EXTRA",
    "WARP_GROUP_ONLY_WARPS",
    "WARP_GROUP_ROWS",
    "WARP_SPECIALIZED_TILE_4_WARPS",
    "WIDEST_OF_FOUR_WARP_GROUPS",
    "WIDEST_OF_TWO_WARP_GROUPS",
    "WIDEST_PART",
    "WIDE_TILE_COST",
    "Rule",
    "accumulator_registers",
    "c_stored_by_descriptor",
    "cdiv",
    "edge_columns",
    "edge_slices",
    "epilogue_shared_bytes",
    "even_k",
    "k_iterations",
    "k_slices",
    "least_block_k",
    "min_block_k",
    "next_power_of_two",
    "operand_row_bytes",
    "output_tiles",
    "pads_k_little",
    "persistent_programs",
    "repeats_group_order",
    "shared_memory_bytes",
    "tail_slices",
    "tile_columns",
    "tile_rows",
    "warp_group_warps",
    "wave_cost",
    "without_instruction",
]
