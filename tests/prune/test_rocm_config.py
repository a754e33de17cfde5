"""ROCm-script settings in Config: num_stages 0, the scheduling hint, names with a size prefix, and what a
recorded config runs as off AMD (`Config.for_vendor`)."""

from __future__ import annotations

import pytest
from helpers import problem
from hypothesis import given, settings
from hypothesis import strategies as st

from tune_gemm.core.config import (
    KNOWN_SCHEDULE_HINTS,
    NUM_STAGES_FOR_AMD_ZERO,
    Config,
    ConfigNameError,
)
from tune_gemm.generate.naming import config_of_kernel, kernel_name
from tune_gemm.generate.writer import render
from tune_gemm.space.ranges import AMD_SPACE, space_from_mapping

ROCM_KNOBS = {"waves_per_eu": 0, "matrix_instr_nonkdim": 16, "kpack": 2}


# --- names the ROCm script prints -----------------------------------------------------------------------------------


def test_one_config_example_name_parses_with_its_size():
    # the example of the ROCm script's one_config.py README: size, tile, num_stages 0 and the AMD knobs
    config, size = Config.parse_sized("M16_N8_K128_BM64_BN64_BK64_GM1_SK2_nW2_nS0_EU0_kP2_mfma16")
    assert size == (16, 8, 128)
    assert config == Config(64, 64, 64, 1, 2, 2, 0, **ROCM_KNOBS)


@pytest.mark.parametrize("token,hint", [("NONE", "none"), ("DEFAULT", "default"), ("LOCAL_PREFETCH", "local-prefetch"),
                                        ("CK_V3", "ck_v3"), ("LLVM_IGLP_0", "llvm-iglp-0"), ("IGLP1", "iglp1"),
                                        ("MY_VARIANT", "my_variant")])
def test_sched_token_reads_back_the_hint_as_spelled_in_files(token, hint):
    # v3.4+ names end in _sched<HINT upper-cased, '-' as '_'>
    config = Config.parse(f"BM256_BN256_BK64_GM4_SK1_nW8_nS2_EU0_kP2_mfma16_sched{token}")
    assert config.schedule_hint == hint and config.kpack == 2


def test_names_without_a_full_size_have_none():
    assert Config.parse_sized("BM16_BN16_BK16")[1] is None
    assert Config.parse_sized("M16_N16_BM16_BN16_BK16")[1] is None  # no K: not a size


@pytest.mark.parametrize("name", [
    "BM16_BN16_BK16_sched",  # no hint
    "BM16_BN16_BK16_schedNONE_nW4",  # the hint runs to the end of the name: nW4 would be part of it
    "BM16_schedNONE",  # no BN, BK
    "BM16_BN16_BK16_sched-x",  # not a token
    "BM16_BN16_BK16_schednone",  # hints print in upper case
    "BM16_BN16_BK16_nW0",
])
def test_bad_names_are_refused(name):
    with pytest.raises(ConfigNameError):
        Config.parse(name)


# --- values ---------------------------------------------------------------------------------------------------------


def test_num_stages_zero_is_a_value_and_prints():
    config = Config(32, 32, 32, num_stages=0)
    assert str(config) == "BM32_BN32_BK32_GM1_SK1_nW4_nS0"
    assert Config.parse(str(config)) == config


@pytest.mark.parametrize("hint", ["", "None", "LOCAL", "local prefetch", "x;y", "foo-bar", "-x", 3, True])
def test_bad_hints_are_refused(hint):
    # "foo-bar" would print as FOO_BAR and read back as foo_bar: only the known hints may hold '-'
    with pytest.raises(ValueError, match="schedule_hint"):
        Config(16, 16, 16, schedule_hint=hint)


def test_hint_prints_last_and_in_as_dict():
    config = Config(64, 64, 32, schedule_hint="local-prefetch", **ROCM_KNOBS)
    assert str(config).endswith("_EU0_mfma16_kP2_schedLOCAL_PREFETCH")
    assert config.as_dict()["schedule_hint"] == "local-prefetch"
    assert config.amd_knobs == {**ROCM_KNOBS, "schedule_hint": "local-prefetch"}


# --- every printed name parses back (hypothesis) -------------------------------------------------------------------

small = st.integers(min_value=1, max_value=512)
hints = st.one_of(st.none(), st.sampled_from(KNOWN_SCHEDULE_HINTS),
                  st.from_regex(r"[a-z0-9][a-z0-9_]{0,12}", fullmatch=True))
rocm_configs = st.builds(Config, small, small, small, small, small, small, st.integers(0, 8),
                         st.one_of(st.none(), st.integers(0, 8)), st.one_of(st.none(), st.sampled_from([16, 32])),
                         st.one_of(st.none(), st.sampled_from([1, 2])), schedule_hint=hints)


@settings(max_examples=400, deadline=None, database=None)
@given(rocm_configs, small, small, small)
def test_every_name_round_trips(config, M, N, K):
    name = str(config)
    assert Config.parse(name) == config
    assert config_of_kernel(kernel_name(config)) == config
    assert config_of_kernel(kernel_name(config) + "_reduce") == config
    assert Config.parse_sized(f"matmul_kernel_M{M}_N{N}_K{K}_{name}") == (config, (M, N, K))
    assert name.isidentifier() or name[0].isalpha()  # part of a Python function name in generated code
    assert str(Config.parse(name)) == name


# --- off AMD --------------------------------------------------------------------------------------------------------


def test_for_vendor_keeps_everything_on_amd():
    config = Config(64, 64, 64, 1, 2, 2, 0, schedule_hint="none", **ROCM_KNOBS)
    assert config.for_vendor("amd") is config


@pytest.mark.parametrize("vendor", ["nvidia", "interpreter"])
def test_for_vendor_drops_amd_knobs_and_runs_stage_zero_as_two(vendor):
    config = Config(64, 64, 64, 1, 2, 2, 0, schedule_hint="none", **ROCM_KNOBS)
    assert NUM_STAGES_FOR_AMD_ZERO == 2
    assert config.for_vendor(vendor) == Config(64, 64, 64, 1, 2, 2, 2)
    assert Config(64, 64, 64, num_stages=3, kpack=1).for_vendor(vendor) == Config(64, 64, 64, num_stages=3)


# --- the space and the generated launch options ---------------------------------------------------------------------


# the default spaces' hints (none on AMD, None on NVIDIA): tests/prune/test_space.py, beside their other tile configs


def test_space_file_takes_hints_and_refuses_stage_zero():
    space = space_from_mapping({"schedule_hint": ["none", "local-prefetch"]}, "space.yaml", AMD_SPACE)
    assert space.schedule_hint == ("local-prefetch", "none")
    assert space_from_mapping({"schedule_hint": "none"}, "space.yaml").schedule_hint == ("none",)
    with pytest.raises(ValueError, match="space.yaml: schedule_hint"):
        space_from_mapping({"schedule_hint": ["No Such"]}, "space.yaml")
    with pytest.raises(ValueError, match="num_stages must be an integer >= 1"):
        space_from_mapping({"num_stages": [0, 2]}, "space.yaml")


def test_generated_launch_options_quote_the_hint():
    config = Config(32, 32, 32, num_stages=0, schedule_hint="local-prefetch", **ROCM_KNOBS)
    source = render(problem(64, 64, 64), [config], "generated_kernel_64x64x64.py")
    assert ("options=((\"waves_per_eu\", 0), (\"matrix_instr_nonkdim\", 16), (\"kpack\", 2), "
            "(\"schedule_hint\", 'local-prefetch'),)") in source
    compile(source, "generated_kernel_64x64x64.py", "exec")  # valid Python
