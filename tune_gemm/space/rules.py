"""Pruning rules: which configs of the range space are worth compiling for one size on one GPU.

Each rule is a predicate on (problem, config, device) that says whether a config is kept. The seed's
rules are here, written against the GPU's own facts (`DeviceProfile`) instead of numbers for one card.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from tune_gemm.core.config import (
    FUSED_EDGE,
    SPLIT_EDGE,
    SPLIT_TAIL,
    Config,
    block_parts,
    is_compound,
)
from tune_gemm.core.device import DeviceProfile
from tune_gemm.core.problem import GemmProblem

# Triton's smallest dot operand along K is 16 elements, 32 bytes for 1-byte types (fp8, int8: 32 elements);
# K not a multiple of it cannot be split evenly.
_MIN_BLOCK_K = 16
_MIN_BLOCK_K_BYTES = 32


def least_block_k(element_bytes: int) -> int:
    """The smallest BLOCK_K a tl.dot of inputs this wide takes."""
    return max(_MIN_BLOCK_K, _MIN_BLOCK_K_BYTES // element_bytes)


def min_block_k(problem: GemmProblem) -> int:
    return least_block_k(problem.dtype_a.bytes)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def tile_rows(problem: GemmProblem, config: Config) -> int:
    """Rows of tiles of the output the kernel computes (C, or C^T with SWAP_AB): what GROUP_SIZE_M groups."""
    return cdiv(problem.N if config.SWAP_AB else problem.M, config.BLOCK_SIZE_M)


def tile_columns(problem: GemmProblem, config: Config) -> int:
    """Columns of tiles of the output the kernel computes (C, or C^T with SWAP_AB)."""
    return cdiv(problem.M if config.SWAP_AB else problem.N, config.BLOCK_SIZE_N)


def output_tiles(problem: GemmProblem, config: Config) -> int:
    """Tiles of the output the kernel computes: C, or C^T with SWAP_AB (BLOCK_SIZE_M along N)."""
    return tile_rows(problem, config) * tile_columns(problem, config)


def k_iterations(problem: GemmProblem, config: Config) -> int:
    return cdiv(problem.K, config.BLOCK_SIZE_K * config.SPLIT_K)


def even_k(problem: GemmProblem, config: Config) -> bool:
    """True when the K loop needs no mask: SPLIT_K·BLOCK_K divides K."""
    return problem.K % (config.BLOCK_SIZE_K * config.SPLIT_K) == 0


def shared_memory_bytes(problem: GemmProblem, config: Config) -> int:
    """Shared memory the software pipeline holds: one A and one B tile per stage."""
    tile_a = config.BLOCK_SIZE_M * config.BLOCK_SIZE_K * problem.dtype_a.bytes
    tile_b = config.BLOCK_SIZE_K * config.BLOCK_SIZE_N * problem.dtype_b.bytes
    return config.num_stages * (tile_a + tile_b)


def epilogue_shared_bytes(problem: GemmProblem, config: Config) -> int:
    """Shared memory the TMA family stages its output tile in before the store (half with EPILOGUE_SUBTILE): the
    copy engine's source buffer, or, for a C it cannot address, the layout conversion before the pointer store."""
    if not config.PERSISTENT_TMA:
        return 0
    tile_c = config.BLOCK_SIZE_M * config.BLOCK_SIZE_N * problem.dtype_c.bytes
    return tile_c // 2 if config.EPILOGUE_SUBTILE else tile_c


# Tiles of fewer rows than this multiply without a matrix instruction (tune_gemm.kernels.matmul_family.DOT_MIN_ROWS, row_products):
# mma's and mfma's least M.
DOT_MIN_ROWS = 16
# The bytes of one vector load: a tile without a matrix instruction gives each thread at least one of its elements.
# Eight, not sixteen: 1024 threads of 4 fp16 each read a row of 4096, as max-autotune's reduction kernel does, and
# tiles so were among the fastest at 1x4096x14336 on the H100 (BENCHMARKS.md, thirty-third run).
VECTOR_BYTES = 8


NARROWEST_DOT = 16  # the narrowest block Triton's dot takes


def next_power_of_two(value: int) -> int:
    return 1 << (value - 1).bit_length()


def without_instruction(config: Config) -> bool:
    """Whether the plain family multiplies the tile without a matrix instruction (tune_gemm.kernels.matmul_family.row_products)."""
    return config.BLOCK_SIZE_M < DOT_MIN_ROWS


