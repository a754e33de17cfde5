"""The rules of the TMA family's ways of filling the SMs past whole tiles and whole waves: stream-K and the split
tail (STREAM_K), and the narrow edge tiles, apart, fused or split (NARROW_EDGE); with the edge widths and K slices the
launch computes (tune_gemm.core.geometry), from a problem, a config and a device."""

from __future__ import annotations

from dataclasses import replace

from tune_gemm.core import geometry
from tune_gemm.core.config import Config, NarrowEdge, StreamK
from tune_gemm.core.device import DeviceProfile
from tune_gemm.core.geometry import EDGE_SLICE_K_TILES, TAIL_SLICE_K_TILES, cdiv
from tune_gemm.core.problem import GemmProblem
from tune_gemm.space.rules.common import (
    Rule,
    accumulator_registers,
    k_iterations,
    output_tiles,
    shared_memory_bytes,
)

STREAM_K_LEAST_IDLE = 0.01  # share of the last wave's SM time left idle below which stream-K is not tried
TAIL_LEAST_SLICES = 4  # the fewest K slices per tail tile for which a split tail is tried


def persistent_programs(problem: GemmProblem, config: Config, device: DeviceProfile) -> int:
    """Programs of the config's persistent launch on the problem (tune_gemm.core.geometry.persistent_programs): one per
    SM, or per cluster of num_ctas SMs, never more than the tiles."""
    return geometry.persistent_programs(device.sm_count, output_tiles(problem, config), config.num_ctas)


def tail_slices(problem: GemmProblem, config: Config, device: DeviceProfile) -> int:
    """K slices per tile past the last whole wave of a SPLIT_TAIL config, as the launch sets them
    (tune_gemm.core.geometry.tail_slices): as many as give each persistent program one, at least TAIL_SLICE_K_TILES K
    tiles each; 1 where that leaves fewer than two, or where the tiles fill whole waves or less than one."""
    return geometry.tail_slices(output_tiles(problem, config), persistent_programs(problem, config, device),
                                cdiv(problem.K, config.BLOCK_SIZE_K))


