"""Integer geometry of a launch: tiles, waves of persistent programs, K slices, edge widths and tile-side parts.

Pure functions on plain ints, with no torch and no Triton: the kernels' host side (tune_gemm.kernels) sets a launch
up with them, and the pruning rules (tune_gemm.space) predict from them what the launch will do.
"""

from __future__ import annotations

# The narrowest block Triton's dot takes: the least edge tile, and the least extra part of a compound tile side.
NARROWEST_EDGE = 16
# Rows of the TMA family's padded copies are whole 128-byte lines: where rows start off a line, each row of a tile the
# copy engine loads straddles two. At 8191x2049x4095 (fp16, H100) the GEMM on rows padded to 16 bytes made 2.6 times
# the L2 read requests and took 304 us, on rows padded to 128 bytes 233 us (BENCHMARKS.md, eleventh run).
PADDED_ROW_BYTES = 128
EDGE_SLICE_K_TILES = 4  # the fewest K tiles in a slice of an edge tile: fewer would be mostly the pipeline's fill
TAIL_SLICE_K_TILES = 8  # the fewest K tiles in a slice of a tile past the last whole wave


def ceil_div(a: int, b: int) -> int:
    """ceil(a / b) on ints (triton.cdiv is a constexpr function, about 2 us a call on a launch's host side)."""
    return -(-a // b)


def next_power_of_two(value: int) -> int:
    """The least power of two at least `value` (1 for 0 or 1)."""
    return 1 << max(value - 1, 0).bit_length()


def tile_count(m: int, n: int, block_m: int, block_n: int) -> int:
    """Output tiles of an m x n output cut into block_m x block_n tiles."""
    return ceil_div(m, block_m) * ceil_div(n, block_n)


def persistent_programs(sm_count: int, units: int, num_ctas: int = 1) -> int:
    """Programs of a persistent launch on `sm_count` SMs: one per SM, or per cluster of num_ctas SMs, never more than
    the units of work, and at least one."""
    return max(1, min(sm_count // num_ctas, units))


def tiles_past_whole_waves(tiles: int, programs: int) -> int:
    """The tiles a persistent launch of `programs` programs runs after its last whole wave: none where the tiles fill
    whole waves or less than one."""
    return tiles % programs if tiles > programs else 0


def k_slices(programs: int, tiles: int, k_tiles: int, least_k_tiles: int) -> int:
    """K slices per tile where `tiles` tiles are cut so that every program takes one unit, each of at least
    least_k_tiles K tiles; 1 (no split) where that leaves fewer than two, or where there are no tiles to cut."""
    if not tiles:
        return 1
    slices = min(programs // tiles, k_tiles // least_k_tiles)
    return slices if slices >= 2 else 1


def edge_slices(programs: int, edge_tiles: int, k_tiles: int) -> int:
    """K slices per edge tile of a split-edge launch (the TMA kernel's EDGE_SPLIT): as many as give every program one
    unit, at least EDGE_SLICE_K_TILES K tiles each; 1 (no split) where that leaves fewer than two. At 4096x4248x4096
    (fp16, H100) 16 edge tiles of 256x32 after four whole waves of 256x128 tiles, in 8 slices, took the launch from
    236.9-240.0 us (edge tiles fused) to 228.1-231.6 (BENCHMARKS.md, twenty-first run)."""
    return k_slices(programs, edge_tiles, k_tiles, EDGE_SLICE_K_TILES)


def tail_slices(tiles: int, programs: int, k_tiles: int) -> int:
    """K slices per tile past the last whole wave of a split-tail launch (the TMA kernel's TAIL_SPLIT): as many as
    give every program one unit, at least TAIL_SLICE_K_TILES K tiles each; 1 (no split) where that leaves fewer than
    two, or where the tiles fill whole waves or less than one. At 5120x5120x4096 (fp16, H100) 800 tiles of 128x256
    make six waves of 132 and 8 tiles more; in 8 slices the launch took 330.8-335.0 us, against 357.4-362.7 with
    whole tiles and 345.5-350.0 with stream-K (BENCHMARKS.md, twenty-second run)."""
    return k_slices(programs, tiles_past_whole_waves(tiles, programs), k_tiles, TAIL_SLICE_K_TILES)


def edge_width(columns: int) -> int:
    """The width of an edge tile over `columns` columns: rounded up to a power of two, at least NARROWEST_EDGE."""
    return max(NARROWEST_EDGE, next_power_of_two(columns))


def edge_columns(n: int, block_n: int) -> tuple[int, ...]:
    """Widths of the edge tiles (the TMA kernel's EDGE_N, and EDGE_N2 for a second) of a NARROW_EDGE launch on n
    columns: the columns past the last whole block_n tile rounded up to a power of two, at least NARROWEST_EDGE.
    Where that is a whole tile, two: half a tile, then the rest so rounded, if narrower than the half; a 152-column
    edge beside 256-column tiles is 128 + 32. () where whole tiles cover n, or where the edge tiles would be as wide
    as a whole one."""
    rest = n % block_n
    if not rest:
        return ()
    width = edge_width(rest)
    if width < block_n:
        return (width,)
    half = block_n // 2
    second = edge_width(rest - half)
    return (half, second) if second < half else ()


def block_parts(side: int) -> tuple[int, int]:
    """A tile side as the TMA family's kernel computes it: (main, extra), main the largest power of two in it, extra
    the rest (192 is 128 + 64); extra 0 for a power of two. is_tile_side tells whether the kernel takes the side."""
    main = 1 << (side.bit_length() - 1)
    return main, side - main


def is_tile_side(side: int) -> bool:
    """Whether a block size can be a tile side: a power of two, or the sum of two, the smaller at least
    NARROWEST_EDGE (block_parts)."""
    extra = block_parts(side)[1] if side > 0 else 1
    return not extra or (extra >= NARROWEST_EDGE and not extra & (extra - 1))
