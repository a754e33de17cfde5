"""The rules every kernel family shares: the tile against the matrix instruction, K tiling, grouping, shared memory,
registers, block sizes and pipeline depth; the Rule type and the quantities the other rules build on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tune_gemm.core.config import Config
from tune_gemm.core.device import DeviceProfile
from tune_gemm.core.geometry import (
    NARROWEST_DOT,
    PADDED_ROW_BYTES,
    cdiv,
    is_compound,
    next_power_of_two,
    tile_count,
)
from tune_gemm.core.problem import GemmProblem


@dataclass(frozen=True)
class Rule:
    name: str
    description: str
    keep: Callable[[GemmProblem, Config, DeviceProfile], bool]
    # The config fields `keep` reads, where known: configs that agree on them get the same answer, so the pruner asks
    # once per combination of their values (tests check that no other field changes an answer). Empty: any field.
    reads: tuple[str, ...] = ()


TILE = ("BLOCK_SIZE_M", "BLOCK_SIZE_N")

# Triton's smallest dot operand along K is 16 elements, 32 bytes for 1-byte types (fp8, int8: 32 elements);
# K not a multiple of it cannot be split evenly.
_MIN_BLOCK_K = 16
_MIN_BLOCK_K_BYTES = 32


def least_block_k(element_bytes: int) -> int:
    """The smallest BLOCK_K a tl.dot of inputs this wide takes."""
    return max(_MIN_BLOCK_K, _MIN_BLOCK_K_BYTES // element_bytes)


def min_block_k(problem: GemmProblem) -> int:
    return least_block_k(problem.dtype_a.bytes)


def tile_rows(problem: GemmProblem, config: Config) -> int:
    """Rows of tiles of the output the kernel computes (C, or C^T with SWAP_AB): what GROUP_SIZE_M groups."""
    return cdiv(problem.N if config.SWAP_AB else problem.M, config.BLOCK_SIZE_M)


def tile_columns(problem: GemmProblem, config: Config) -> int:
    """Columns of tiles of the output the kernel computes (C, or C^T with SWAP_AB)."""
    return cdiv(problem.M if config.SWAP_AB else problem.N, config.BLOCK_SIZE_N)


def output_tiles(problem: GemmProblem, config: Config) -> int:
    """Tiles of the output the kernel computes: C, or C^T with SWAP_AB (BLOCK_SIZE_M along N)."""
    rows, cols = (problem.N, problem.M) if config.SWAP_AB else (problem.M, problem.N)
    return tile_count(rows, cols, config.BLOCK_SIZE_M, config.BLOCK_SIZE_N)


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


def operand_row_bytes(problem: GemmProblem) -> tuple[int, int]:
    """Bytes per row of the matrices the copy engine reads for A and B, contiguous as the tuner allocates them: A
    (M x K) or a column-major A's transpose, B (K x N) or a column-major B's transpose. An 8-bit or 32-bit row-major B
    is read from its K-major copy (tune_gemm.kernels.tma_family.k_major_copy), whose rows are whole lines."""
    copied = problem.dtype_b.bytes != 2 and not problem.col_b
    b_row = PADDED_ROW_BYTES if copied else problem.N * problem.dtype_b.bytes
    return ((problem.M if problem.col_a else problem.K) * problem.dtype_a.bytes,
            problem.K * problem.dtype_b.bytes if problem.col_b else b_row)


# Tiles of fewer rows than this multiply without a matrix instruction (tune_gemm.kernels.matmul_family.DOT_MIN_ROWS,
# row_products): mma's and mfma's least M.
DOT_MIN_ROWS = 16
# The bytes of one vector load: a tile without a matrix instruction gives each thread at least one of its elements.
# Eight, not sixteen: 1024 threads of 4 fp16 each read a row of 4096, as max-autotune's reduction kernel does, and
# tiles so were among the fastest at 1x4096x14336 on the H100.
VECTOR_BYTES = 8
# The widest tile a Triton dot or a copy-engine block takes (wgmma's n); wider ones are the warp-group kernel's
# (tune_gemm.space.rules.warp_group).
WIDEST_PART = 256


def without_instruction(config: Config) -> bool:
    """Whether the plain family multiplies the tile without a matrix instruction
    (tune_gemm.kernels.matmul_family.row_products)."""
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


def _group_m(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Grouping needs two rows of tiles or more. The seed also dropped every GROUP_M that groups all the rows
    # (GROUP_M*BLOCK_M >= M), which walks the tiles column by column, each column of B read by all its rows of
    # tiles in turn. Measured on the H100 (Triton 3.6, fp16), that order is what a
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
    compound = is_compound(config.BLOCK_SIZE_M, config.BLOCK_SIZE_N)
    return (config.BLOCK_SIZE_N > WIDEST_PART
            or accumulator_registers(config, device) <= (budget * 9 // 16 if compound else budget // 2))


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


MATRIX_INSTRUCTION_RULE = Rule(
    "matrix_instruction", f"block >= matrix-instruction tile, one per warp at least; BLOCK_M < {DOT_MIN_ROWS} (no "
    f"instruction) only for M < {DOT_MIN_ROWS}, no taller than M needs, a vector of B per thread", _matrix_instruction,
    (*TILE, "BLOCK_SIZE_K", "num_warps", "matrix_instr_nonkdim", "kpack"))
K_TILING_RULE = Rule(
    "k_tiling", "SPLIT_K*BLOCK_K divides K (masked K loop without a split only for K not a multiple of 16, 32 "
    f"for 1-byte inputs, for BLOCK_K padding K by at most 1/{round(1 / MASKED_K_MAX_PADDING)}, or for BLOCK_M < "
    f"{DOT_MIN_ROWS})", _k_tiling, ("BLOCK_SIZE_M", "BLOCK_SIZE_K", "SPLIT_K"))
GROUP_M_RULE = Rule(
    "group_m", "GROUP_M=1 where one row of tiles; of the GROUP_M values that group every row, the smallest; "
    "the smallest where one column of tiles", _group_m, ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "GROUP_SIZE_M", "SWAP_AB"))
SHARED_MEMORY_RULE = Rule(
    "shared_memory", "num_stages*(BM*BK+BK*BN)*bytes <= the device's shared memory per block", _shared_memory,
    (*TILE, "BLOCK_SIZE_K", "num_stages"))
REGISTERS_RULE = Rule(
    "registers", "fp32 accumulator <= half the registers of a thread (a quarter without a matrix instruction)",
    _accumulator_registers, (*TILE, "BLOCK_SIZE_K", "num_warps"))
BLOCK_SIZE_RULE = Rule("block_size", f"BLOCK_M <= 2*M and BLOCK_N <= 2*N, or {NARROWEST_DOT}", _block_not_oversized,
                       TILE)
LARGE_GEMM_RULE = Rule(
    "large_gemm", f"when 128x128 tiles fill the GPU: BLOCK_M,N >= 64, BLOCK_K >= {LARGE_GEMM_LEAST_BLOCK_K} "
    "(or the largest power of two dividing K), num_warps >= 4", _large_gemm, (*TILE, "BLOCK_SIZE_K", "num_warps"))
NUM_STAGES_RULE = Rule("num_stages", "num_stages <= K-loop iterations + 1", _stages_within_k_loop,
                       ("num_stages", "BLOCK_SIZE_K", "SPLIT_K"))
CLUSTERS_RULE = Rule(
    "clusters", "num_ctas > 1 only where the GPU launches thread-block clusters (NVIDIA compute capability 9+)",
    _clusters, ("num_ctas",))