def _matrix_instruction(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Every warp must own at least one instruction tile, else warps duplicate work. On AMD the config
    # picks the MFMA size (matrix_instr_nonkdim) and packs kpack operands along K.
    if without_instruction(config):
        # Only where M itself is shorter than an instruction, as in decoding: such a GEMM streams B, which a tl.dot
        # stages through shared memory for an instruction that is mostly padding. No taller than M needs, and every
        # thread loads a vector of B at least.
        threads = config.num_warps * device.warp_size
        return (problem.M < DOT_MIN_ROWS and config.BLOCK_SIZE_M <= next_power_of_two(problem.M)
                and config.BLOCK_SIZE_K * config.BLOCK_SIZE_N >= threads * VECTOR_BYTES // problem.dtype_b.bytes)
    instr_m = config.matrix_instr_nonkdim or device.instr_m
    instr_n = config.matrix_instr_nonkdim or device.instr_n
    instr_k = device.instr_k(problem.dtype_a.bytes) * (config.kpack or 1)
    return (
        config.BLOCK_SIZE_M >= instr_m
        and config.BLOCK_SIZE_N >= instr_n
        and config.BLOCK_SIZE_K >= instr_k
        and config.BLOCK_SIZE_M * config.BLOCK_SIZE_N >= config.num_warps * instr_m * instr_n
    )


WARP_GROUP_ROWS = 64  # rows of C one consumer warp group of the warp-group kernel computes: wgmma's M
WARP_GROUP_LEAST_EXTRA = 32  # the narrowest column part the warp-group kernel multiplies (wgmma n32)
WARP_GROUP_ONLY_WARPS = (12, 16)  # the warp-group kernel's three and four consumer warp groups: no other kernel's


def warp_group_warps(config: Config) -> int:
    """The consumer warps of the warp-group kernel (WARP_GROUPS) for a tile of BLOCK_SIZE_M rows: a warp group of 4
    per WARP_GROUP_ROWS rows."""
    return 4 * config.BLOCK_SIZE_M // WARP_GROUP_ROWS


# The widest tile four consumer warp groups (256 rows, 16 warps) multiply: what their accumulators (64 x 160 fp32, 80
# registers a thread) leave room for within the 112 registers a thread each gets (tune_gemm.kernels.warp_group_family).
WIDEST_OF_FOUR_WARP_GROUPS = 160
# The widest tile a Triton dot or a copy-engine block takes (wgmma's n); wider ones are the warp-group kernel's two
# consumer warp groups' (128 rows, 8 warps), a 256-column part beside one of 64 or 128, as wide as their accumulators
# (64 x 384 fp32, 192 registers a thread) fit in the 232 registers a thread each gets (tune_gemm.kernels.warp_group_family).
WIDEST_PART = 256
WIDEST_OF_TWO_WARP_GROUPS = 384


def _warp_group_tiles(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Triton launches a power of two warps; 12 counts the three consumer warp groups of the warp-group kernel's
    # 192-row tiles (rule warp_groups), their only use, and 16 the four of its 256-row tiles. Compiled for sm_90a
    # (Triton 3.6, fp16), 256x160 took no stack, 256x192 spilled 1696 bytes. Tiles 96 wide (64 + 32) are that
    # kernel's with 192 rows only: Triton's compound tiles of 32-column parts lost wherever measured (rule
    # compound_tile), the kernel's own 128x96 and 256x96 too (48.6 and 42.7 us at 1536x1536x4096 against 35.4 and
    # 35.0 for 192x96: BENCHMARKS.md, twenty-sixth and twenty-seventh runs).
    compound_width = block_parts(config.BLOCK_SIZE_N)[1] > 0
    if config.BLOCK_SIZE_N > WIDEST_PART:
        # 128x320 took 61.5 us at 2048x2560x4096 (one wave of 128 tiles, as cuBLAS's 320x128 runs C^T) against 66.3 for
        # 256x160 and 61.7 for cuBLAS (H100, Triton 3.6, fp16, BENCHMARKS.md, twenty-ninth run)
        return (config.BLOCK_SIZE_M == 2 * WARP_GROUP_ROWS and config.num_warps == warp_group_warps(config)
                and config.BLOCK_SIZE_N <= WIDEST_OF_TWO_WARP_GROUPS)
    if config.num_warps == 12:
        return config.BLOCK_SIZE_M == 192 and compound_width
    if config.num_warps == 16:
        return (config.BLOCK_SIZE_M == 256 and compound_width and config.BLOCK_SIZE_N != 96
                and config.BLOCK_SIZE_N <= WIDEST_OF_FOUR_WARP_GROUPS)
    return config.BLOCK_SIZE_N != 96


# A K loop whose last step is masked costs at most this share of K in padding to be kept beside the unmasked ones.
# K = 2000 (16 x 125) had only BLOCK_K 16 dividing it, which rule large_gemm removed where M and N are large: no config
# at all survived at 1000x3000x2000 on the H100. The TMA family's loads zero-fill the padding; the plain family masks
# its loads.
MASKED_K_MAX_PADDING = 1 / 16


def pads_k_little(problem: GemmProblem, config: Config) -> bool:
    """Whether BLOCK_K tiles cover K with padding of at most MASKED_K_MAX_PADDING of K."""
    padding = cdiv(problem.K, config.BLOCK_SIZE_K) * config.BLOCK_SIZE_K - problem.K
    return padding <= problem.K * MASKED_K_MAX_PADDING


def _k_tiling(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Seed rule: SPLIT_K·BLOCK_K divides K, so the K loop needs no mask. A K that is not a multiple
    # of the smallest BLOCK_K (min_block_k) has no such config; there the masked K loop is used instead,
    # with no split and no more than one block of padding. Where few K tiles divide K (K = 2000: only 16), the
    # masked loop without a split is kept too for the K tiles that pad K little (pads_k_little). A tile without a
    # matrix instruction may take the masked loop at any K: it streams B, whose padding it never loads, and more of it
    # in flight per step pays (at 1x4096x14336, BLOCK_K 4096 with 32 warps; rule static_shape's numbers).
    smallest = min_block_k(problem)
    if problem.K % smallest == 0 and not (without_instruction(config) and config.SPLIT_K == 1):
        return even_k(problem, config) or (config.SPLIT_K == 1 and pads_k_little(problem, config))
    return config.SPLIT_K == 1 and config.BLOCK_SIZE_K < problem.K + smallest


def _split_k_only_for_small_grids(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Splitting K pays only when the output tiles alone cannot fill the GPU (M and N small).
    if config.SPLIT_K == 1:
        return True
    return output_tiles(problem, config) < device.sm_count


def _group_m(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Grouping needs two rows of tiles or more. The seed also dropped every GROUP_M that groups all the rows
    # (GROUP_M*BLOCK_M >= M), which walks the tiles column by column, each column of B read by all its rows of
    # tiles in turn. Measured on the H100 (Triton 3.6, fp16, BENCHMARKS.md eighteenth run), that order is what a
    # few rows of tiles need: 64x128 tiles at 256x4096x14336 took 65.6 us with GROUP_M 4, 86.3 with 1; at
    # 256x14336x4096 81 against 164. Of the GROUP_M values that group all the rows, which all walk the tiles
    # alike, pruning keeps the smallest (repeats_group_order).
    return config.GROUP_SIZE_M == 1 or tile_rows(problem, config) > 1


def repeats_group_order(problem: GemmProblem, config: Config, group_values: tuple[int, ...]) -> bool:
    """Whether `config` walks its tiles as a config with a smaller GROUP_SIZE_M of `group_values` does: every value
    of at least the rows of tiles (tile_rows) puts them all in one group, column by column, so only the smallest of
    those is worth compiling; and where there is one column of tiles (tile_columns), column by column is row by row,
    whatever the group (32768x32x4096 on the H100: 4200 configs kept, 13140 before)."""
    if tile_columns(problem, config) == 1:
        return config.GROUP_SIZE_M > min(group_values)
    rows = tile_rows(problem, config)
    return config.GROUP_SIZE_M > min((value for value in group_values if value >= rows), default=config.GROUP_SIZE_M)


def _shared_memory(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    return shared_memory_bytes(problem, config) <= device.max_shared_bytes


def accumulator_registers(config: Config, device: DeviceProfile) -> float:
    """Registers a thread holds of the BLOCK_M x BLOCK_N fp32 (or int32) accumulator; BLOCK_K times as many for a tile
    multiplied without a matrix instruction, whose products are summed over K after the loop."""
    elements = config.BLOCK_SIZE_M * config.BLOCK_SIZE_N
    if without_instruction(config):
        elements *= config.BLOCK_SIZE_K
    return elements / (config.num_warps * device.warp_size)


def _accumulator_registers(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # The fp32 accumulator lives in registers; past half the per-thread budget the rest of the
    # kernel (addresses, operands) spills to local memory. A compound tile (compound_tile rule) may take 9/16: its
    # operands stay in shared memory. Compiled for sm_90a (Triton 3.6, fp16), a 192x192 tile with 8 warps (144
    # accumulator registers a thread) took 174 registers and no stack.
    # Tiles wider than WIDEST_PART are the warp-group kernel's alone, whose consumers get registers of their own
    # (rule warp_group_tiles).
    # A tile without a matrix instruction holds its loaded B tile in registers too, and streams B at a rate set by the
    # loads in flight, more of them with more programs per SM: a quarter.
    budget = device.max_registers_per_thread + 1
    if without_instruction(config):
        return accumulator_registers(config, device) <= budget // 4
    return (config.BLOCK_SIZE_N > WIDEST_PART
            or accumulator_registers(config, device) <= (budget * 9 // 16 if is_compound(config) else budget // 2))


def _block_not_oversized(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # ROCm script rule: a block over twice the matrix dimension computes mostly padding. Triton's dot takes no block
    # narrower than NARROWEST_DOT, so that one stays for a side of fewer than 8 (M = 12096, N = 7 kept no config).
    return config.BLOCK_SIZE_M <= max(device.instr_m, NARROWEST_DOT, 2 * problem.M) and config.BLOCK_SIZE_N <= max(
        device.instr_n, NARROWEST_DOT, 2 * problem.N
    )


LARGE_GEMM_LEAST_BLOCK_K = 32


def _large_gemm(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # When M and N are both large and 128x128 tiles already give every SM work, thin tiles or few
    # warps cannot feed the matrix units: their operand loads per multiply-add are too many (ROCm
    # script's large-GEMM rule). A skinny M or N keeps its thin tiles.
    # Where the deepest power of two dividing K is shallower (K = 48: 16; K = 7: 1), K tiles of that depth stay: rule
    # k_tiling keeps few others there (8928x19529x7 and 2048x2048x48 kept no config).
    if min(problem.M, problem.N) < 128 or output_tiles(problem, Config(128, 128, 16)) < device.sm_count:
        return True
    return (min(config.BLOCK_SIZE_M, config.BLOCK_SIZE_N) >= 64 and config.num_warps >= 4
            and config.BLOCK_SIZE_K >= min(LARGE_GEMM_LEAST_BLOCK_K, problem.K & -problem.K))


def _stages_within_k_loop(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # A pipeline deeper than the K loop has nothing to prefetch; such configs repeat shallower ones.
    return config.num_stages <= k_iterations(problem, config) + 1


def _clusters(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # num_ctas > 1 launches each program as a thread-block cluster, which only NVIDIA compute capability 9+ has.
    return config.num_ctas == 1 or device.clusters


STATIC_SHAPE_MAX_K_ITERATIONS = 8  # K-loop iterations per program up to which a kernel counts as launch-bound


def _static_shape_where_it_pays(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Constant sizes and strides save a launch-bound kernel its index arithmetic: on the H100 (Triton 3.6), 4.48
    # instead of 4.80 us at 16^3, 4.77 instead of 5.23 at 32x32x64, 6.27 instead of 6.66 at 64x128x256, in
    # bench_gemm's windows. Past one wave of short programs that share of the time vanishes, while the knob costs
    # a compile per shape at run time; there it is not tried. A tile without a matrix instruction is the exception:
    # its program is a loop of loads, whose address and mask arithmetic the constants fold away. On the H100 (fp16,
    # B column-major, L2 flushed, interleaved; BENCHMARKS.md, thirty-third run), at 1x4096x14336 BM1_BN1_BK4096 with
    # 32 warps took 44.6 us with STATIC_SHAPE and 59.3 without (max-autotune's reduction kernel, whose sizes are
    # constants, 45.2), BK2048 with 8 warps 46.3 and 48.0.
    if not config.STATIC_SHAPE or without_instruction(config):
        return True
    return (output_tiles(problem, config) * config.SPLIT_K <= device.sm_count
            and k_iterations(problem, config) <= STATIC_SHAPE_MAX_K_ITERATIONS)


def _fused_reduce_with_split_k(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Without a split there are no partial products to sum.
    return not config.FUSED_REDUCE or config.SPLIT_K > 1


def _static_shape_plain(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # The TMA family's sizes live in its descriptors and persistent loop; the knob is the plain family's.
    return not (config.STATIC_SHAPE and config.PERSISTENT_TMA)


def _tma_hardware(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    return not config.PERSISTENT_TMA or device.tma


def _warp_groups(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # The warp-group kernel (tune_gemm.kernels.warp_group_family) runs on Hopper (compute capability 9.0) with Gluon, not under the
    # interpreter. Its consumer warp groups own 64 rows each (BLOCK_SIZE_M 128, 192 or 256: two to four, num_warps 8,
    # 12 or 16) and multiply them by the two column parts of a compound BLOCK_SIZE_N (192 = 128 + 64, 160 = 128 + 32,
    # 96 = 64 + 32; 320 = 256 + 64 and 384 = 256 + 128, wider than any other kernel's tile, with two warp groups), so
    # that every product is a full-width matrix instruction; power-of-two widths are the TMA family's. 16-bit inputs
    # of one dtype, A row-major, B either way; K tiles of 64 or 128 bytes (the widest the copy engine's 128-byte
    # swizzle takes); whole tiles only, no clusters; every operand's rows and C's 16-byte aligned (it reads and stores
    # them through descriptors as they are, with no padded copies). Measured on the H100 (Triton 3.6, fp16,
    # BENCHMARKS.md, twenty-sixth run): at 3072x1536x4096 its 192x192 tiles with 32-element K tiles and six stages
    # took 56.0 us, the TMA family's 61.4, cuBLAS 55.0; with 64-element K tiles and three stages 59.2.
    if not config.WARP_GROUPS:
        return config.num_warps not in WARP_GROUP_ONLY_WARPS and config.BLOCK_SIZE_N <= WIDEST_PART
    return (device.warp_groups and problem.dtype_a == problem.dtype_b and problem.dtype_a.bytes == 2
            and not problem.col_a and config.BLOCK_SIZE_M in (128, 192, 256)
            and config.num_warps == warp_group_warps(config)
            and block_parts(config.BLOCK_SIZE_N)[1] >= WARP_GROUP_LEAST_EXTRA
            and config.BLOCK_SIZE_K * problem.dtype_a.bytes in (64, 128) and config.SPLIT_K == 1
            and config.num_ctas == 1 and config.num_stages >= 2
            and all(row_bytes % 16 == 0 for row_bytes in operand_row_bytes(problem))
            and problem.N * problem.dtype_c.bytes % 16 == 0)


def _tma_tile(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # The TMA family exists for Hopper's warpgroup MMA on large tiles: 64-row warpgroup tiles at least
    # 64 wide, whole warpgroups of 4 warps, K tiles of at least 128 bytes (the copy engine's widest
    # swizzle, which keeps the matrix units' shared-memory reads free of bank conflicts; BLOCK_K >= 128
    # for 1-byte inputs. On the H100, fp16, 64-byte K tiles with deeper pipelines took 1.08-1.37x as long as
    # 128-byte ones: BENCHMARKS.md, twenty-fourth run), at least double buffering (a single stage leaves the copy
    # engine nothing to overlap), and a K split only with its partials summed inside the kernel (FUSED_REDUCE: the
    # family has no reduction kernel; rule tma_split_k). Any input type: 16-bit, 8-bit (fp8/bf8 with their scales,
    # int8 into int32) and fp32 as tf32 (BLOCK_K >= 32). wgmma reads 8-bit and tf32 operands only K-major: the launch
    # copies a row-major B of those types into K-major order first (tune_gemm.kernels.tma_family.k_major_copy). The warp-group
    # kernel has rules of its own (warp_groups).
    if not config.PERSISTENT_TMA or config.WARP_GROUPS:
        return True
    return ((config.SPLIT_K == 1 or bool(config.FUSED_REDUCE))
            and config.BLOCK_SIZE_M >= 64 and config.BLOCK_SIZE_N >= 64 and config.num_warps in (4, 8)
            and config.BLOCK_SIZE_K * problem.dtype_a.bytes >= 128 and config.num_stages >= 2)


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
    return not config.SWAP_AB and problem.N * problem.dtype_c.bytes % 16 == 0


WARP_SPECIALIZED_TILE_4_WARPS = (64, 128)  # the largest BLOCK_M, BLOCK_N a 4-warp warp-specialized config compiles


def _warp_specialize_warps(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Measured on the H100 (Triton 3.6, 4095x4097x1023, BENCHMARKS.md): warp specialization with 4 warps and C
    # stored through pointers deadlocks the GPU (100% busy at idle power until killed), or fails to compile with
    # EPILOGUE_SUBTILE; the same configs with 8 warps run. Each such config cost a config timeout and a new child.
    # With C stored through its descriptor, tiles past 64x128 fail in Triton's warp-specialization pass: 330 of 590
    # distinct 4-warp configs of six shapes, every one with BLOCK_M > 64 or BLOCK_N > 128, on Triton 3.6, 3.7, 3.8
    # and 3.9 alike (compiled for sm_90a; BENCHMARKS.md, twentieth run). Each cost a compile slot per shape.
    if not (config.WARP_SPECIALIZE and config.num_warps == 4):
        return True
    max_m, max_n = WARP_SPECIALIZED_TILE_4_WARPS
    return (c_stored_by_descriptor(problem, config) and config.BLOCK_SIZE_M <= max_m
            and config.BLOCK_SIZE_N <= max_n)


def persistent_programs(config: Config, tiles: int, device: DeviceProfile) -> int:
    """Programs of a persistent launch with `tiles` output tiles (tune_gemm.kernels.tma_family.persistent_programs): one per SM, or
    per cluster of num_ctas SMs, never more than the tiles."""
    return min(device.sm_count // config.num_ctas, tiles)


def k_slices(programs: int, tiles: int, k_tiles: int, least_k_tiles: int) -> int:
    """K slices per tile where `tiles` tiles are cut so that every program takes one unit, each of at least
    least_k_tiles K tiles; 1 where that leaves fewer than two, or where there are no tiles to cut
    (tune_gemm.kernels.tma_family.k_slices)."""
    if not tiles:
        return 1
    slices = min(programs // tiles, k_tiles // least_k_tiles)
    return slices if slices >= 2 else 1


STREAM_K_LEAST_IDLE = 0.01  # share of the last wave's SM time left idle below which stream-K is not tried
TAIL_SLICE_K_TILES = 8  # the fewest K tiles in a slice of a split tail tile (tune_gemm.kernels.tma_family.TAIL_SLICE_K_TILES)
TAIL_LEAST_SLICES = 4  # the fewest K slices per tail tile for which a split tail is tried


def tail_slices(problem: GemmProblem, config: Config, device: DeviceProfile) -> int:
    """K slices per tile past the last whole wave of a SPLIT_TAIL config, as the launch sets them
    (tune_gemm.kernels.tma_family.tail_slices): as many as give each persistent program one, at least TAIL_SLICE_K_TILES K tiles
    each; 1 where that leaves fewer than two, or where the tiles fill whole waves or less than one."""
    tiles = output_tiles(problem, config)
    programs = persistent_programs(config, tiles, device)
    tail = tiles % programs if tiles > programs else 0
    return k_slices(programs, tail, cdiv(problem.K, config.BLOCK_SIZE_K), TAIL_SLICE_K_TILES)


def _stream_k(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Stream-K shares out the tiles of a partly idle last wave (tune_gemm.kernels.tma_family.stream_k_part): it exists only
    # where the tiles overrun a whole number of waves of one program per SM, by enough to matter, and where a
    # tile's K loop has at least two iterations to split.
    if not config.STREAM_K:
        return True
    if config.STREAM_K == SPLIT_TAIL:
        return _split_tail(problem, config, device)
    tiles = output_tiles(problem, config)
    waves = cdiv(tiles, device.sm_count)
    idle = (waves * device.sm_count - tiles) / (waves * device.sm_count)
    return tiles > device.sm_count and idle >= STREAM_K_LEAST_IDLE and k_iterations(problem, config) >= 2


def _split_tail(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # The tiles past the last whole wave in K slices (tune_gemm.kernels.tma_family.tail_slices) pay only where those tiles are few
    # enough that each is cut into at least TAIL_LEAST_SLICES: measured on the H100 (Triton 3.6, fp16, BENCHMARKS.md,
    # twenty-second run), 128x256 tiles at 5120x5120x4096 (8 tiles past six waves, 8 slices each) took 330.8-335.0 us
    # against 357.4-362.7 whole, but at 4096x5120x4096 (112 tiles past four waves, 2 slices each) 264.4-290.6 against
    # 235.1-256.9.
    # Not with warp specialization, whose loop the tail's would follow unmeasured.
    return not config.WARP_SPECIALIZE and tail_slices(problem, config, device) >= TAIL_LEAST_SLICES


def _swap_ab(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # C^T = B^T A^T runs a tile's long side along the other dimension. Measured on the H100 (Triton 3.6, fp16): at
    # 4095x4097x1023 a 128x256 tile covers C^T with 528 tiles, four waves of 132, where C takes 544, five waves; it
    # ran in 77.9 us against 82.3 for the best config on C (BENCHMARKS.md, tenth run). Where C^T takes as many tiles
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
            and all(rule.keep(transposed, computed, device) for rule in RULES))


PADDED_ROW_BYTES = 128  # rows of the TMA family's copies: whole 128-byte lines (tune_gemm.kernels.tma_family)


def operand_row_bytes(problem: GemmProblem) -> tuple[int, int]:
    """Bytes per row of the matrices the copy engine reads for A and B, contiguous as the tuner allocates them: A
    (M x K) or a column-major A's transpose, B (K x N) or a column-major B's transpose. An 8-bit or 32-bit row-major B
    is read from its K-major copy (tune_gemm.kernels.tma_family.k_major_copy), whose rows are whole lines."""
    copied = problem.dtype_b.bytes != 2 and not problem.col_b
    b_row = PADDED_ROW_BYTES if copied else problem.N * problem.dtype_b.bytes
    return ((problem.M if problem.col_a else problem.K) * problem.dtype_a.bytes,
            problem.K * problem.dtype_b.bytes if problem.col_b else b_row)


def _align_rows(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Rows that start 16-byte aligned but off a 128-byte line the copy engine reads as they are, each row of a tile
    # straddling two lines. Measured on the H100 (Triton 3.6, fp16, BENCHMARKS.md, eleventh run): copying them into
    # rows of whole lines took 8192x2056x4096 (B's rows 4112 bytes) from 304.5 to 241.3 us, and 4096x4096x4104 (A's
    # rows 8208 bytes) from 190.7 to 211.3 us, so the tuner measures both. Elsewhere the knob copies nothing.
    if not config.ALIGN_ROWS:
        return True
    return bool(config.PERSISTENT_TMA) and any(row % 16 == 0 and row % 128 for row in operand_row_bytes(problem))


def edge_columns(problem: GemmProblem, config: Config) -> tuple[int, ...]:
    """Widths of a NARROW_EDGE config's edge tiles on the problem its kernel computes (C^T with SWAP_AB), as the launch
    sets them (tune_gemm.kernels.tma_family.edge_columns): the columns past the last whole tile rounded up to a power of two, at
    least NARROWEST_DOT; where that is a whole tile, half a tile and the rest so rounded, if narrower than the half;
    () where whole tiles cover N or the edge tiles would be as wide as a whole one."""
    n = problem.M if config.SWAP_AB else problem.N
    rest = n % config.BLOCK_SIZE_N
    if not rest:
        return ()
    width = _edge_width(rest)
    if width < config.BLOCK_SIZE_N:
        return (width,)
    half = config.BLOCK_SIZE_N // 2
    second = _edge_width(rest - half)
    return (half, second) if second < half else ()


def _edge_width(columns: int) -> int:
    return max(NARROWEST_DOT, next_power_of_two(columns))


EDGE_SLICE_K_TILES = 4  # the fewest K tiles in a slice of a split edge tile (tune_gemm.kernels.tma_family.EDGE_SLICE_K_TILES)


def edge_slices(problem: GemmProblem, config: Config, device: DeviceProfile) -> int:
    """K slices per edge tile of a SPLIT_EDGE config, as the launch sets them (tune_gemm.kernels.tma_family.edge_slices): as many as
    give each persistent program one, at least EDGE_SLICE_K_TILES K tiles each; 1 where that leaves fewer than two."""
    rows = problem.N if config.SWAP_AB else problem.M
    edge_tiles = len(edge_columns(problem, config)) * cdiv(rows, config.BLOCK_SIZE_M)
    programs = persistent_programs(config, output_tiles(problem, config), device)
    return k_slices(programs, edge_tiles, cdiv(problem.K, config.BLOCK_SIZE_K), EDGE_SLICE_K_TILES)


def _narrow_edge(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # A last column of tiles that N fills only in part spends its matrix instructions on columns past N; the edge
    # tiles compute it narrower. Kept only where they are narrower than a whole tile, and not with stream-K (which
    # shares out whole tiles) or clusters, neither measured with it. Measured on the H100 (Triton 3.6, fp16,
    # BENCHMARKS.md, twelfth run): with warp specialization and 4 warps every config failed to compile
    # ("PassManager::run failed"), 59 of 59 at 8192x2056x4096 and at 4096x4112x4096, where 26 of their twins without
    # the edge tiles compiled.
    if not config.NARROW_EDGE:
        return True
    widths = edge_columns(problem, config)
    kept = (bool(config.PERSISTENT_TMA) and not config.STREAM_K and config.num_ctas == 1
            and not (config.WARP_SPECIALIZE and config.num_warps == 4) and bool(widths))
    if not kept:
        return False
    if config.NARROW_EDGE == FUSED_EDGE:
        return _fused_edge(problem, config, device, widths)
    # Edge tiles in K slices (SPLIT_EDGE) only where they are split at all: else they are NARROW_EDGE 1's. Measured
    # on the H100 (Triton 3.6, fp16, BENCHMARKS.md, twenty-first run): at 4096x4248x4096, 256x128 tiles in groups of
    # 2-8 rows with 16 edge tiles in 8 slices took 228.1-231.6 us, the same tiles with the edge fused 236.9-240.0.
    return config.NARROW_EDGE != SPLIT_EDGE or edge_slices(problem, config, device) > 1


def _fused_edge(problem: GemmProblem, config: Config, device: DeviceProfile, widths: tuple[int, ...]) -> bool:
    # A fused edge tile needs a whole tile beside it (each of two edge widths its own); its stages hold that tile's
    # B columns and the edge's, and its two accumulators live in registers together; the first edge width is the
    # wider. Up to 3/4 of a thread's registers for them: measured on the H100
    # (Triton 3.6, fp16, BENCHMARKS.md, fourteenth run), a 128x256 tile with 128 edge columns beside it (8 warps,
    # 192 accumulator registers a thread) compiled to 218 registers without spills and was the fastest of its twins at
    # 8192x2144x4096 (223.3 us; edge tiles apart 231.0). Width costs little: 16, 32 and 64 edge columns beside a
    # 128x256 tile took 66.6, 67.7 and 68.5 us at 8192x272x4096. With two widths, 128 + 32 columns past tiles of 256
    # fused took 8192x2200x4096 to 228.4 us, against 244.5 without edge tiles and 245.9 apart (fifteenth run).
    n = problem.M if config.SWAP_AB else problem.N
    wider = replace(config, BLOCK_SIZE_N=config.BLOCK_SIZE_N + widths[0])  # the whole tile and its edge, side by side
    return (n >= len(widths) * config.BLOCK_SIZE_N and shared_memory_bytes(problem, wider) <= device.max_shared_bytes
            and accumulator_registers(wider, device) <= 3 * (device.max_registers_per_thread + 1) // 4)


def _tma_split_k(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # The persistent programs walk a split's K slices as units of work (tune_gemm.kernels.tma_family.split_k_part): a split pays
    # where the tiles alone leave SMs idle, and no more of it than fills them, since every slice past that adds a
    # partial tile to write and sum and the units queue behind the first wave anyway. So SPLIT_K > 1 only where half
    # the split would leave an SM idle: at 1024x1024 in 64 tiles of 128x128 on 132 SMs, 2 and 4. Not with STREAM_K
    # or NARROW_EDGE (other ways of filling the last wave), clusters or warp specialization, none measured with it.
    if not (config.PERSISTENT_TMA and config.SPLIT_K > 1):
        return True
    return (output_tiles(problem, config) * config.SPLIT_K // 2 < device.sm_count and not config.STREAM_K
            and not config.NARROW_EDGE and config.num_ctas == 1 and not config.WARP_SPECIALIZE)


COMPOUND_TILE_COST = 1.10  # a compound tile's time per output element against a power-of-two tile's
# The same for the warp-group kernel's tiles wider than WIDEST_PART, whose 256-column part is the widest matrix
# instruction: at 4096x3072x4096 128x384 took 136.6-136.9 us in two waves (256 tiles), 128x256 139.8-140.1 in three
# (384 tiles), the same output elements per SM (H100, Triton 3.6, fp16, BENCHMARKS.md, twenty-ninth run)
WIDE_TILE_COST = 0.98
COMPOUND_LEAST_PART = 64  # the smallest part of a compound side: a warpgroup's rows, as tma_tile asks of whole tiles


def wave_cost(problem: GemmProblem, block_m: int, block_n: int, swap_ab: int, device: DeviceProfile) -> int:
    """Output elements an SM computes over a persistent launch's waves of one block_m x block_n tile per SM (of C^T
    with swap_ab), the last wave counted whole: what a launch's time goes with where the tiles are alike."""
    rows, cols = (problem.N, problem.M) if swap_ab else (problem.M, problem.N)
    return cdiv(cdiv(rows, block_m) * cdiv(cols, block_n), device.sm_count) * block_m * block_n


def _compound_tile(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # A side that is not a power of two (192 = 128 + 64) exists only in the TMA family, whose kernel computes the
    # parts as up to four products per K step (tune_gemm.kernels.tma_family.compound_tile), whole tiles only: no split K, stream-K,
    # split tail or edge tiles, not in clusters (not measured with them). Each part is at least a warpgroup's 64 rows,
    # on N too: parts of 32 columns lost wherever measured (twenty-fourth run: 256x160 tiles at 3000x5000x4096,
    # 2.9 waves, 223.9 us against 194.0 for 256x128 in 3.6 waves; 192x96 at 1536x1536x4096, the tile cuBLAS runs
    # there, 39.7 us against 38.0 for 128x192). Not with warp specialization: the compound tile's loops are not
    # flattened, and with them apart Triton 3.6 compiles WARP_SPECIALIZE to the same PTX as without, a duplicate to
    # time. The warp-group kernel (rule warp_groups) multiplies parts of 32 columns at full width: its 192x96 tiles took
    # 35.4 us at 1536x1536x4096 against 38.4 for the TMA family's 128x192 (BENCHMARKS.md, twenty-sixth run). Such a
    # tile pays only by filling the SMs' waves better: measured on the H100 (Triton 3.6, fp16, BENCHMARKS.md,
    # twenty-third run), 192x192 tiles took 1.10 times as long per output element as 128x256 at
    # 4096^3 (233.3-241.5 us for 484 tiles, 189.5-193.9 for 512, four waves each), but 60.8-60.9 us at
    # 3072x1536x4096 (128 tiles, one wave) against 90.9-92.5 (144 tiles, two). So it is kept only where its waves, at
    # COMPOUND_TILE_COST (WIDE_TILE_COST for the warp-group kernel's tiles wider than WIDEST_PART), cost less than
    # those of every power-of-two tile around it (each compound side rounded down and up).
    if not is_compound(config):
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


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    keep: Callable[[GemmProblem, Config, DeviceProfile], bool]
    # The config fields `keep` reads, where known: configs that agree on them get the same answer, so the pruner asks
    # once per combination of their values (tests check that no other field changes an answer). Empty: any field.
    reads: tuple[str, ...] = ()


TILE = ("BLOCK_SIZE_M", "BLOCK_SIZE_N")


RULES: tuple[Rule, ...] = (
    # first, at two comparisons for most configs: 12 warps and 96-wide tiles exist for one kernel only
    Rule("warp_group_tiles", "num_warps 12 only for 192-row tiles of compound width, 16 for 256-row ones at most "
         f"{WIDEST_OF_FOUR_WARP_GROUPS} wide (the warp-group kernel's three and four consumer warp groups), BLOCK_N 96 "
         f"only with 12, BLOCK_N over {WIDEST_PART} (at most {WIDEST_OF_TWO_WARP_GROUPS}) only for 128-row tiles "
         "with 8", _warp_group_tiles, (*TILE, "num_warps")),
    # next: it removes half the space (FUSED_REDUCE without a split) at the cost of one comparison each
    Rule("fused_reduce", "FUSED_REDUCE only with SPLIT_K > 1", _fused_reduce_with_split_k,
         ("SPLIT_K", "FUSED_REDUCE")),
    Rule("matrix_instruction", f"block >= matrix-instruction tile, one per warp at least; BLOCK_M < {DOT_MIN_ROWS} (no "
         f"instruction) only for M < {DOT_MIN_ROWS}, no taller than M needs, a vector of B per thread",
         _matrix_instruction,
         (*TILE, "BLOCK_SIZE_K", "num_warps", "matrix_instr_nonkdim", "kpack")),
    Rule("k_tiling", "SPLIT_K*BLOCK_K divides K (masked K loop without a split only for K not a multiple of 16, 32 "
         f"for 1-byte inputs, for BLOCK_K padding K by at most 1/{round(1 / MASKED_K_MAX_PADDING)}, or for BLOCK_M < "
         f"{DOT_MIN_ROWS})", _k_tiling, ("BLOCK_SIZE_M", "BLOCK_SIZE_K", "SPLIT_K")),
    Rule("split_k", "SPLIT_K=1 when the output tiles already fill the GPU", _split_k_only_for_small_grids,
         (*TILE, "SPLIT_K", "SWAP_AB")),
    Rule("group_m", "GROUP_M=1 where one row of tiles; of the GROUP_M values that group every row, the smallest; "
         "the smallest where one column of tiles", _group_m,
         ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "GROUP_SIZE_M", "SWAP_AB")),
    Rule("shared_memory", "num_stages*(BM*BK+BK*BN)*bytes <= the device's shared memory per block", _shared_memory,
         (*TILE, "BLOCK_SIZE_K", "num_stages")),
    Rule("registers", "fp32 accumulator <= half the registers of a thread (a quarter without a matrix instruction)",
         _accumulator_registers, (*TILE, "BLOCK_SIZE_K", "num_warps")),
    Rule("block_size", f"BLOCK_M <= 2*M and BLOCK_N <= 2*N, or {NARROWEST_DOT}", _block_not_oversized, TILE),
    Rule("large_gemm", f"when 128x128 tiles fill the GPU: BLOCK_M,N >= 64, BLOCK_K >= {LARGE_GEMM_LEAST_BLOCK_K} "
         "(or the largest power of two dividing K), num_warps >= 4", _large_gemm,
         (*TILE, "BLOCK_SIZE_K", "num_warps")),
    Rule("num_stages", "num_stages <= K-loop iterations + 1", _stages_within_k_loop,
         ("num_stages", "BLOCK_SIZE_K", "SPLIT_K")),
    Rule("clusters", "num_ctas > 1 only where the GPU launches thread-block clusters (NVIDIA compute capability 9+)",
         _clusters, ("num_ctas",)),
    Rule("static_shape", f"STATIC_SHAPE only where tiles*SPLIT_K <= SMs and K takes <= {STATIC_SHAPE_MAX_K_ITERATIONS} "
         f"iterations (launch-bound), or for BLOCK_M < {DOT_MIN_ROWS}", _static_shape_where_it_pays,
         ("STATIC_SHAPE", *TILE, "SWAP_AB", "SPLIT_K", "BLOCK_SIZE_K")),
)

# Rules about the kernel family knobs (PERSISTENT_TMA, WARP_SPECIALIZE, EPILOGUE_SUBTILE, STREAM_K). They run after
# RULES, which never look at those knobs: pruning checks RULES once per tile config and these once per family.
FAMILY_RULES: tuple[Rule, ...] = (
    Rule("warp_groups", "WARP_GROUPS only on Hopper (compute capability 9.0) with Gluon: 16-bit inputs of one dtype, "
         f"row-major A, BLOCK_M 128|192|256 with {WARP_GROUP_ROWS // 16} warps per {WARP_GROUP_ROWS} rows, BLOCK_N of "
         f"two parts (the narrower >= {WARP_GROUP_LEAST_EXTRA}), BLOCK_K of 64|128 bytes, no SPLIT_K or clusters, "
         f"num_stages >= 2, A's, B's and C's rows 16-byte aligned; num_warps 12 and 16 and BLOCK_N over {WIDEST_PART} "
         "for nothing else", _warp_groups,
         ("WARP_GROUPS", *TILE, "BLOCK_SIZE_K", "SPLIT_K", "num_warps", "num_stages", "num_ctas")),
    # next: most of a compound tile's family variants fail it, at the cost of two comparisons for every other config
    Rule("compound_tile", "a tile side that is two powers of two (192 = 128 + 64) only in the TMA family, parts >= "
         f"{COMPOUND_LEAST_PART} ({WARP_GROUP_LEAST_EXTRA} with WARP_GROUPS), whole tiles (no SPLIT_K, STREAM_K, "
         f"NARROW_EDGE), no clusters or WARP_SPECIALIZE, where its waves at {COMPOUND_TILE_COST}x ({WIDE_TILE_COST}x "
         f"wider than {WIDEST_PART}) cost less than those of the power-of-two tiles around it",
         _compound_tile, (*TILE, "PERSISTENT_TMA", "SPLIT_K", "STREAM_K", "NARROW_EDGE", "WARP_SPECIALIZE", "num_ctas",
                          "WARP_GROUPS", "SWAP_AB")),
    Rule("tma_hardware", "the persistent TMA family only where the GPU has TMA (Hopper+)", _tma_hardware,
         ("PERSISTENT_TMA",)),
    Rule("static_shape_plain", "STATIC_SHAPE only in the plain family (not with PERSISTENT_TMA)", _static_shape_plain,
         ("STATIC_SHAPE", "PERSISTENT_TMA")),
    Rule("tma_tile", "TMA family: SPLIT_K=1 or FUSED_REDUCE, BLOCK_M,N >= 64, "
         "BLOCK_K >= 128 bytes, num_warps 4|8, num_stages >= 2", _tma_tile,
         ("PERSISTENT_TMA", "WARP_GROUPS", *TILE, "BLOCK_SIZE_K", "SPLIT_K", "FUSED_REDUCE", "num_warps",
          "num_stages")),
    Rule("tma_split_k", "TMA family with SPLIT_K > 1: only where half the split would leave an SM idle, no STREAM_K, "
         "NARROW_EDGE, clusters or WARP_SPECIALIZE", _tma_split_k),
    Rule("epilogue_subtile", "EPILOGUE_SUBTILE only with BLOCK_N >= 128", _epilogue_subtile),
    Rule("tma_shared_memory", "TMA family: pipeline stages plus the output tile fit in shared memory",
         _tma_shared_memory),
    Rule("stream_k", "STREAM_K only where the tiles overrun whole waves of one per SM, the last wave >= 1% idle, "
         f"and K takes >= 2 iterations; a split tail ({SPLIT_TAIL}) only without WARP_SPECIALIZE, where the tiles past "
         f"the last whole wave are cut into >= {TAIL_LEAST_SLICES} K slices of >= {TAIL_SLICE_K_TILES} K tiles, one "
         "per program at most", _stream_k),
    Rule("warp_specialize_warps", "WARP_SPECIALIZE with 4 warps only where C is stored through a descriptor "
         "(its rows 16-byte aligned) and the tile is at most 64x128", _warp_specialize_warps),
    Rule("cluster_epilogue_subtile", "num_ctas > 1 not with EPILOGUE_SUBTILE (fails to compile)",
         _cluster_epilogue_subtile),
    Rule("swap_ab", "SWAP_AB only in the TMA family, 16-bit inputs alike, no bias, num_ctas 1, where C^T takes fewer "
         "tiles than C and passes the tile rules", _swap_ab),
    Rule("align_rows", "ALIGN_ROWS only in the TMA family, where A's or B's rows are 16-byte aligned but not 128",
         _align_rows),
    Rule("narrow_edge", "NARROW_EDGE only in the TMA family, no STREAM_K, num_ctas 1, not WARP_SPECIALIZE with 4 "
         "warps (fails to compile), where N's last column of tiles would be at least a quarter empty; fused with the "
         "last whole tile (2) where there is one for each edge width, the stages fit in shared memory and the two "
         "accumulators in 3/4 of a thread's registers; in K slices (3) where each program can take one, of at least "
         f"{EDGE_SLICE_K_TILES} K tiles, and at least two per edge tile", _narrow_edge),
    Rule("tma_clusters", "TMA family with num_ctas > 1: clusters of 2 only, a row-major A, no STREAM_K (else wrong "
         "results or compile failures)", _tma_clusters),
)

RULES_BY_NAME = {rule.name: rule for rule in RULES + FAMILY_RULES}
