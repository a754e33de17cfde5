"""How a persistent TMA launch cuts its work: the family's host-side knobs (TmaVariant), the persistent grid, the K
slices of edge tiles, tail tiles and split K with their scratch, and the kernel's constants that follow from them.
The integer geometry itself is tune_gemm.core.geometry's, shared with the pruning rules."""

import functools
from dataclasses import dataclass

import torch

from tune_gemm.core.geometry import (
    ceil_div,
    edge_slices,
    tail_slices,
    tile_count,
    tiles_past_whole_waves,
)
from tune_gemm.core.geometry import is_compound as geometry_is_compound
from tune_gemm.core.geometry import persistent_programs as programs_on
from tune_gemm.kernels.matmul_family.device import INTERPRETED
from tune_gemm.kernels.matmul_family.host import (
    arrival_counters,
    fused_partials,
    running_sums,
)
from tune_gemm.kernels.matmul_family.specs import TileConfig

INTERPRETER_PROGRAMS = 3  # persistent programs under the interpreter: few, so that each walks several tiles


@functools.lru_cache
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def persistent_programs(device, tiles: int, num_ctas: int = 1) -> int:
    """One program per SM, never more than there are tiles. With num_ctas > 1 a program is a cluster of num_ctas
    CTAs, each on its own SM (tl.program_id and tl.num_programs count clusters): one program per num_ctas SMs.
    The interpreter stands in INTERPRETER_PROGRAMS SMs."""
    sms = INTERPRETER_PROGRAMS if INTERPRETED else _sm_count(torch.device(device).index or 0)
    return programs_on(sms, tiles, num_ctas)


@dataclass(frozen=True)
class TmaVariant:
    """The family's knobs that the host side of a launch depends on (the kernel binds them as constants)."""

    epilogue_subtile: bool = False
    stream_k: bool = False
    swap_ab: bool = False  # compute C^T = B^T A^T: the launch passes the transposed views of the three matrices
    align_rows: bool = False  # copy an A or B whose rows start off 128-byte lines too (tma_views)
    narrow_edge: bool = False  # compute the columns past the last whole tile in narrower tiles (edge_columns)
    fused_edge: bool = False  # with narrow_edge: each narrower tile beside a whole one of its rows, in its K loop
    split_edge: bool = False  # with narrow_edge: the narrower tiles apart, their K loops in slices (edge_slices)
    split_tail: bool = False  # the tiles past the last whole wave in K slices (tail_slices); not with stream_k


def edge_split(config: TileConfig, variant: TmaVariant, widths: tuple[int, ...], M: int, K: int, programs: int) -> int:
    """EDGE_SPLIT of a launch on an M x K A: edge_slices for a split-edge variant's edge tiles, else 1."""
    if not variant.split_edge:
        return 1
    return edge_slices(programs, len(widths) * ceil_div(M, config.BLOCK_SIZE_M), ceil_div(K, config.BLOCK_SIZE_K))


def edge_scratch(config: TileConfig, widths: tuple[int, ...], M: int, dtype, device) -> tuple:
    """(workspace, arrivals) of a split-edge launch: a zeroed running sum per edge tile, in the accumulator's type,
    the first width's tiles first, and their zeroed arrival counters; the last slice of each tile leaves both zero."""
    rows = ceil_div(M, config.BLOCK_SIZE_M)
    return (running_sums(device, rows * config.BLOCK_SIZE_M * sum(widths), dtype),
            arrival_counters(device, rows * len(widths)))


def accumulator_dtype(input_dtype):
    """Element type of partial tiles in a launch's scratch: the kernel's accumulator (int32 for int8 inputs)."""
    return torch.int32 if input_dtype == torch.int8 else torch.float32


def tail_split(config: TileConfig, variant: TmaVariant, M: int, N: int, K: int, programs: int) -> int:
    """TAIL_SPLIT of a launch on an M x K A and a K x N B: tail_slices for a split-tail variant, else 1."""
    if not variant.split_tail:
        return 1
    return tail_slices(_tiles(config, M, N), programs, ceil_div(K, config.BLOCK_SIZE_K))


def tail_scratch(config: TileConfig, tiles: int, programs: int, dtype, device) -> tuple:
    """(workspace, arrivals) of a split-tail launch: a zeroed running sum per tile past the last whole wave, in the
    accumulator's type, and their zeroed arrival counters; the last slice of each tile leaves both zero."""
    tail = tiles_past_whole_waves(tiles, programs)
    return (running_sums(device, tail * config.BLOCK_SIZE_M * config.BLOCK_SIZE_N, dtype),
            arrival_counters(device, tail))