def _stream_k(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # Stream-K shares out the tiles of a partly idle last wave (tune_gemm.kernels.tma_family.stream_k_part): it exists
    # only where the tiles overrun a whole number of waves of one program per SM, by enough to matter, and where a
    # tile's K loop has at least two iterations to split.
    if not config.STREAM_K:
        return True
    if config.STREAM_K == StreamK.SPLIT_TAIL:
        return _split_tail(problem, config, device)
    tiles = output_tiles(problem, config)
    waves = cdiv(tiles, device.sm_count)
    idle = (waves * device.sm_count - tiles) / (waves * device.sm_count)
    return tiles > device.sm_count and idle >= STREAM_K_LEAST_IDLE and k_iterations(problem, config) >= 2


def _split_tail(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # The tiles past the last whole wave in K slices (tune_gemm.core.geometry.tail_slices) pay only where those
    # tiles are few enough that each is cut into at least TAIL_LEAST_SLICES: measured on the H100 (Triton 3.6, fp16,
    # BENCHMARKS.md), 128x256 tiles at 5120x5120x4096 (8 tiles past six waves, 8 slices each) took
    # 330.8-335.0 us against 357.4-362.7 whole, but at 4096x5120x4096 (112 tiles past four waves, 2 slices each)
    # 264.4-290.6 against 235.1-256.9. Not with warp specialization, whose loop the tail's would follow unmeasured.
    return not config.WARP_SPECIALIZE and tail_slices(problem, config, device) >= TAIL_LEAST_SLICES


def edge_columns(problem: GemmProblem, config: Config) -> tuple[int, ...]:
    """Widths of a NARROW_EDGE config's edge tiles on the problem its kernel computes (C^T with SWAP_AB), as the launch
    sets them (tune_gemm.core.geometry.edge_columns): the columns past the last whole tile rounded up to a power of
    two, at least NARROWEST_DOT; where that is a whole tile, half a tile and the rest so rounded, if narrower than the
    half; () where whole tiles cover N or the edge tiles would be as wide as a whole one."""
    return geometry.edge_columns(problem.M if config.SWAP_AB else problem.N, config.BLOCK_SIZE_N)


def edge_slices(problem: GemmProblem, config: Config, device: DeviceProfile) -> int:
    """K slices per edge tile of a SPLIT_EDGE config, as the launch sets them (tune_gemm.core.geometry.edge_slices): as
    many as give each persistent program one, at least EDGE_SLICE_K_TILES K tiles each; 1 where that leaves fewer than
    two."""
    rows = problem.N if config.SWAP_AB else problem.M
    edge_tiles = len(edge_columns(problem, config)) * cdiv(rows, config.BLOCK_SIZE_M)
    return geometry.edge_slices(persistent_programs(problem, config, device), edge_tiles,
                                cdiv(problem.K, config.BLOCK_SIZE_K))


def _narrow_edge(problem: GemmProblem, config: Config, device: DeviceProfile) -> bool:
    # A last column of tiles that N fills only in part spends its matrix instructions on columns past N; the edge
    # tiles compute it narrower. Kept only where they are narrower than a whole tile, and not with stream-K (which
    # shares out whole tiles) or clusters, neither measured with it. Measured on the H100 (Triton 3.6, fp16,
    # BENCHMARKS.md): with warp specialization and 4 warps every config failed to compile
    # ("PassManager::run failed"), 59 of 59 at 8192x2056x4096 and at 4096x4112x4096, where 26 of their twins without
    # the edge tiles compiled.
    if not config.NARROW_EDGE:
        return True
    widths = edge_columns(problem, config)
    kept = (bool(config.PERSISTENT_TMA) and not config.STREAM_K and config.num_ctas == 1
            and not (config.WARP_SPECIALIZE and config.num_warps == 4) and bool(widths))
    if not kept:
        return False
    if config.NARROW_EDGE == NarrowEdge.FUSED:
        return _fused_edge(problem, config, device, widths)
    # Edge tiles in K slices (NarrowEdge.SPLIT) only where they are split at all: else they are APART's. Measured
    # on the H100 (Triton 3.6, fp16): at 4096x4248x4096, 256x128 tiles in groups of
    # 2-8 rows with 16 edge tiles in 8 slices took 228.1-231.6 us, the same tiles with the edge fused 236.9-240.0.
    return config.NARROW_EDGE != NarrowEdge.SPLIT or edge_slices(problem, config, device) > 1


def _fused_edge(problem: GemmProblem, config: Config, device: DeviceProfile, widths: tuple[int, ...]) -> bool:
    # A fused edge tile needs a whole tile beside it (each of two edge widths its own); its stages hold that tile's
    # B columns and the edge's, and its two accumulators live in registers together; the first edge width is the
    # wider. Up to 3/4 of a thread's registers for them: measured on the H100
    # (Triton 3.6, fp16), a 128x256 tile with 128 edge columns beside it (8 warps,
    # 192 accumulator registers a thread) compiled to 218 registers without spills and was the fastest of its twins at
    # 8192x2144x4096 (223.3 us; edge tiles apart 231.0). Width costs little: 16, 32 and 64 edge columns beside a
    # 128x256 tile took 66.6, 67.7 and 68.5 us at 8192x272x4096. With two widths, 128 + 32 columns past tiles of 256
    # fused took 8192x2200x4096 to 228.4 us, against 244.5 without edge tiles and 245.9 apart.
    n = problem.M if config.SWAP_AB else problem.N
    wider = replace(config, BLOCK_SIZE_N=config.BLOCK_SIZE_N + widths[0])  # the whole tile and its edge, side by side
    return (n >= len(widths) * config.BLOCK_SIZE_N and shared_memory_bytes(problem, wider) <= device.max_shared_bytes
            and accumulator_registers(wider, device) <= 3 * (device.max_registers_per_thread + 1) // 4)


STREAM_K_RULE = Rule(
    "stream_k", "STREAM_K only where the tiles overrun whole waves of one per SM, the last wave >= 1% idle, "
    f"and K takes >= 2 iterations; a split tail ({StreamK.SPLIT_TAIL}) only without WARP_SPECIALIZE, where the tiles "
    f"past the last whole wave are cut into >= {TAIL_LEAST_SLICES} K slices of >= {TAIL_SLICE_K_TILES} K tiles, one "
    "per program at most", _stream_k)
NARROW_EDGE_RULE = Rule(
    "narrow_edge", "NARROW_EDGE only in the TMA family, no STREAM_K, num_ctas 1, not WARP_SPECIALIZE with 4 "
    "warps (fails to compile), where N's last column of tiles would be at least a quarter empty; fused with the "
    f"last whole tile ({NarrowEdge.FUSED}) where there is one for each edge width, the stages fit in shared memory and "
    "the two accumulators in 3/4 of a thread's registers; in K slices "
    f"({NarrowEdge.SPLIT}) where each program can take one, of at least {EDGE_SLICE_K_TILES} K tiles, and at least two "
    "per edge tile", _narrow_edge)
