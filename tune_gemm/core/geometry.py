"""The integer geometry of a GEMM launch: tiles, tile sides, edge tiles, waves of persistent programs and K slices.

Pure functions of plain ints, computed alike by the pruning rules (tune_gemm.space.rules, from a problem, a config
and a device) and by the TMA family's launch (tune_gemm.kernels.tma_family, from the tensors it is given), so that
the pruner keeps a config for the same edge tiles and K slices the launch then computes.
"""

from __future__ import annotations

NARROWEST_DOT = 16  # the narrowest block Triton's dot takes: the least edge tile and the least extra part of a side
NARROWEST_EDGE = NARROWEST_DOT  # the narrowest edge tile of a NARROW_EDGE launch
EDGE_SLICE_K_TILES = 4  # the fewest K tiles in a slice of an edge tile: fewer would be mostly the pipeline's fill
TAIL_SLICE_K_TILES = 8  # the fewest K tiles in a slice of a tile past the last whole wave
TMA_ALIGNMENT_BYTES = 16  # the copy engine reads rows whose start addresses are 16-byte aligned
# A padded copy's rows are whole 128-byte lines: where rows start off a line, each row of a tile the copy engine
# loads straddles two. At 8191x2049x4095 (fp16, H100) the GEMM on rows padded to 16 bytes made 2.6 times the L2
# read requests and took 304 us, on rows padded to 128 bytes 233 us.
PADDED_ROW_BYTES = 128


def ceil_div(a: int, b: int) -> int:
    """ceil(a / b) for integers (triton.cdiv is a constexpr function, about 2 us a call on the host)."""
    return -(-a // b)


cdiv = ceil_div  # the name the rules and the benchmark scripts use


def next_power_of_two(value: int) -> int:
    """The smallest power of two at least `value` (>= 1)."""
    return 1 << (value - 1).bit_length()


def tile_count(rows: int, cols: int, block_m: int, block_n: int) -> int:
    """Tiles of block_m x block_n that cover a rows x cols output."""
    return ceil_div(rows, block_m) * ceil_div(cols, block_n)


def is_tile_side(side: int) -> bool:
    """Whether a block size can be a tile side: a power of two, or the sum of two, the smaller at least
    NARROWEST_DOT (192 = 128 + 64, 48 = 32 + 16; not 40 or 100)."""
    if side < 1:
        return False
    extra = side - (1 << (side.bit_length() - 1))
    return not extra or (extra >= NARROWEST_DOT and not extra & (extra - 1))


def block_parts(side: int) -> tuple[int, int]:
    """A tile side as the TMA family's kernel computes it: (main, extra), main the largest power of two in it, extra
    the rest, 0 or a power of two at least NARROWEST_DOT (192 is 128 + 64). Raises ValueError for any other side
    (is_tile_side)."""
    if not is_tile_side(side):
        raise ValueError(f"a tile side of {side} is neither a power of two nor the sum of two, each at least "
                         f"{NARROWEST_DOT}")
    main = 1 << (side.bit_length() - 1)
    return main, side - main


def is_compound(block_m: int, block_n: int) -> bool:
    """Whether either side of a block_m x block_n tile is two parts (block_parts): the TMA family computes such a
    tile as up to four products."""
    return bool(block_parts(block_m)[1] or block_parts(block_n)[1])


def edge_width(columns: int) -> int:
    """The width of an edge tile over `columns` columns: rounded up to a power of two, at least NARROWEST_EDGE."""
    return max(NARROWEST_EDGE, next_power_of_two(columns))


def edge_columns(n: int, block_n: int) -> tuple[int, ...]:
    """Widths of the edge tiles of a NARROW_EDGE launch on n columns: the columns past the last whole block_n tile
    rounded up to a power of two, at least NARROWEST_EDGE (edge_width). Where that is a whole tile, two: half a tile,
    then the rest so rounded, if narrower than the half; a 152-column edge beside 256-column tiles is 128 + 32. ()
    where whole tiles cover n, or where the edge tiles would be as wide as a whole one."""
    rest = n % block_n
    if not rest:
        return ()
    width = edge_width(rest)
    if width < block_n:
        return (width,)
    half = block_n // 2
    second = edge_width(rest - half)
    return (half, second) if second < half else ()


def persistent_programs(sm_count: int, tiles: int, num_ctas: int = 1) -> int:
    """Programs of a persistent launch over `tiles` tiles: one per SM, or per cluster of num_ctas SMs (a program is
    then a cluster), never more than the tiles, and at least one."""
    return max(1, min(sm_count // num_ctas, tiles))


def k_slices(programs: int, tiles: int, k_tiles: int, least_k_tiles: int) -> int:
    """K slices per tile where `tiles` tiles of k_tiles K tiles each are cut so that every program takes one unit,
    each of at least least_k_tiles K tiles; 1 (no split) where that leaves fewer than two, or where there are no
    tiles to cut."""
    if not tiles:
        return 1
    slices = min(programs // tiles, k_tiles // least_k_tiles)
    return slices if slices >= 2 else 1


def edge_slices(programs: int, edge_tiles: int, k_tiles: int) -> int:
    """K slices per edge tile of a split-edge launch: as many as give every program one unit, at least
    EDGE_SLICE_K_TILES K tiles each; 1 (no split) where that leaves fewer than two."""
    return k_slices(programs, edge_tiles, k_tiles, EDGE_SLICE_K_TILES)


def tiles_past_whole_waves(tiles: int, programs: int) -> int:
    """The tiles a persistent launch of `programs` programs runs after its last whole wave: none where the tiles
    fill whole waves or less than one."""
    return tiles % programs if tiles > programs else 0


def tail_slices(tiles: int, programs: int, k_tiles: int) -> int:
    """K slices per tile past the last whole wave of a split-tail launch: as many as give every program one unit, at
    least TAIL_SLICE_K_TILES K tiles each; 1 (no split) where that leaves fewer than two, or where the tiles fill
    whole waves or less than one."""
    return k_slices(programs, tiles_past_whole_waves(tiles, programs), k_tiles, TAIL_SLICE_K_TILES)
