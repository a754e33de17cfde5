"""tune_gemm.space.ranges: the full range space and space files (space_from_mapping)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml
from helpers import SMALL_SPACE_YAML

from tune_gemm.core.config import (
    Config,
    FusedReduce,
    NarrowEdge,
    StreamK,
)
from tune_gemm.space.ranges import (
    AMD_SPACE,
    COMPOUND_SIDES,
    COMPOUND_WIDTHS,
    FULL_SPACE,
    SMALL_ROW_SPACE,
    RangeSpace,
    deterministic,
    space_from_mapping,
)


def test_full_space_ranges_are_the_documented_ones():
    assert FULL_SPACE.block_m == (16, 32, 64, 128, 192, 256)  # 192 = 128 + 64: the TMA family's compound tiles
    # 96 = 64 + 32, 160 = 128 + 32, 320 = 256 + 64 and 384 = 256 + 128: the warp-group kernel's
    assert FULL_SPACE.block_n == (16, 32, 64, 96, 128, 160, 192, 256, 320, 384)
    assert AMD_SPACE.block_m == AMD_SPACE.block_n == (16, 32, 64, 128, 256)
    assert FULL_SPACE.block_k == (16, 32, 64, 128, 256)
    assert FULL_SPACE.group_m == (1, 4, 8, 16, 32)
    assert FULL_SPACE.split_k == (1, 2, 4, 8, 16)
    assert FULL_SPACE.num_warps == (1, 2, 4, 8, 12, 16)  # the warp-group kernel's three and four consumer warp groups
    assert AMD_SPACE.num_warps == (1, 2, 4, 8)
    assert FULL_SPACE.num_stages == (1, 2, 3, 4, 5)
    assert FULL_SPACE == RangeSpace(block_m=COMPOUND_SIDES, block_n=COMPOUND_WIDTHS, num_warps=(1, 2, 4, 8, 12, 16),
                                    warp_groups=(0, 1), persistent_tma=(0, 1),
                                    warp_specialize=(0, 1), epilogue_subtile=(0, 1), static_shape=(0, 1),
                                    fused_reduce=(0, 1, FusedReduce.ATOMIC), swap_ab=(0, 1), align_rows=(0, 1),
                                    narrow_edge=(0, 1, NarrowEdge.FUSED, NarrowEdge.SPLIT),
                                    stream_k=(0, StreamK.SPLIT_TAIL), also=SMALL_ROW_SPACE)
    assert AMD_SPACE.swap_ab == AMD_SPACE.align_rows == AMD_SPACE.narrow_edge == AMD_SPACE.warp_groups == (0,)
    assert AMD_SPACE.static_shape == AMD_SPACE.fused_reduce == (0,)  # not measured on AMD yet
    assert 1 not in FULL_SPACE.stream_k  # stream-K is opt-in: it lost on every shape measured
    assert FULL_SPACE.num_ctas == AMD_SPACE.num_ctas == (1,)  # opt-in: slower on every config measured


@pytest.fixture(scope="module")
def default_tiles() -> dict[str, list[Config]]:
    """Each default space's tile configs (FULL_SPACE's 2 million take seconds to build): built once for the tests
    that look at every one of them or at the first ones."""
    return {"nvidia": FULL_SPACE.tile_configs(), "amd": AMD_SPACE.tile_configs()}


def test_default_spaces_hold_no_cluster_launch(default_tiles):
    assert all(c.num_ctas == 1 for tiles in default_tiles.values() for c in tiles)


def test_amd_space_carries_the_rocm_knobs_and_the_hint_none_and_nvidia_none(default_tiles):
    assert all(c.amd_knobs for c in default_tiles["amd"][:100])
    assert not any(c.amd_knobs for c in default_tiles["nvidia"][:100])
    assert {c.schedule_hint for c in default_tiles["amd"][:50]} == {"none"}
    assert {c.schedule_hint for c in default_tiles["nvidia"][:50]} == {None}


def test_full_space_bounds():
    assert (min(FULL_SPACE.block_m), max(FULL_SPACE.block_m)) == (16, 256)
    assert (min(FULL_SPACE.group_m), max(FULL_SPACE.group_m)) == (1, 32)
    assert (min(FULL_SPACE.split_k), max(FULL_SPACE.split_k)) == (1, 16)
    assert (min(FULL_SPACE.num_warps), max(FULL_SPACE.num_warps)) == (1, 16)
    assert (min(FULL_SPACE.num_stages), max(FULL_SPACE.num_stages)) == (1, 5)


def test_full_space_len_matches_configs(default_tiles):
    all_tiles = default_tiles["nvidia"]
    tiles, short = all_tiles[:1_350_000], all_tiles[1_350_000:]
    # 225,000 tile shapes, each with and without STATIC_SHAPE, with FUSED_REDUCE 0, 1 and FusedReduce.ATOMIC
    assert len(tiles) == len(set(tiles)) == 1_350_000
    assert tiles[0] == Config(16, 16, 16, 1, 1, 1, 1)
    assert tiles[-1] == Config(256, 384, 256, 32, 16, 16, 5, STATIC_SHAPE=1, FUSED_REDUCE=FusedReduce.ATOMIC)
    # then those shorter than a matrix instruction: 108,000 tile shapes, as often each
    assert len(short) == len(set(short)) == 648_000 and set(short).isdisjoint(tiles)
    assert short[0] == Config(1, 1, 16, 1, 1, 1, 1)
    assert short[-1] == Config(8, 128, 4096, 32, 16, 32, 3, STATIC_SHAPE=1, FUSED_REDUCE=FusedReduce.ATOMIC)
    # plain, TMA with each subset of WS, ES, SWAP_AB and ALIGN_ROWS, each with STREAM_K 0 and SPLIT_TAIL and with
    # NARROW_EDGE 0, APART, FUSED and SPLIT (the other knobs exist only with TMA), and TMA with WARP_GROUPS alone
    families = [tuple(f.values()) for f in FULL_SPACE.families()]
    assert families[0] == (0, 0, 0, 0, 0, 0, 0, 0) and len(families) == len(set(families)) == 130
    assert sorted(families[1:]) == sorted([(1, ws, es, tail, swap, align, edge, 0) for ws in (0, 1) for es in (0, 1)
                                           for tail in (0, StreamK.SPLIT_TAIL) for swap in (0, 1) for align in (0, 1)
                                           for edge in (0, 1, NarrowEdge.FUSED, NarrowEdge.SPLIT)]
                                          + [(1, 0, 0, 0, 0, 0, 0, 1)])
    assert len(FULL_SPACE) == 130 * 1_350_000 + 648_000
    # a space that asks for stream-K and no swap: plain, and TMA with each subset of WS, ES and STK
    with_stream_k = replace(FULL_SPACE, stream_k=(0, 1), swap_ab=(0,), align_rows=(0,), narrow_edge=(0,),
                            warp_groups=(0,))
    assert [tuple(f.values())[:4] for f in with_stream_k.families()] == [
        (0, 0, 0, 0), (1, 0, 0, 0), (1, 0, 0, 1), (1, 0, 1, 0), (1, 0, 1, 1), (1, 1, 0, 0), (1, 1, 0, 1), (1, 1, 1, 0),
        (1, 1, 1, 1)]


def test_configs_expand_each_tile_by_family():
    space = RangeSpace(block_m=(64, 128), block_n=(256,), block_k=(256,), group_m=(32,), split_k=(2,),
                       num_warps=(8,), num_stages=(5,), persistent_tma=(0, 1), epilogue_subtile=(0, 1),
                       fused_reduce=(1,))
    configs = space.configs()
    assert len(configs) == len(space) == 2 * 3
    assert Config(128, 256, 256, 32, 2, 8, 5, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, FUSED_REDUCE=1) in configs
    assert not any(c.EPILOGUE_SUBTILE and not c.PERSISTENT_TMA for c in configs)


@pytest.mark.parametrize("space", [
    RangeSpace(block_m=(64,), block_n=(64,), block_k=(32,), group_m=(1,), split_k=(1,), num_warps=(4,),
               num_stages=(2,)),
    RangeSpace(block_m=(16, 32), block_n=(16, 32, 64), block_k=(16,), group_m=(1, 8), split_k=(1,),
               num_warps=(1, 2, 4), num_stages=(1, 3)),
    RangeSpace(block_m=(128,), num_stages=(4,)),
    RangeSpace(block_m=()),
])
def test_len_equals_number_of_configs(space):
    configs = space.configs()
    assert len(space) == len(configs)
    for config in configs:
        assert config.BLOCK_SIZE_M in space.block_m and config.BLOCK_SIZE_N in space.block_n
        assert config.BLOCK_SIZE_K in space.block_k and config.GROUP_SIZE_M in space.group_m
        assert config.SPLIT_K in space.split_k and config.num_warps in space.num_warps
        assert config.num_stages in space.num_stages


def test_small_space_fixture(small_space):
    assert len(small_space) == 2 ** 6 == len(small_space.configs())


# --- space_from_mapping ---------------------------------------------------------------------------------------------


def test_space_from_valid_mapping():
    space = space_from_mapping(
        {"BLOCK_SIZE_M": [128, 64, 64], "BLOCK_SIZE_N": 256, "GROUP_SIZE_M": [1, 8], "SPLIT_K": [1],
         "num_warps": [8, 4], "num_stages": [3]},
        "space file s.yaml",
    )
    assert space.block_m == (64, 128)  # sorted, duplicates removed
    assert space.block_n == (256,)  # a single int is accepted
    assert space.block_k == FULL_SPACE.block_k  # not listed: the full space's values
    assert space.group_m == (1, 8)
    assert space.split_k == (1,)
    assert space.num_warps == (4, 8)
    assert space.num_stages == (3,)
    # x 130 kernel-family variants x STATIC_SHAPE 0|1 x FUSED_REDUCE 0|1|2
    assert len(space) == 2 * 1 * 5 * 2 * 1 * 2 * 1 * 130 * 2 * 3


def test_space_from_small_space_yaml(small_space):
    assert space_from_mapping(yaml.safe_load(SMALL_SPACE_YAML), "x") == small_space


def test_mapping_without_tma_drops_its_knobs():
    space = space_from_mapping({"PERSISTENT_TMA": [0]}, "x")
    assert space.families() == [{"PERSISTENT_TMA": 0, "WARP_SPECIALIZE": 0, "EPILOGUE_SUBTILE": 0, "STREAM_K": 0,
                                 "SWAP_AB": 0, "ALIGN_ROWS": 0, "NARROW_EDGE": 0, "WARP_GROUPS": 0}]
    assert space_from_mapping({"PERSISTENT_TMA": [0], "WARP_GROUPS": [0, 1]}, "x").warp_groups == (0,)
    assert space_from_mapping({"PERSISTENT_TMA": [0], "SWAP_AB": [0, 1]}, "x").swap_ab == (0,)
    assert space_from_mapping({"PERSISTENT_TMA": [0], "ALIGN_ROWS": [0, 1]}, "x").align_rows == (0,)
    assert space_from_mapping({"ALIGN_ROWS": [0]}, "x").align_rows == (0,)
    assert space_from_mapping({"PERSISTENT_TMA": [0], "NARROW_EDGE": [0, 1]}, "x").narrow_edge == (0,)
    assert space_from_mapping({"NARROW_EDGE": [0]}, "x").narrow_edge == (0,)
    assert space_from_mapping({"SWAP_AB": [0]}, "x").swap_ab == (0,)
    assert space_from_mapping({"WARP_SPECIALIZE": 0}, "x").warp_specialize == (0,)
    assert space_from_mapping({"PERSISTENT_TMA": [0], "STREAM_K": [0, 1]}, "x").stream_k == (0,)
    assert space_from_mapping({"STREAM_K": [0, 1]}, "x").stream_k == (0, 1)  # stream-K is asked for in a space file
    assert space_from_mapping({"FUSED_REDUCE": [0]}, "x").fused_reduce == (0,)  # the plain family's: kept without TMA
    assert space_from_mapping({"PERSISTENT_TMA": [0], "FUSED_REDUCE": 1}, "x").fused_reduce == (1,)
    with pytest.raises(ValueError, match="EPILOGUE_SUBTILE values must be 0"):
        space_from_mapping({"EPILOGUE_SUBTILE": [2]}, "x")
    assert space_from_mapping({"NARROW_EDGE": [NarrowEdge.FUSED]}, "x").narrow_edge == (NarrowEdge.FUSED,)
    assert space_from_mapping({"NARROW_EDGE": [NarrowEdge.SPLIT, 0]}, "x").narrow_edge == (0, NarrowEdge.SPLIT)
    with pytest.raises(ValueError, match="NARROW_EDGE values must be 0 .*, 1 .*, 2 .* or 3 "):
        space_from_mapping({"NARROW_EDGE": [4]}, "x")
    # the atomic running sums are asked for, or left out for kernels whose bits never change
    assert space_from_mapping({"FUSED_REDUCE": [2, 0]}, "x").fused_reduce == (0, FusedReduce.ATOMIC)
    assert space_from_mapping({"FUSED_REDUCE": [0, 1]}, "x").fused_reduce == (0, 1)
    with pytest.raises(ValueError, match="FUSED_REDUCE values must be 0 .*, 1 .* or 2 .atomic adds"):
        space_from_mapping({"FUSED_REDUCE": [3]}, "x")


def test_a_space_file_asks_for_clusters():
    assert space_from_mapping({"num_ctas": [2, 1]}, "x") == replace(FULL_SPACE, num_ctas=(1, 2), also=None)
    one_tile = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "SPLIT_K": 1,
                "num_warps": 4, "num_stages": 3}  # the whole space would be 49 million configs
    space = space_from_mapping({"num_ctas": [2, 1], "PERSISTENT_TMA": [0, 1], **one_tile}, "x")
    assert space.num_ctas == (1, 2)
    assert len(space) == 2 * len(replace(space, num_ctas=(1,)))
    configs = set(space.configs())
    for num_ctas in (1, 2):  # every tile in both families, with each cluster size
        assert Config(128, 128, 64, 8, 1, 4, 3, num_ctas=num_ctas) in configs
        assert Config(128, 128, 64, 8, 1, 4, 3, PERSISTENT_TMA=1, num_ctas=num_ctas) in configs
    assert space_from_mapping({"num_ctas": 8}, "x").num_ctas == (8,)


def test_empty_mapping_is_the_full_space():
    assert space_from_mapping({}, "x") == FULL_SPACE


@pytest.mark.parametrize("mapping, field", [
    ({"BLOCK_SIZE_Q": [16]}, "BLOCK_SIZE_Q"),
    ({"block_m": [16]}, "block_m"),
    ({"waves_per_eu": [-1]}, "waves_per_eu"),
    ({"wave_per_eu": [0]}, "wave_per_eu"),
    ({"BLOCK_SIZE_M": []}, "BLOCK_SIZE_M"),
    ({"SPLIT_K": []}, "SPLIT_K"),
    ({"BLOCK_SIZE_N": ["64"]}, "BLOCK_SIZE_N"),
    ({"BLOCK_SIZE_N": "64"}, "BLOCK_SIZE_N"),
    ({"num_warps": [4.0]}, "num_warps"),
    ({"num_stages": [True]}, "num_stages"),
    ({"num_stages": True}, "num_stages"),
    ({"GROUP_SIZE_M": None}, "GROUP_SIZE_M"),
    ({"GROUP_SIZE_M": {"a": 1}}, "GROUP_SIZE_M"),
    ({"SPLIT_K": [-2]}, "SPLIT_K"),
    ({"num_warps": [4, -4]}, "num_warps"),
    ({"BLOCK_SIZE_K": [0]}, "BLOCK_SIZE_K"),
    ({"BLOCK_SIZE_M": -16}, "BLOCK_SIZE_M"),
    ({"BLOCK_SIZE_M": [40]}, "BLOCK_SIZE_M"),
    ({"BLOCK_SIZE_N": [64, 100]}, "BLOCK_SIZE_N"),
    ({"BLOCK_SIZE_K": [24]}, "BLOCK_SIZE_K"),
    ({"num_ctas": [1, 3]}, "num_ctas"),
    ({"num_ctas": 16}, "num_ctas"),
    ({"num_ctas": [0]}, "num_ctas"),
])
def test_space_from_mapping_names_the_bad_field(mapping, field):
    with pytest.raises(ValueError) as info:
        space_from_mapping(mapping, "space file my_space.yaml")
    message = str(info.value)
    assert message.startswith("space file my_space.yaml: ")
    assert field in message


def test_non_power_of_two_message_says_so():
    with pytest.raises(ValueError, match="powers of two"):
        space_from_mapping({"BLOCK_SIZE_M": [40]}, "x")  # 32 + 8: a part narrower than a dot takes


def test_tile_configs_check_each_value_of_a_space_built_by_hand():
    with pytest.raises(ValueError, match="num_warps must be an integer >= 1"):
        RangeSpace(block_m=(64,), block_n=(64,), block_k=(64,), num_warps=(4, 0)).tile_configs()


def test_block_sizes_may_be_sums_of_two_powers_of_two():
    space = space_from_mapping({"BLOCK_SIZE_M": [192, 48], "BLOCK_SIZE_N": [128, 320]}, "x")
    assert space.block_m == (48, 192) and space.block_n == (128, 320)
    with pytest.raises(ValueError, match="BLOCK_SIZE_K values must be powers of two"):
        space_from_mapping({"BLOCK_SIZE_K": [96]}, "x")


def test_non_power_of_two_allowed_outside_block_sizes():
    assert space_from_mapping({"GROUP_SIZE_M": [3, 6]}, "x").group_m == (3, 6)


@pytest.mark.parametrize("document", [None, [16, 32], "BLOCK_SIZE_M: 16", 42])
def test_space_from_mapping_rejects_non_mapping(document):
    with pytest.raises(ValueError, match=r"^where\.yaml: must be a mapping"):
        space_from_mapping(document, "where.yaml")


def test_a_deterministic_space_drops_only_the_atomic_sums():
    # split-K's running sums, the split edge tiles' and the split tail's (all added to atomically, in no set order)
    assert deterministic(FULL_SPACE) == replace(FULL_SPACE, fused_reduce=(0, 1), narrow_edge=(0, 1, NarrowEdge.FUSED),
                                                stream_k=(0,), also=replace(SMALL_ROW_SPACE, fused_reduce=(0, 1)))
    assert deterministic(AMD_SPACE) == AMD_SPACE  # never had them
    # of the 130 family variants, the 64 split tails and the 16 split edges of the others go
    tiles, short = FULL_SPACE.parts()
    assert len(deterministic(FULL_SPACE)) == len(tiles) // 3 * 2 // 130 * 50 + len(short) // 3 * 2
    # stream-K (1) sums in a set order: it stays
    assert deterministic(replace(FULL_SPACE, stream_k=(0, 1, StreamK.SPLIT_TAIL))).stream_k == (0, 1)
    with pytest.raises(ValueError, match="only atomic sums"):
        deterministic(replace(FULL_SPACE, fused_reduce=(FusedReduce.ATOMIC,)))
    with pytest.raises(ValueError, match="only split edges"):
        deterministic(replace(FULL_SPACE, narrow_edge=(NarrowEdge.SPLIT,)))
    with pytest.raises(ValueError, match="only split tails"):
        deterministic(replace(FULL_SPACE, stream_k=(StreamK.SPLIT_TAIL,)))


def test_the_full_space_is_two_products_walked_apart():
    tiles, short = FULL_SPACE.parts()
    assert short == SMALL_ROW_SPACE and tiles.also is None and tiles == FULL_SPACE.parts()[0]
    assert len(FULL_SPACE) == len(tiles) + len(short)
    assert min(tiles.block_m) == 16 and max(short.block_m) < 16  # a matrix instruction's rows, and fewer
    assert max(short.block_k) == 4096 and min(short.block_n) == 1  # a column-major B's long, few columns
    assert max(short.num_warps) == 32 > max(tiles.num_warps)  # as many threads as a reduction kernel's
    assert short.families() == [dict.fromkeys(short.families()[0], 0)]  # the plain family alone
    configs = RangeSpace(block_m=(16,), block_n=(32,), block_k=(64,), group_m=(1,), split_k=(1,), num_warps=(4,),
                         num_stages=(2,), also=RangeSpace(block_m=(1, 2), block_n=(4,), block_k=(512,), group_m=(1,),
                                                          split_k=(1,), num_warps=(4,), num_stages=(1,))).configs()
    assert [str(c) for c in configs] == ["BM16_BN32_BK64_GM1_SK1_nW4_nS2", "BM1_BN4_BK512_GM1_SK1_nW4_nS1",
                                         "BM2_BN4_BK512_GM1_SK1_nW4_nS1"]


def test_a_space_file_is_one_product_and_deterministic_spaces_keep_both():
    assert space_from_mapping({"num_stages": [2, 3]}, "sizes.yaml").also is None  # what the file lists is all
    assert space_from_mapping({"BLOCK_SIZE_M": [1, 16]}, "sizes.yaml").block_m == (1, 16)  # short tiles asked for
    assert deterministic(FULL_SPACE).also == deterministic(SMALL_ROW_SPACE)
    assert FusedReduce.ATOMIC not in deterministic(FULL_SPACE).also.fused_reduce
