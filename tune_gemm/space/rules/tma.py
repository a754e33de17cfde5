"""The rules of the persistent TMA family (PERSISTENT_TMA, tune_gemm.kernels.tma_family): where the GPU has it, its
tiles, split K, epilogue, shared memory, warp specialization, clusters, swapped operands, aligned rows and compound
tiles. Its ways of filling the last wave and the edge columns are tune_gemm.space.rules.tma_waves'."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from tune_gemm.core.config import Config, Family
from tune_gemm.core.device import DeviceProfile
from tune_gemm.core.geometry import (
    PADDED_ROW_BYTES,
    TMA_ALIGNMENT_BYTES,
    block_parts,
    cdiv,
    is_compound,
    tile_count,
)
from tune_gemm.core.problem import GemmProblem
from tune_gemm.space.rules.common import (
    TILE,
    WIDEST_PART,
    Rule,
    operand_row_bytes,
    output_tiles,
    shared_memory_bytes,
)
from tune_gemm.space.rules.warp_group import WARP_GROUP_LEAST_EXTRA


def _tma_hardware(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    return not config.PERSISTENT_TMA or device.tma


def epilogue_shared_bytes(problem: GemmProblem, config: Config) -> int:
    """Shared memory the TMA family stages its output tile in before the store (half with EPILOGUE_SUBTILE): the
    copy engine's source buffer, or, for a C it cannot address, the layout conversion before the pointer store."""
    if not config.PERSISTENT_TMA:
        return 0
    tile_c = config.BLOCK_SIZE_M * config.BLOCK_SIZE_N * problem.dtype_c.bytes
    return tile_c // 2 if config.EPILOGUE_SUBTILE else tile_c


