"""tune_gemm.core.config.Config: printable name, parsing it back, validation, building from a results entry."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tune_gemm.core.config import (
    AMD_KNOBS,
    CLUSTER_SIZES,
    KERNEL_PREFIX,
    Config,
    ConfigNameError,
    FusedReduce,
    NarrowEdge,
    StreamK,
    check_field,
    kernel_switches,
    minimum_value,
)
from tune_gemm.generate.naming import kernel_name

FIELDS = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "SPLIT_K", "num_warps", "num_stages",
          "waves_per_eu", "matrix_instr_nonkdim", "kpack", "PERSISTENT_TMA", "WARP_SPECIALIZE", "EPILOGUE_SUBTILE",
          "STREAM_K", "schedule_hint", "num_ctas", "STATIC_SHAPE", "SWAP_AB",
          "ALIGN_ROWS", "NARROW_EDGE", "FUSED_REDUCE", "WARP_GROUPS")

positive = st.integers(min_value=1, max_value=2**20)
configs = st.builds(Config, positive, positive, positive, positive, positive, positive, positive,
                    num_ctas=st.sampled_from(CLUSTER_SIZES))


# --- printing -------------------------------------------------------------------------------------------------------


def test_str_uses_rocm_tokens_in_field_order():
    assert str(Config(64, 128, 32, 8, 2, 4, 3)) == "BM64_BN128_BK32_GM8_SK2_nW4_nS3"


def test_str_of_defaults():
    assert str(Config(16, 16, 16)) == "BM16_BN16_BK16_GM1_SK1_nW4_nS2"


def test_kernel_name_has_prefix():
    assert kernel_name(Config(32, 64, 16)) == "matmul_kernel_BM32_BN64_BK16_GM1_SK1_nW4_nS2"
    assert KERNEL_PREFIX == "matmul_kernel_"


def test_field_names_and_as_dict():
    assert Config.field_names() == FIELDS
    assert Config(64, 32, 16, 4, 1, 8, 5).as_dict() == {
        "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 16, "GROUP_SIZE_M": 4, "SPLIT_K": 1,
        "num_warps": 8, "num_stages": 5,
    }


# --- round trip -----------------------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None, database=None)
@given(configs)
def test_parse_str_round_trip(config):
    assert Config.parse(str(config)) == config


@settings(max_examples=150, deadline=None, database=None)
@given(configs)
def test_parse_kernel_name_round_trip(config):
    assert Config.parse(kernel_name(config)) == config


@settings(max_examples=150, deadline=None, database=None)
@given(configs, positive, positive, positive)
def test_parse_rocm_size_prefix_round_trip(config, M, N, K):
    assert Config.parse(f"M{M}_N{N}_K{K}_{config}") == config
    assert Config.parse(f"{KERNEL_PREFIX}M{M}_N{N}_K{K}_{config}") == config


@pytest.mark.parametrize("config", [
    Config(16, 16, 16, 1, 1, 1, 1),
    Config(256, 256, 256, 32, 16, 8, 5),
    Config(128, 64, 32, 8, 4, 4, 3),
    Config(32, 256, 64, 16, 1, 2, 4),
    Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, WARP_SPECIALIZE=1, EPILOGUE_SUBTILE=1, STREAM_K=1),
])
def test_round_trip_examples(config):
    text = str(config)
    assert Config.parse(text) == config
    assert str(Config.parse(text)) == text


def test_hopper_knobs_print_only_when_on():
    assert str(Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, STREAM_K=1)) == "BM128_BN256_BK64_GM8_SK1_nW8_nS3_TMA1_STK1"
    assert str(Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1)) == "BM128_BN256_BK64_GM8_SK1_nW8_nS3_TMA1"


# the host-side knobs print after the kernel knobs, SWAP_AB, ALIGN_ROWS, NARROW_EDGE, and read back; so does STREAM_K's
# split tail, a kernel knob's value that the launch acts on
@pytest.mark.parametrize("knob, knobs, name", [
    ("SWAP_AB", {"SWAP_AB": 1}, "BM128_BN256_BK64_GM16_SK1_nW8_nS4_TMA1_ES1_SWAP1"),
    ("ALIGN_ROWS", {"ALIGN_ROWS": 1}, "BM128_BN256_BK64_GM16_SK1_nW8_nS4_TMA1_ES1_AR1"),
    ("ALIGN_ROWS", {"SWAP_AB": 1, "ALIGN_ROWS": 1}, "BM128_BN256_BK64_GM16_SK1_nW8_nS4_TMA1_ES1_SWAP1_AR1"),
    ("NARROW_EDGE", {"NARROW_EDGE": 1}, "BM128_BN256_BK64_GM16_SK1_nW8_nS4_TMA1_ES1_NE1"),
    ("NARROW_EDGE", {"SWAP_AB": 1, "ALIGN_ROWS": 1, "NARROW_EDGE": 1},
     "BM128_BN256_BK64_GM16_SK1_nW8_nS4_TMA1_ES1_SWAP1_AR1_NE1"),
    ("NARROW_EDGE", {"NARROW_EDGE": NarrowEdge.FUSED}, "BM128_BN256_BK64_GM16_SK1_nW8_nS4_TMA1_ES1_NE2"),
    ("NARROW_EDGE", {"NARROW_EDGE": NarrowEdge.SPLIT}, "BM128_BN256_BK64_GM16_SK1_nW8_nS4_TMA1_ES1_NE3"),
    ("STREAM_K", {"STREAM_K": StreamK.SPLIT_TAIL}, "BM128_BN256_BK64_GM16_SK1_nW8_nS4_TMA1_ES1_STK2"),
    ("STREAM_K", {"STREAM_K": StreamK.SPLIT_TAIL, "SWAP_AB": 1},
     "BM128_BN256_BK64_GM16_SK1_nW8_nS4_TMA1_ES1_STK2_SWAP1"),
])
def test_host_side_knobs_print_after_the_kernel_knobs_and_read_back(knob, knobs, name):
    config = Config(128, 256, 64, 16, 1, 8, 4, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, **knobs)
    assert str(config) == name
    assert Config.parse(str(config)) == config
    assert config.as_dict()[knob] == knobs[knob] and Config.from_mapping(config.as_dict()) == config
    assert knob not in replace(config, **{knob: 0}).as_dict()
    too_large = {"NARROW_EDGE": NarrowEdge.SPLIT + 1, "STREAM_K": StreamK.SPLIT_TAIL + 1}.get(knob, 2)
    with pytest.raises(ValueError, match=f"{knob} must be 0"):
        Config(128, 256, 64, **{knob: too_large})


def test_the_kernel_switches_are_on_for_stream_k_and_off_for_a_split_tail():
    # the kernel binds STREAM_K for stream-K; a split tail is the launch's TAIL_SPLIT
    tma = Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, WARP_SPECIALIZE=1)
    assert kernel_switches(tma) == {"WARP_SPECIALIZE": True, "EPILOGUE_SUBTILE": False, "STREAM_K": False}
    assert kernel_switches(replace(tma, STREAM_K=1))["STREAM_K"] is True
    assert kernel_switches(replace(tma, STREAM_K=StreamK.SPLIT_TAIL))["STREAM_K"] is False


def test_num_ctas_prints_after_num_stages_only_when_not_1():
    clustered = Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, num_ctas=2)
    assert str(clustered) == "BM128_BN256_BK64_GM8_SK1_nW8_nS3_nC2_TMA1"
    assert str(replace(clustered, num_ctas=1)) == "BM128_BN256_BK64_GM8_SK1_nW8_nS3_TMA1"  # names as before
    assert Config.parse("BM128_BN256_BK64_GM8_SK1_nW8_nS3_nC2_TMA1") == clustered
    assert Config.parse("BM128_BN256_BK64_GM8_SK1_nW8_nS3_TMA1").num_ctas == 1
    assert Config.parse(f"{KERNEL_PREFIX}M64_N64_K64_BM64_BN64_BK64_nC8") == Config(64, 64, 64, num_ctas=8)


def test_num_ctas_in_results_entries_and_launch_options_only_when_not_1():
    assert "num_ctas" not in Config(64, 64, 64).as_dict() and Config(64, 64, 64).launch_options == {}
    clustered = Config(64, 64, 64, num_ctas=4)
    assert clustered.as_dict()["num_ctas"] == 4 and Config.from_mapping(clustered.as_dict()) == clustered
    assert clustered.launch_options == {"num_ctas": 4}
    amd = Config(64, 64, 64, waves_per_eu=0, kpack=2)
    assert amd.launch_options == amd.amd_knobs == {"waves_per_eu": 0, "kpack": 2}
    assert Config(64, 64, 64, kpack=2, num_ctas=2).launch_options == {"kpack": 2, "num_ctas": 2}


def test_static_shape_prints_as_ss_only_when_on_and_reads_back():
    static = Config(16, 16, 16, 1, 1, 2, 2, STATIC_SHAPE=1)
    assert str(static) == "BM16_BN16_BK16_GM1_SK1_nW2_nS2_SS1"
    assert str(replace(static, STATIC_SHAPE=0)) == "BM16_BN16_BK16_GM1_SK1_nW2_nS2"  # names as before
    assert Config.parse("BM16_BN16_BK16_GM1_SK1_nW2_nS2_SS1") == static
    assert Config.parse(f"{KERNEL_PREFIX}M16_N16_K16_BM16_BN16_BK16_nS1_SS1") == Config(16, 16, 16, num_stages=1,
                                                                                       STATIC_SHAPE=1)
    assert static.as_dict()["STATIC_SHAPE"] == 1 and Config.from_mapping(static.as_dict()) == static
    assert "STATIC_SHAPE" not in Config(16, 16, 16).as_dict()
    assert static.launch_options == {}  # a kernel signature, not a launch option
    with pytest.raises(ValueError, match="STATIC_SHAPE must be 0"):
        Config(16, 16, 16, STATIC_SHAPE=2)


def test_fused_reduce_prints_as_fr_after_static_shape_and_reads_back():
    fused = Config(16, 64, 256, 1, 4, 2, 4, STATIC_SHAPE=1, FUSED_REDUCE=1)
    assert str(fused) == "BM16_BN64_BK256_GM1_SK4_nW2_nS4_SS1_FR1"
    assert Config.parse(str(fused)) == fused and Config.from_mapping(fused.as_dict()) == fused
    assert "FUSED_REDUCE" not in replace(fused, FUSED_REDUCE=0).as_dict()
    with pytest.raises(ValueError, match="FUSED_REDUCE must be 0 .* or 2 .atomic adds"):
        Config(16, 16, 16, FUSED_REDUCE=3)
    atomic = replace(fused, FUSED_REDUCE=FusedReduce.ATOMIC)
    assert str(atomic) == "BM16_BN64_BK256_GM1_SK4_nW2_nS4_SS1_FR2" and Config.parse(str(atomic)) == atomic
    assert Config.from_mapping(atomic.as_dict()) == atomic and not atomic.reduction_kernel
    assert replace(fused, FUSED_REDUCE=0).reduction_kernel and not fused.reduction_kernel
    assert not Config(16, 64, 256).reduction_kernel  # no split, nothing to reduce


def test_a_tma_split_needs_fused_reduce_and_prints_as_its_plain_twin_does():
    split = Config(128, 128, 64, 8, 2, 8, 4, PERSISTENT_TMA=1, FUSED_REDUCE=1)
    assert str(split) == "BM128_BN128_BK64_GM8_SK2_nW8_nS4_TMA1_FR1" and Config.parse(str(split)) == split
    assert Config.from_mapping(split.as_dict()) == split
    with pytest.raises(ValueError, match="PERSISTENT_TMA with SPLIT_K > 1 needs FUSED_REDUCE"):
        replace(split, FUSED_REDUCE=0)  # the TMA family has no reduction kernel
    with pytest.raises(ConfigNameError, match="needs FUSED_REDUCE"):
        Config.parse("BM128_BN128_BK64_GM8_SK2_nW8_nS4_TMA1")
    assert replace(split, PERSISTENT_TMA=0, FUSED_REDUCE=0).reduction_kernel  # the plain family has one


def test_a_family_variant_equals_the_same_config_built_and_checked_in_full():
    tile = Config(128, 256, 64, 8, 1, 8, 3, STATIC_SHAPE=0)
    family = {"PERSISTENT_TMA": 1, "WARP_SPECIALIZE": 0, "EPILOGUE_SUBTILE": 1, "STREAM_K": 0, "SWAP_AB": 0,
              "ALIGN_ROWS": 1, "NARROW_EDGE": 2}
    variant = tile.with_family(family)
    assert variant == replace(tile, **family) and hash(variant) == hash(replace(tile, **family))
    assert str(variant) == "BM128_BN256_BK64_GM8_SK1_nW8_nS3_TMA1_ES1_AR1_NE2" and tile.PERSISTENT_TMA == 0


def test_a_tile_config_from_checked_fields_equals_one_built_and_checked_in_full():
    fields = {"BLOCK_SIZE_M": 192, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 4, "num_warps": 8,
              "STATIC_SHAPE": 1, "FUSED_REDUCE": FusedReduce.ATOMIC}
    config = Config.from_checked(fields)
    assert config == Config(**fields) and hash(config) == hash(Config(**fields))
    assert str(config) == "BM192_BN64_BK32_GM4_SK1_nW8_nS2_SS1_FR2"


@pytest.mark.parametrize("field, bad", [("BLOCK_SIZE_M", 0), ("num_stages", -1), ("STREAM_K", 3), ("num_ctas", 3),
                                        ("GROUP_SIZE_M", True), ("schedule_hint", "Bad Hint")])
def test_check_field_refuses_what_the_constructor_refuses(field, bad):
    with pytest.raises(ValueError, match=field if field != "schedule_hint" else "hint"):
        check_field(field, bad)
    with pytest.raises(ValueError):
        Config(**{"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, field: bad})


@pytest.mark.parametrize("bad", [3, 6, 16, 0])
def test_num_ctas_is_a_cluster_size(bad):
    with pytest.raises(ValueError, match="num_ctas"):
        Config(64, 64, 64, num_ctas=bad)
    with pytest.raises(ConfigNameError, match="num_ctas"):
        Config.parse(f"BM64_BN64_BK64_nC{bad}")


def test_parse_rocm_style_name():
    config = Config.parse("M16_N16_K16_BM32_BN64_BK16_GM4_SK2_nW8_nS3")
    assert config == Config(32, 64, 16, 4, 2, 8, 3)


def test_parse_strips_whitespace():
    assert Config.parse("  BM16_BN32_BK64_GM1_SK1_nW4_nS2\n") == Config(16, 32, 64)


def test_parse_fills_defaults_for_missing_optional_tokens():
    assert Config.parse("BM64_BN32_BK16") == Config(64, 32, 16, 1, 1, 4, 2)


def test_parse_accepts_tokens_in_any_order():
    assert Config.parse("nS3_BK32_BN64_BM128_SK1_GM8_nW4") == Config(128, 64, 32, 8, 1, 4, 3)


# --- rejection ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [
    "",
    "garbage",
    "matmul_kernel_",
    "BM16_BN16",  # no BK
    "BN16_BK16",  # no BM
    "BM16_BN16_BK16_XY4",  # unknown token
    "BM16_BN16_BK16_nW",  # token without number
    "BM16__BN16_BK16",  # empty token
    "BM-16_BN16_BK16",  # negative
    "BM0_BN16_BK16",  # zero
    "BM16_BN16_BK16_nW0",
    "BM16_BN16_BK16_GM1.5",
    "16_BN16_BK16",  # number without token
    "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",
    "torch.matmul",
])
def test_parse_rejects_garbage(name):
    with pytest.raises(ConfigNameError):
        Config.parse(name)


def test_config_name_error_is_a_value_error():
    assert issubclass(ConfigNameError, ValueError)


def test_parse_error_names_the_bad_token():
    with pytest.raises(ConfigNameError, match="XY4"):
        Config.parse("BM16_BN16_BK16_XY4")


def test_parse_error_names_missing_tokens():
    with pytest.raises(ConfigNameError, match="missing BK"):
        Config.parse("BM16_BN16")


@pytest.mark.parametrize("field,bad", [(f, b) for f in FIELDS for b in (0, -1, -64)
                                       if not (b == 0 and f != "schedule_hint" and minimum_value(f) == 0)])
def test_constructor_rejects_non_positive(field, bad):
    values = dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)
    values[field] = bad
    with pytest.raises(ValueError, match=field):
        Config(**values)


@pytest.mark.parametrize("field,bad", [(f, b) for f in FIELDS for b in (True, False, 16.0, "16", None)
                                       if not (f in AMD_KNOBS and b is None)  # None: AMD knob not set
                                       and (f, b) != ("schedule_hint", "16")])  # a hint is a string
def test_constructor_rejects_bool_and_non_int(field, bad):
    values = dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)
    values[field] = bad
    with pytest.raises(ValueError, match=field):
        Config(**values)


# --- from_mapping ---------------------------------------------------------------------------------------------------


def test_from_mapping_ignores_extra_keys():
    entry = {
        "M": 4096, "N": 4096, "K": 4096, "rowMajorA": "T", "rowMajorB": "N",
        "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "SPLIT_K": 1,
        "num_warps": 8, "num_stages": 3, "dtype_a": "fp16", "gpu": "NVIDIA H100", "time_us": 123.4,
        "tflops": 1000.0, "profiler": "events", "waves_per_eu": 0, "kpack": 2,
    }
    assert Config.from_mapping(entry) == Config(128, 256, 64, 8, 1, 8, 3, waves_per_eu=0, kpack=2)


amd_configs = st.builds(Config, positive, positive, positive, positive, positive, positive, positive,
                        st.one_of(st.none(), st.integers(0, 8)), st.one_of(st.none(), st.sampled_from([16, 32])),
                        st.one_of(st.none(), st.sampled_from([1, 2])))


@given(amd_configs)
def test_amd_knobs_round_trip_and_print_only_when_set(config):
    assert Config.parse(str(config)) == config
    assert ("_EU" in str(config)) == (config.waves_per_eu is not None)
    assert set(config.as_dict()) - set(FIELDS[:7]) == set(config.amd_knobs)
    assert config.without_amd_knobs().amd_knobs == {}


def test_amd_name_as_rocm_prints_it():
    config = Config.parse("BM256_BN256_BK64_GM4_SK1_nW8_nS2_EU0_mfma16_kP2")
    assert (config.waves_per_eu, config.matrix_instr_nonkdim, config.kpack) == (0, 16, 2)
    assert str(config) == "BM256_BN256_BK64_GM4_SK1_nW8_nS2_EU0_mfma16_kP2"


def test_from_mapping_uses_defaults_for_absent_optional_fields():
    assert Config.from_mapping({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 64}) == Config(32, 16, 64)


def test_from_mapping_validates_values():
    with pytest.raises(ValueError, match="BLOCK_SIZE_K"):
        Config.from_mapping({"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 0})


def test_from_mapping_of_as_dict_round_trip():
    config = Config(64, 16, 128, 16, 8, 2, 5)
    assert Config.from_mapping(config.as_dict()) == config


def test_configs_order_and_hash():
    a, b = Config(16, 16, 16), Config(32, 16, 16)
    assert a < b
    assert len({a, Config(16, 16, 16), b}) == 2


def test_warp_group_configs_print_and_parse_back_and_need_the_tma_family():
    config = Config(192, 192, 32, 8, 1, 12, 5, PERSISTENT_TMA=1, WARP_GROUPS=1)
    assert str(config) == "BM192_BN192_BK32_GM8_SK1_nW12_nS5_TMA1_WG1"
    assert Config.parse(str(config)) == config
    assert config.hopper_knobs == {"PERSISTENT_TMA": 1, "WARP_GROUPS": 1}
    with pytest.raises(ValueError, match="WARP_GROUPS needs PERSISTENT_TMA"):
        Config(192, 192, 32, 8, 1, 12, 5, WARP_GROUPS=1)
    with pytest.raises(ValueError, match="WARP_GROUPS must be 0"):
        Config(192, 192, 32, 8, 1, 12, 5, PERSISTENT_TMA=1, WARP_GROUPS=2)
