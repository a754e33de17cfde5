"""The modes of tune_gemm.core.config (StreamK, NarrowEdge, FusedReduce) and Config.family: a config holds a mode's
member, and names, results files and space files see the same numbers as before."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml
from helpers import problem

from tune_gemm.core.config import (
    ATOMIC_REDUCE,
    FUSED_EDGE,
    MODES,
    SPLIT_EDGE,
    SPLIT_TAIL,
    Config,
    Family,
    FusedReduce,
    NarrowEdge,
    StreamK,
    check_field,
    kernel_switches,
    largest_switch_value,
)
from tune_gemm.files.results import ResultEntry, dump_entries, read_entries, record
from tune_gemm.space.ranges import FULL_SPACE, RangeSpace, space_from_mapping

TMA = Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1)
# every mode's every value that is not off, as a config that holds it
MODE_CONFIGS = [replace(TMA, STREAM_K=value) for value in (1, 2)] + [
    replace(TMA, NARROW_EDGE=value) for value in (1, 2, 3)] + [
    replace(TMA, SPLIT_K=4, FUSED_REDUCE=value) for value in (1, 2)] + [
    Config(64, 64, 64, 1, 4, FUSED_REDUCE=value) for value in (1, 2)]


def test_the_modes_name_what_each_value_does():
    assert [int(value) for value in StreamK] == [0, 1, 2] and StreamK.SPLIT_TAIL == 2 == SPLIT_TAIL
    assert [int(value) for value in NarrowEdge] == [0, 1, 2, 3]
    assert NarrowEdge.FUSED == 2 == FUSED_EDGE and NarrowEdge.SPLIT == 3 == SPLIT_EDGE
    assert [int(value) for value in FusedReduce] == [0, 1, 2] and FusedReduce.ATOMIC == 2 == ATOMIC_REDUCE
    assert MODES == {"STREAM_K": StreamK, "NARROW_EDGE": NarrowEdge, "FUSED_REDUCE": FusedReduce}
    assert [largest_switch_value(field) for field in MODES] == [2, 3, 2] and largest_switch_value("SWAP_AB") == 1
    assert str(NarrowEdge.SPLIT) == f"{NarrowEdge.SPLIT}" == "3"  # prints as its number


def test_a_config_holds_the_modes_members():
    assert Config(16, 16, 16).STREAM_K is StreamK.OFF
    assert Config(16, 16, 16).NARROW_EDGE is NarrowEdge.OFF and Config(16, 16, 16).FUSED_REDUCE is FusedReduce.OFF
    split_tail = replace(TMA, STREAM_K=2)
    assert split_tail.STREAM_K is StreamK.SPLIT_TAIL and type(split_tail.STREAM_K) is StreamK
    assert replace(TMA, NARROW_EDGE=3).NARROW_EDGE is NarrowEdge.SPLIT
    assert replace(TMA, SPLIT_K=2, FUSED_REDUCE=2).FUSED_REDUCE is FusedReduce.ATOMIC
    assert replace(TMA, STREAM_K=StreamK.STREAM_K).STREAM_K is StreamK.STREAM_K
    # equal and hashed alike to the config that holds the plain int (the pruner builds some without checking)
    assert Config.from_checked({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 16, "FUSED_REDUCE": 2,
                                "SPLIT_K": 2}) == Config(16, 16, 16, 1, 2, FUSED_REDUCE=FusedReduce.ATOMIC)
    assert hash(split_tail) == hash(TMA.with_family({"STREAM_K": 2}))


def test_a_mode_takes_its_own_members_and_numbers_only():
    check_field("STREAM_K", StreamK.SPLIT_TAIL)
    check_field("STREAM_K", 2)
    with pytest.raises(ValueError, match="STREAM_K must be an integer"):
        check_field("STREAM_K", NarrowEdge.FUSED)
    with pytest.raises(ValueError, match="NARROW_EDGE must be an integer"):
        check_field("NARROW_EDGE", True)
    with pytest.raises(ValueError, match=r"STREAM_K must be 0 \(off\), 1 \(stream-K\) or 2 \(the tiles past"):
        Config(16, 16, 16, PERSISTENT_TMA=1, STREAM_K=3)
    with pytest.raises(ValueError, match=r"NARROW_EDGE must be 0 \(off\), 1 .* 2 .* or 3 \(apart"):
        Config(16, 16, 16, PERSISTENT_TMA=1, NARROW_EDGE=4)
    with pytest.raises(ValueError, match=r"FUSED_REDUCE must be 0 \(a reduction kernel\), 1 .* or 2 \(atomic"):
        Config(16, 16, 16, 1, 2, FUSED_REDUCE=3)


def test_the_kernel_switch_is_stream_k_alone():
    assert kernel_switches(replace(TMA, STREAM_K=StreamK.STREAM_K))["STREAM_K"] is True
    assert kernel_switches(replace(TMA, STREAM_K=StreamK.SPLIT_TAIL))["STREAM_K"] is False


@pytest.mark.parametrize("config", MODE_CONFIGS, ids=str)
def test_names_print_and_read_back_the_numbers(config):
    name = str(config)
    field = next(field for field in MODES if getattr(config, field))
    token = {"STREAM_K": "STK", "NARROW_EDGE": "NE", "FUSED_REDUCE": "FR"}[field]
    assert f"_{token}{int(getattr(config, field))}" in name
    parsed = Config.parse(name)
    assert parsed == config and getattr(parsed, field) is getattr(config, field)


@pytest.mark.parametrize("config", MODE_CONFIGS, ids=str)
def test_a_results_file_written_and_read_back_is_unchanged(tmp_path, config):
    entry = ResultEntry(problem(4096, 4096, 4096), config, 140.123, 981.0, "NVIDIA H100 80GB HBM3", "events", 150.5)
    mapping = entry.to_mapping()
    assert all(type(value) is int for field, value in mapping.items() if field in MODES)
    path = tmp_path / "results.yaml"
    record(path, entry)
    text = path.read_text()
    assert text == dump_entries([mapping])
    field = next(field for field in MODES if getattr(config, field))
    assert f" {field}: {int(getattr(config, field))}," in text and "!!" not in text
    (read,) = read_entries(path)
    assert read == mapping
    assert Config.from_mapping(read) == config
    assert getattr(Config.from_mapping(read), field) is getattr(config, field)
    record(path, entry)  # rewritten with the entry read back beside it: the same text
    assert path.read_text() == text
    assert yaml.safe_load(yaml.safe_dump(config.as_dict())) == config.as_dict()  # safe_dump takes it as it is


def test_the_range_space_builds_configs_holding_members():
    families = FULL_SPACE.families()
    assert {type(family["STREAM_K"]) for family in families} == {StreamK}
    assert {type(family["NARROW_EDGE"]) for family in families} == {NarrowEdge}
    tile_values = FULL_SPACE.tile_ranges()["FUSED_REDUCE"]
    assert tile_values == (0, 1, 2) and {type(value) for value in tile_values} == {FusedReduce}
    # a space file's plain numbers too
    space = space_from_mapping({"STREAM_K": [0, 2], "NARROW_EDGE": 3, "PERSISTENT_TMA": 1}, "test", RangeSpace())
    assert {(family["STREAM_K"], family["NARROW_EDGE"]) for family in space.families()} == {
        (StreamK.OFF, NarrowEdge.SPLIT), (StreamK.SPLIT_TAIL, NarrowEdge.SPLIT)}
    assert all(type(config.STREAM_K) is StreamK for config in space.configs()[:50])


def test_the_family_of_a_config():
    assert Config(128, 128, 64).family is Family.PLAIN
    assert TMA.family is Family.PERSISTENT_TMA and replace(TMA, STREAM_K=2).family is Family.PERSISTENT_TMA
    assert Config(128, 192, 64, 1, 1, 8, 3, PERSISTENT_TMA=1, WARP_GROUPS=1).family is Family.WARP_GROUP