def _tma_tile(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # The TMA family exists for Hopper's warpgroup MMA on large tiles: 64-row warpgroup tiles at least 64 wide, whole
    # warpgroups of 4 warps, K tiles of at least 128 bytes (the copy engine's widest swizzle, which keeps the matrix
    # units' shared-memory reads free of bank conflicts; BLOCK_K >= 128 for 1-byte inputs. On the H100, fp16, 64-byte K
    # tiles with deeper pipelines took 1.08-1.37x as long as 128-byte ones: BENCHMARKS.md), at least
    # double buffering (a single stage leaves the copy engine nothing to overlap), and a K split only with its partials
    # summed inside the kernel (FUSED_REDUCE: the family has no reduction kernel; rule tma_split_k). Any input type:
    # 16-bit, 8-bit (fp8/bf8 with their scales, int8 into int32) and fp32 as tf32 (BLOCK_K >= 32). wgmma reads 8-bit and
    # tf32 operands only K-major: the launch copies a row-major B of those types into K-major order first
    # (tune_gemm.kernels.tma_family.k_major_copy). The warp-group kernel has rules of its own (warp_groups).
    if config.family is not Family.PERSISTENT_TMA:
        return True
    return ((config.SPLIT_K == 1 or bool(config.FUSED_REDUCE))
            and config.BLOCK_SIZE_M >= 64 and config.BLOCK_SIZE_N >= 64 and config.num_warps in (4, 8)
            and config.BLOCK_SIZE_K * problem.dtype_a.bytes >= 128 and config.num_stages >= 2)


def _tma_split_k(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # The persistent programs walk a split's K slices as units of work (tune_gemm.kernels.tma_family.split_k_part): a
    # split pays where the tiles alone leave SMs idle, and no more of it than fills them, since every slice past that
    # adds a partial tile to write and sum and the units queue behind the first wave anyway. So SPLIT_K > 1 only where
    # half the split would leave an SM idle: at 1024x1024 in 64 tiles of 128x128 on 132 SMs, 2 and 4. Not with STREAM_K
    # or NARROW_EDGE (other ways of filling the last wave), clusters or warp specialization, none measured with it.
    if not (config.PERSISTENT_TMA and config.SPLIT_K > 1):
        return True
    return (output_tiles(problem, config) * config.SPLIT_K // 2 < device.sm_count and not config.STREAM_K
            and not config.NARROW_EDGE and config.num_ctas == 1 and not config.WARP_SPECIALIZE)


def _epilogue_subtile(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Halving the output tile pays only where that tile is a large share of shared memory.
    return not config.EPILOGUE_SUBTILE or config.BLOCK_SIZE_N >= 128


def _cluster_epilogue_subtile(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Measured on the H100 (Triton 3.6): the TMA family with EPILOGUE_SUBTILE fails to compile with num_ctas=2
    # ("LLVM ERROR: Invalid bases passed to LinearLayout ... in dimension 'block'").
    return config.num_ctas == 1 or not config.EPILOGUE_SUBTILE


def _tma_clusters(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Measured on the H100 (Triton 3.6, fp16, bf16, fp8 and int8 at 1000^3 to 4096^3 and odd sizes): the TMA family
    # in clusters computed C wrong with a column-major A (num_ctas=2, every size, dtype and variant tried), computed
    # it wrong or failed to compile with num_ctas 4 and 8, and failed to compile with STREAM_K ("PassManager::run
    # failed" in ConvertTritonGPUToLLVM). Clusters of 2 with a row-major A ran right. The plain family ran right in
    # every layout with 2, 4 and 8.
    if not config.PERSISTENT_TMA or config.num_ctas == 1:
        return True
    return config.num_ctas == 2 and not problem.col_a and not config.STREAM_K


def _tma_shared_memory(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    return shared_memory_bytes(problem, config) + epilogue_shared_bytes(problem, config) <= device.max_shared_bytes


def c_stored_by_descriptor(problem: GemmProblem, config: Config) -> bool:
    """Whether the TMA family stores the tuner's (contiguous) C through a descriptor: its rows start 16-byte aligned,
    and the kernel writes C, not C^T (whose inner stride is not 1). Else the kernel stores through masked pointers
    (tune_gemm.kernels.tma_family.store_output_tile)."""
    return not config.SWAP_AB and problem.N * problem.dtype_c.bytes % TMA_ALIGNMENT_BYTES == 0


WARP_SPECIALIZED_TILE_4_WARPS = (64, 128)  # the largest BLOCK_M, BLOCK_N a 4-warp warp-specialized config compiles


def _warp_specialize_warps(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Measured on the H100 (Triton 3.6, 4095x4097x1023, BENCHMARKS.md): warp specialization with 4 warps and C
    # stored through pointers deadlocks the GPU (100% busy at idle power until killed), or fails to compile with
    # EPILOGUE_SUBTILE; the same configs with 8 warps run. Each such config cost a config timeout and a new child.
    # With C stored through its descriptor, tiles past 64x128 fail in Triton's warp-specialization pass: 330 of 590
    # distinct 4-warp configs of six shapes, every one with BLOCK_M > 64 or BLOCK_N > 128, on Triton 3.6, 3.7, 3.8
    # and 3.9 alike (compiled for sm_90a). Each cost a compile slot per shape.
    if not (config.WARP_SPECIALIZE and config.num_warps == 4):
        return True
    max_m, max_n = WARP_SPECIALIZED_TILE_4_WARPS
    return (c_stored_by_descriptor(problem, config) and config.BLOCK_SIZE_M <= max_m
            and config.BLOCK_SIZE_N <= max_n)


def _swap_ab(problem: GemmProblem, config: Config, device: DeviceProfile, tile_rules: tuple[Rule, ...]) -> bool:
    # C^T = B^T A^T runs a tile's long side along the other dimension. Measured on the H100 (Triton 3.6, fp16): at
    # 4095x4097x1023 a 128x256 tile covers C^T with 528 tiles, four waves of 132, where C takes 544, five waves; it
    # ran in 77.9 us against 82.3 for the best config on C. Where C^T takes as many tiles
    # as C, the swap changes nothing but the operands' layouts, so it is kept only where it takes fewer. The tile
    # rules must hold for the problem the kernel computes, C^T. A bias on C's rows would fall on C^T's columns,
    # which the kernel does not add; clusters (a column-major A, measured wrong) and mixed or 8-bit inputs were not
    # measured with it.
    if not config.SWAP_AB:
        return True
    computed = replace(config, SWAP_AB=0)
    transposed = problem.transposed()
    return (bool(config.PERSISTENT_TMA) and not problem.bias and config.num_ctas == 1
            and problem.dtype_a == problem.dtype_b and problem.dtype_a.bytes == 2
            and output_tiles(problem, config) < output_tiles(problem, computed)
            and all(rule.keep(transposed, computed, device) for rule in tile_rules))


def _align_rows(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Rows that start 16-byte aligned but off a 128-byte line the copy engine reads as they are, each row of a tile
    # straddling two lines. Measured on the H100 (Triton 3.6, fp16): copying them into
    # rows of whole lines took 8192x2056x4096 (B's rows 4112 bytes) from 304.5 to 241.3 us, and 4096x4096x4104 (A's
    # rows 8208 bytes) from 190.7 to 211.3 us, so the tuner measures both. Elsewhere the knob copies nothing.
    if not config.ALIGN_ROWS:
        return True
    return bool(config.PERSISTENT_TMA) and any(row % TMA_ALIGNMENT_BYTES == 0 and row % PADDED_ROW_BYTES
                                               for row in operand_row_bytes(problem))


COMPOUND_TILE_COST = 1.10  # a compound tile's time per output element against a power-of-two tile's
# The same for the warp-group kernel's tiles wider than WIDEST_PART, whose 256-column part is the widest matrix
# instruction: at 4096x3072x4096 128x384 took 136.6-136.9 us in two waves (256 tiles), 128x256 139.8-140.1 in three
# (384 tiles), the same output elements per SM (H100, Triton 3.6, fp16)
WIDE_TILE_COST = 0.98
COMPOUND_LEAST_PART = 64  # the smallest part of a compound side: a warpgroup's rows, as tma_tile asks of whole tiles


def wave_cost(problem: GemmProblem, block_m: int, block_n: int, swap_ab: int, device: DeviceProfile) -> int:
    """Output elements an SM computes over a persistent launch's waves of one block_m x block_n tile per SM (of C^T
    with swap_ab), the last wave counted whole: what a launch's time goes with where the tiles are alike."""
    rows, cols = (problem.N, problem.M) if swap_ab else (problem.M, problem.N)
    return cdiv(tile_count(rows, cols, block_m, block_n), device.sm_count) * block_m * block_n


def _compound_tile(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # A side that is not a power of two (192 = 128 + 64) exists only in the TMA family, whose kernel computes the parts
    # as up to four products per K step (tune_gemm.kernels.tma_family.compound_tile), whole tiles only: no split K,
    # stream-K, split tail or edge tiles, not in clusters (not measured with them). Each part is at least a warpgroup's
    # 64 rows, on N too: parts of 32 columns lost wherever measured (256x160 tiles at 3000x5000x4096,
    # 2.9 waves, 223.9 us against 194.0 for 256x128 in 3.6 waves; 192x96 at 1536x1536x4096, the tile cuBLAS runs there,
    # 39.7 us against 38.0 for 128x192). Not with warp specialization: the compound tile's loops are not flattened, and
    # with them apart Triton 3.6 compiles WARP_SPECIALIZE to the same PTX as without, a duplicate to time. The
    # warp-group kernel (rule warp_groups) multiplies parts of 32 columns at full width: its 192x96 tiles took 35.4 us
    # at 1536x1536x4096 against 38.4 for the TMA family's 128x192. Such a tile pays
    # only by filling the SMs' waves better: measured on the H100 (Triton 3.6, fp16),
    # 192x192 tiles took 1.10 times as long per output element as 128x256 at 4096^3 (233.3-241.5 us for 484 tiles,
    # 189.5-193.9 for 512, four waves each), but 60.8-60.9 us at 3072x1536x4096 (128 tiles, one wave) against 90.9-92.5
    # (144 tiles, two). So it is kept only where its waves, at COMPOUND_TILE_COST (WIDE_TILE_COST for the warp-group
    # kernel's tiles wider than WIDEST_PART), cost less than those of every power-of-two tile around it (each compound
    # side rounded down and up).
    if not is_compound(config.BLOCK_SIZE_M, config.BLOCK_SIZE_N):
        return True
    least_part = WARP_GROUP_LEAST_EXTRA if config.WARP_GROUPS else COMPOUND_LEAST_PART
    parts = block_parts(config.BLOCK_SIZE_M) + block_parts(config.BLOCK_SIZE_N)
    if not (config.PERSISTENT_TMA and config.SPLIT_K == 1 and not config.STREAM_K and not config.NARROW_EDGE
            and not config.WARP_SPECIALIZE and config.num_ctas == 1
            and all(part >= least_part for part in parts if part)):
        return False
    per_element = WIDE_TILE_COST if config.BLOCK_SIZE_N > WIDEST_PART else COMPOUND_TILE_COST
    cost = per_element * wave_cost(problem, config.BLOCK_SIZE_M, config.BLOCK_SIZE_N, config.SWAP_AB, device)
    return all(cost < wave_cost(problem, m, n, config.SWAP_AB, device)
               for m in _powers_of_two_around(config.BLOCK_SIZE_M) for n in _powers_of_two_around(config.BLOCK_SIZE_N))


def _powers_of_two_around(side: int) -> tuple[int, ...]:
    main, extra = block_parts(side)
    return (main, 2 * main) if extra else (side,)


TMA_HARDWARE_RULE = Rule("tma_hardware", "the persistent TMA family only where the GPU has TMA (Hopper+)",
                         _tma_hardware, ("PERSISTENT_TMA",))
COMPOUND_TILE_RULE = Rule(
    "compound_tile", "a tile side that is two powers of two (192 = 128 + 64) only in the TMA family, parts >= "
    f"{COMPOUND_LEAST_PART} ({WARP_GROUP_LEAST_EXTRA} with WARP_GROUPS), whole tiles (no SPLIT_K, STREAM_K, "
    f"NARROW_EDGE), no clusters or WARP_SPECIALIZE, where its waves at {COMPOUND_TILE_COST}x ({WIDE_TILE_COST}x "
    f"wider than {WIDEST_PART}) cost less than those of the power-of-two tiles around it",
    _compound_tile, (*TILE, "PERSISTENT_TMA", "SPLIT_K", "STREAM_K", "NARROW_EDGE", "WARP_SPECIALIZE", "num_ctas",
                     "WARP_GROUPS", "SWAP_AB"))
TMA_TILE_RULE = Rule(
    "tma_tile", "TMA family: SPLIT_K=1 or FUSED_REDUCE, BLOCK_M,N >= 64, "
    "BLOCK_K >= 128 bytes, num_warps 4|8, num_stages >= 2", _tma_tile,
    ("PERSISTENT_TMA", "WARP_GROUPS", *TILE, "BLOCK_SIZE_K", "SPLIT_K", "FUSED_REDUCE", "num_warps", "num_stages"))
TMA_SPLIT_K_RULE = Rule(
    "tma_split_k", "TMA family with SPLIT_K > 1: only where half the split would leave an SM idle, no STREAM_K, "
    "NARROW_EDGE, clusters or WARP_SPECIALIZE", _tma_split_k)
EPILOGUE_SUBTILE_RULE = Rule("epilogue_subtile", "EPILOGUE_SUBTILE only with BLOCK_N >= 128", _epilogue_subtile)
TMA_SHARED_MEMORY_RULE = Rule(
    "tma_shared_memory", "TMA family: pipeline stages plus the output tile fit in shared memory", _tma_shared_memory)
WARP_SPECIALIZE_WARPS_RULE = Rule(
    "warp_specialize_warps", "WARP_SPECIALIZE with 4 warps only where C is stored through a descriptor "
    "(its rows 16-byte aligned) and the tile is at most 64x128", _warp_specialize_warps)
CLUSTER_EPILOGUE_SUBTILE_RULE = Rule(
    "cluster_epilogue_subtile", "num_ctas > 1 not with EPILOGUE_SUBTILE (fails to compile)", _cluster_epilogue_subtile)
ALIGN_ROWS_RULE = Rule(
    "align_rows", "ALIGN_ROWS only in the TMA family, where A's or B's rows are 16-byte aligned but not 128",
    _align_rows)
TMA_CLUSTERS_RULE = Rule(
    "tma_clusters", "TMA family with num_ctas > 1: clusters of 2 only, a row-major A, no STREAM_K (else wrong "
    "results or compile failures)", _tma_clusters)


def swap_ab_rule(tile_rules: tuple[Rule, ...]) -> Rule:
    """The swap_ab rule, which asks `tile_rules` (the rules that read no family knob) of the problem C^T."""
    return Rule("swap_ab", "SWAP_AB only in the TMA family, 16-bit inputs alike, no bias, num_ctas 1, where C^T takes "
                "fewer tiles than C and passes the tile rules", partial(_swap_ab, tile_rules=tile_rules))
