"""tune_gemm.core.geometry: each function at a value where its answer changes and at one where it does not."""

from __future__ import annotations

import pytest

from tune_gemm.core.geometry import (
    EDGE_SLICE_K_TILES,
    NARROWEST_DOT,
    NARROWEST_EDGE,
    PADDED_ROW_BYTES,
    TAIL_SLICE_K_TILES,
    TMA_ALIGNMENT_BYTES,
    block_parts,
    cdiv,
    ceil_div,
    edge_columns,
    edge_slices,
    edge_width,
    is_compound,
    is_tile_side,
    k_slices,
    next_power_of_two,
    persistent_programs,
    tail_slices,
    tile_count,
    tiles_past_whole_waves,
)


def test_the_constants():
    assert (NARROWEST_DOT, NARROWEST_EDGE, EDGE_SLICE_K_TILES, TAIL_SLICE_K_TILES) == (16, 16, 4, 8)
    assert (PADDED_ROW_BYTES, TMA_ALIGNMENT_BYTES) == (128, 16)


def test_ceil_div_rounds_up_past_a_multiple_only():
    assert ceil_div(4096, 128) == 32 and ceil_div(4097, 128) == 33 and ceil_div(4095, 128) == 32
    assert ceil_div(1, 128) == 1 and ceil_div(0, 128) == 0
    assert cdiv is ceil_div


def test_next_power_of_two_changes_past_a_power_only():
    assert [next_power_of_two(v) for v in (1, 2, 3, 4, 5, 8, 9, 4096, 4097)] == [1, 2, 4, 4, 8, 8, 16, 4096, 8192]


def test_tile_count_counts_partial_tiles():
    assert tile_count(4096, 4096, 128, 256) == 32 * 16
    assert tile_count(4097, 4096, 128, 256) == 33 * 16  # one row more: a row of tiles more
    assert tile_count(4096, 4095, 128, 256) == 32 * 16  # one column fewer: the same tiles


def test_tile_sides_are_a_power_of_two_or_two():
    assert [side for side in range(1, 260) if is_tile_side(side) and side & (side - 1)] == [
        48, 80, 96, 144, 160, 192]
    assert not is_tile_side(0) and not is_tile_side(-64)
    assert not is_tile_side(40) and not is_tile_side(100) and not is_tile_side(72)  # 64 + 8: a part under 16


def test_block_parts_split_a_side_and_refuse_others():
    assert block_parts(192) == (128, 64) and block_parts(160) == (128, 32) and block_parts(48) == (32, 16)
    assert block_parts(256) == (256, 0) and block_parts(1) == (1, 0)
    for side in (40, 100, 72, 0):
        with pytest.raises(ValueError, match=f"tile side of {side} "):
            block_parts(side)


def test_is_compound_where_either_side_is_two_parts():
    assert not is_compound(128, 256) and not is_compound(16, 16)
    assert is_compound(192, 128) and is_compound(128, 96) and is_compound(192, 192)


def test_edge_width_rounds_up_to_a_power_of_two_at_least_the_narrowest_dot():
    assert [edge_width(c) for c in (1, 15, 16, 17, 32, 33, 100)] == [16, 16, 16, 32, 32, 64, 128]


def test_edge_columns():
    # whole tiles cover N: no edge; one column past: the narrowest edge
    assert edge_columns(2048, 256) == () and edge_columns(2049, 256) == (16,)
    assert [edge_columns(n, 256) for n in (2056, 2064, 2065, 2176, 2177, 2200, 2240, 2241)] == [
        (16,), (16,), (32,), (128,), (128, 16), (128, 32), (128, 64), ()]
    # an edge as wide as a whole tile: half a tile and the rest, or none where the rest is as wide as the half
    assert edge_columns(64 + 40, 64) == (32, 16) and edge_columns(64 + 50, 64) == ()
    assert edge_columns(8, 16) == () and edge_columns(17, 16) == ()  # no edge narrower than the narrowest dot


def test_persistent_programs_one_per_sm_or_cluster_never_past_the_tiles():
    assert persistent_programs(132, 512) == 132 and persistent_programs(132, 100) == 100
    assert persistent_programs(132, 512, num_ctas=2) == 66 and persistent_programs(132, 60, num_ctas=2) == 60
    assert persistent_programs(1, 5, num_ctas=2) == 1  # at least one


def test_k_slices():
    # 16 tiles on 132 programs, 64 K tiles of at least 4: min(8, 16) slices
    assert k_slices(132, 16, 64, 4) == 8
    assert k_slices(132, 16, 12, 4) == 3  # K limits the slices
    assert k_slices(132, 66, 64, 4) == 2 and k_slices(132, 67, 64, 4) == 1  # fewer than two: no split
    assert k_slices(132, 16, 7, 4) == 1  # one slice of K tiles
    assert k_slices(132, 0, 64, 4) == 1  # no tiles to cut


def test_edge_slices_take_at_least_four_k_tiles():
    assert edge_slices(132, 16, 64) == 8 and edge_slices(132, 16, 16) == 4
    assert edge_slices(132, 16, 7) == 1 and edge_slices(132, 100, 64) == 1


def test_tiles_past_whole_waves():
    assert tiles_past_whole_waves(800, 132) == 8  # six waves of 132 and 8 more
    assert tiles_past_whole_waves(792, 132) == 0  # whole waves
    assert tiles_past_whole_waves(100, 132) == 0 and tiles_past_whole_waves(132, 132) == 0  # one wave or less


def test_tail_slices():
    assert tail_slices(800, 132, 64) == 8  # 5120x5120x4096 in 128x256 tiles of BLOCK_K 64 on 132 SMs
    assert tail_slices(800, 132, 16) == 2  # K limits: at least 8 K tiles a slice
    assert tail_slices(800, 132, 15) == 1
    assert tail_slices(792, 132, 64) == 1  # nothing past whole waves
    assert tail_slices(132 * 4 + 112, 132, 64) == 1  # 112 tiles past four waves: fewer than two slices each

