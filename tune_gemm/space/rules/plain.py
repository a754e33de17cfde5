"""The rules of the plain (pointer-load) family's knobs: split K, its fused reduction, and the static shape."""

from __future__ import annotations

from tune_gemm.core.config import Config
from tune_gemm.core.device import DeviceProfile
from tune_gemm.core.problem import GemmProblem
from tune_gemm.space.rules.common import (
    DOT_MIN_ROWS,
    TILE,
    Rule,
    k_iterations,
    output_tiles,
    without_instruction,
)


def _split_k_only_for_small_grids(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Splitting K pays only when the output tiles alone cannot fill the GPU (M and N small).
    if config.SPLIT_K == 1:
        return True
    return output_tiles(problem, config) < device.sm_count


STATIC_SHAPE_MAX_K_ITERATIONS = 8  # K-loop iterations per program up to which a kernel counts as launch-bound


def _static_shape_where_it_pays(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Constant sizes and strides save a launch-bound kernel its index arithmetic: on the H100 (Triton 3.6), 4.48
    # instead of 4.80 us at 16^3, 4.77 instead of 5.23 at 32x32x64, 6.27 instead of 6.66 at 64x128x256, in
    # bench_gemm's windows. Past one wave of short programs that share of the time vanishes, while the knob costs
    # a compile per shape at run time; there it is not tried. A tile without a matrix instruction is the exception:
    # its program is a loop of loads, whose address and mask arithmetic the constants fold away. On the H100 (fp16,
    # B column-major, L2 flushed, interleaved), at 1x4096x14336 BM1_BN1_BK4096 with
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


FUSED_REDUCE_RULE = Rule("fused_reduce", "FUSED_REDUCE only with SPLIT_K > 1", _fused_reduce_with_split_k,
                         ("SPLIT_K", "FUSED_REDUCE"))
SPLIT_K_RULE = Rule("split_k", "SPLIT_K=1 when the output tiles already fill the GPU", _split_k_only_for_small_grids,
                    (*TILE, "SPLIT_K", "SWAP_AB"))
STATIC_SHAPE_RULE = Rule(
    "static_shape", f"STATIC_SHAPE only where tiles*SPLIT_K <= SMs and K takes <= {STATIC_SHAPE_MAX_K_ITERATIONS} "
    f"iterations (launch-bound), or for BLOCK_M < {DOT_MIN_ROWS}", _static_shape_where_it_pays,
    ("STATIC_SHAPE", *TILE, "SWAP_AB", "SPLIT_K", "BLOCK_SIZE_K"))
STATIC_SHAPE_PLAIN_RULE = Rule(
    "static_shape_plain", "STATIC_SHAPE only in the plain family (not with PERSISTENT_TMA)", _static_shape_plain,
    ("STATIC_SHAPE", "PERSISTENT_TMA"))