def stream_k_scratch(config: TileConfig, programs: int, dtype, device) -> tuple:
    """(workspace, arrivals) of a stream-K launch (tma_persistent_tile): two partial-tile slots per program, in the
    accumulator's type, and a zeroed arrival counter per tile the stream-K part may share out (fewer than two
    waves of them)."""
    workspace = torch.empty((2 * programs, config.BLOCK_SIZE_M * config.BLOCK_SIZE_N), dtype=dtype, device=device)
    return workspace, torch.zeros(2 * programs, dtype=torch.int32, device=device)


def split_k_scratch(config: TileConfig, tiles: int, dtype, device) -> tuple:
    """(workspace, arrivals) of a split-K launch (split_k_part): the tiles' partials, in the accumulator's type, and
    arrival counters (fused_partials)."""
    return fused_partials(config, tiles, dtype, device)


def launch_scratch(config: TileConfig, variant: TmaVariant, widths: tuple[int, ...], slices: int, tail: int, M: int,
                   N: int, programs: int, dtype, device) -> tuple:
    """(workspace, arrivals) of one launch, in the accumulator's `dtype`: a split K's, split edge tiles' (`slices`
    > 1), a split tail's (`tail` > 1) or stream-K's scratch, or (None, None) for a launch that takes none."""
    if config.SPLIT_K > 1:
        return split_k_scratch(config, _tiles(config, M, N), dtype, device)
    if slices > 1:
        return edge_scratch(config, widths, M, dtype, device)
    if tail > 1:
        return tail_scratch(config, _tiles(config, M, N), programs, dtype, device)
    return stream_k_scratch(config, programs, dtype, device) if variant.stream_k else (None, None)


def is_compound(config: TileConfig) -> bool:
    """Whether a tile side is two parts (block_parts), computed by compound_tile."""
    return geometry_is_compound(config.BLOCK_SIZE_M, config.BLOCK_SIZE_N)


def _tiles(config: TileConfig, M: int, N: int) -> int:
    return tile_count(M, N, config.BLOCK_SIZE_M, config.BLOCK_SIZE_N)


def persistent_grid(config: TileConfig, M: int, N: int, device) -> tuple:
    """The persistent grid: one program per SM, never more than the units of work (tiles, times their K slices)."""
    return (persistent_programs(device, _tiles(config, M, N) * config.SPLIT_K, config.num_ctas),)


def edge_stages(config: TileConfig, edge_n: int) -> int:
    """Pipeline depth of the edge tiles' K loop: as deep as the shared memory of the whole tiles' stages holds. An
    edge tile's stage is a fraction of a whole tile's, so at the same depth too few bytes are in flight to cover
    the latency of the loads."""
    return config.num_stages * (config.BLOCK_SIZE_M + config.BLOCK_SIZE_N) // (config.BLOCK_SIZE_M + edge_n)


def edge_options(config: TileConfig, variant: TmaVariant, widths: tuple[int, ...], n: int, slices: int = 1) -> dict:
    """The kernel's EDGE_N and EDGE_STAGES (and EDGE_N2 and EDGE_STAGES2 for a second edge width), or the widths and
    EDGE_FUSED where variant.fused_edge and N has a whole tile to fuse each edge with, and EDGE_SPLIT where the edge
    tiles run in `slices` > 1 K slices (edge_split); passed only when set: kernels specialized before NARROW_EDGE
    existed, or before it had two widths or slices, stay the same."""
    fused = variant.fused_edge and n >= len(widths) * config.BLOCK_SIZE_N
    options = {"EDGE_FUSED": True} if fused and widths else {}
    for suffix, width in zip(("", "2"), widths):
        options[f"EDGE_N{suffix}"] = width
        if not fused:
            options[f"EDGE_STAGES{suffix}"] = edge_stages(config, width)
    if slices > 1:
        options["EDGE_SPLIT"] = slices
    return options


def tail_options(slices: int) -> dict:
    """The kernel's TAIL_SPLIT where the tiles past the last whole wave run in `slices` > 1 K slices (tail_split);
    passed only when set, so that kernels specialized before the split existed stay the same."""
    return {"TAIL_SPLIT": slices} if slices > 1 else {}


def pdl_options(after_copies: bool) -> dict:
    """Launch options of a GEMM that follows its padding copy: a programmatic dependent launch (Hopper+), whose
    programs wait for the copy inside the kernel (AFTER_COPIES) instead of behind it in the stream, which hides the
    gap between the two kernels: at 4095x4097x1023 (fp16, H100) a launch took 75.3-76.0 us so against 76.6-77.3 us.
    The interpreter, which knows no grid dependencies, never gets them."""
    return {"AFTER_COPIES": True, "launch_pdl": True} if after_copies else {}

