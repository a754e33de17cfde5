"""The rules of the warp-group kernel (WARP_GROUPS, tune_gemm.kernels.warp_group_family): its tiles, warps and
inputs, and the tiles and warp counts no other kernel takes."""

from __future__ import annotations

from tune_gemm.core.config import Config
from tune_gemm.core.device import DeviceProfile
from tune_gemm.core.geometry import TMA_ALIGNMENT_BYTES, block_parts
from tune_gemm.core.problem import GemmProblem
from tune_gemm.space.rules.common import TILE, WIDEST_PART, Rule, operand_row_bytes

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
# Tiles wider than WIDEST_PART are the warp-group kernel's two consumer warp groups' (128 rows, 8 warps), a 256-column
# part beside one of 64 or 128, as wide as their accumulators (64 x 384 fp32, 192 registers a thread) fit in the 232
# registers a thread each gets (tune_gemm.kernels.warp_group_family).
WIDEST_OF_TWO_WARP_GROUPS = 384


def _warp_group_tiles(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Triton launches a power of two warps; 12 counts the three consumer warp groups of the warp-group kernel's
    # 192-row tiles (rule warp_groups), their only use, and 16 the four of its 256-row tiles. Compiled for sm_90a
    # (Triton 3.6, fp16), 256x160 took no stack, 256x192 spilled 1696 bytes. Tiles 96 wide (64 + 32) are that
    # kernel's with 192 rows only: Triton's compound tiles of 32-column parts lost wherever measured (rule
    # compound_tile), the kernel's own 128x96 and 256x96 too (48.6 and 42.7 us at 1536x1536x4096 against 35.4 and
    # 35.0 for 192x96: BENCHMARKS.md).
    compound_width = block_parts(config.BLOCK_SIZE_N)[1] > 0
    if config.BLOCK_SIZE_N > WIDEST_PART:
        # 128x320 took 61.5 us at 2048x2560x4096 (one wave of 128 tiles, as cuBLAS's 320x128 runs C^T) against 66.3 for
        # 256x160 and 61.7 for cuBLAS (H100, Triton 3.6, fp16)
        return (config.BLOCK_SIZE_M == 2 * WARP_GROUP_ROWS and config.num_warps == warp_group_warps(config)
                and config.BLOCK_SIZE_N <= WIDEST_OF_TWO_WARP_GROUPS)
    if config.num_warps == 12:
        return config.BLOCK_SIZE_M == 192 and compound_width
    if config.num_warps == 16:
        return (config.BLOCK_SIZE_M == 256 and compound_width and config.BLOCK_SIZE_N != 96
                and config.BLOCK_SIZE_N <= WIDEST_OF_FOUR_WARP_GROUPS)
    return config.BLOCK_SIZE_N != 96


def _warp_groups(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # The warp-group kernel (tune_gemm.kernels.warp_group_family) runs on Hopper (compute capability 9.0) with Gluon,
    # not under the interpreter. Its consumer warp groups own 64 rows each (BLOCK_SIZE_M 128, 192 or 256: two to four,
    # num_warps 8, 12 or 16) and multiply them by the two column parts of a compound BLOCK_SIZE_N (192 = 128 + 64, 160 =
    # 128 + 32, 96 = 64 + 32; 320 = 256 + 64 and 384 = 256 + 128, wider than any other kernel's tile, with two warp
    # groups), so that every product is a full-width matrix instruction; power-of-two widths are the TMA family's.
    # 16-bit inputs of one dtype, A row-major, B either way; K tiles of 64 or 128 bytes (the widest the copy engine's
    # 128-byte swizzle takes); whole tiles only, no clusters; every operand's rows and C's 16-byte aligned (it reads and
    # stores them through descriptors as they are, with no padded copies). Measured on the H100 (Triton 3.6, fp16,
    # BENCHMARKS.md): at 3072x1536x4096 its 192x192 tiles with 32-element K tiles and six stages took
    # 56.0 us, the TMA family's 61.4, cuBLAS 55.0; with 64-element K tiles and three stages 59.2.
    if not config.WARP_GROUPS:
        return config.num_warps not in WARP_GROUP_ONLY_WARPS and config.BLOCK_SIZE_N <= WIDEST_PART
    return (device.warp_groups and problem.dtype_a == problem.dtype_b and problem.dtype_a.bytes == 2
            and not problem.col_a and config.BLOCK_SIZE_M in (128, 192, 256)
            and config.num_warps == warp_group_warps(config)
            and block_parts(config.BLOCK_SIZE_N)[1] >= WARP_GROUP_LEAST_EXTRA
            and config.BLOCK_SIZE_K * problem.dtype_a.bytes in (64, 128) and config.SPLIT_K == 1
            and config.num_ctas == 1 and config.num_stages >= 2
            and all(row_bytes % TMA_ALIGNMENT_BYTES == 0 for row_bytes in operand_row_bytes(problem))
            and problem.N * problem.dtype_c.bytes % TMA_ALIGNMENT_BYTES == 0)


WARP_GROUP_TILES_RULE = Rule(
    "warp_group_tiles", "num_warps 12 only for 192-row tiles of compound width, 16 for 256-row ones at most "
    f"{WIDEST_OF_FOUR_WARP_GROUPS} wide (the warp-group kernel's three and four consumer warp groups), BLOCK_N 96 "
    f"only with 12, BLOCK_N over {WIDEST_PART} (at most {WIDEST_OF_TWO_WARP_GROUPS}) only for 128-row tiles "
    "with 8", _warp_group_tiles, (*TILE, "num_warps"))
WARP_GROUPS_RULE = Rule(
    "warp_groups", "WARP_GROUPS only on Hopper (compute capability 9.0) with Gluon: 16-bit inputs of one dtype, "
    f"row-major A, BLOCK_M 128|192|256 with {WARP_GROUP_ROWS // 16} warps per {WARP_GROUP_ROWS} rows, BLOCK_N of "
    f"two parts (the narrower >= {WARP_GROUP_LEAST_EXTRA}), BLOCK_K of 64|128 bytes, no SPLIT_K or clusters, "
    f"num_stages >= 2, A's, B's and C's rows 16-byte aligned; num_warps 12 and 16 and BLOCK_N over {WIDEST_PART} "
    "for nothing else", _warp_groups,
    ("WARP_GROUPS", *TILE, "BLOCK_SIZE_K", "SPLIT_K", "num_warps", "num_stages", "num_ctas"))
