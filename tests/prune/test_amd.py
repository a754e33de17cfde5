"""Pruning on AMD GPUs (MI250X and MI300X written as data): the ROCm knobs join the space, the rules
use the device's LDS, CU count and MFMA shapes."""

from __future__ import annotations

import pytest
from helpers import MI250X, MI300X, problem

from tune_gemm.core.config import Config
from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.space.prune import prune
from tune_gemm.space.ranges import AMD_SPACE, FULL_SPACE, SMALL_ROW_SPACE, space_for
from tune_gemm.space.rules import RULES_BY_NAME, shared_memory_bytes

BIG = problem(4096, 4096, 4096)
SKINNY = problem(16, 4096, 4096)


@pytest.fixture(scope="module")
def survivors():
    return {(p.M, d.name): prune(p, d, AMD_SPACE).configs for p in (BIG, SKINNY) for d in (MI250X, MI300X)}


def test_amd_space_adds_the_rocm_knobs():
    assert space_for("amd") is AMD_SPACE and space_for("nvidia") is FULL_SPACE
    # mfma 16/32 x kpack 1/2, waves_per_eu 0; the Hopper families (130 variants of each tile config), STATIC_SHAPE (2)
    # and FUSED_REDUCE (3) are not there
    # nor the compound tile sides (192, and 96, 160, 320 and 384 for N: 6 x 10 block_m x block_n in the full space,
    # 5 x 5 here), nor 12 or 16 warps, nor the tiles shorter than a matrix instruction (FULL_SPACE.also)
    tile_space = FULL_SPACE.parts()[0]
    assert len(AMD_SPACE) == len(tile_space) // (130 * 2 * 3) // 60 * 25 * 4 // 6 * 4
    assert AMD_SPACE.also is None and FULL_SPACE.also is SMALL_ROW_SPACE
    # the first tile configs of each space carry the ROCm knobs or not: tests/prune/test_space.py, which builds
    # every tile config of both spaces once


@pytest.mark.parametrize("M", [4096, 16])
@pytest.mark.parametrize("device", [MI250X, MI300X], ids=["MI250X", "MI300X"])
def test_every_survivor_fits_the_lds_and_its_mfma(survivors, M, device):
    configs = survivors[(M, device.name)]
    assert configs
    p = BIG if M == 4096 else SKINNY
    for config in configs:
        assert shared_memory_bytes(p, config) <= 65_536
        assert min(config.BLOCK_SIZE_M, config.BLOCK_SIZE_N) >= config.matrix_instr_nonkdim or M == 16
        assert config.BLOCK_SIZE_K >= 16 * config.kpack


def test_lds_rule_is_computed_not_the_seeds_fixed_exclusion(survivors):
    big = survivors[(4096, MI300X.name)]
    # the seed excluded every BLOCK_K=128 config with a 128 block; the computed rule keeps those that fit
    kept_128 = [c for c in big if c.BLOCK_SIZE_K == 128 and 128 in (c.BLOCK_SIZE_M, c.BLOCK_SIZE_N)]
    assert kept_128 and all(shared_memory_bytes(BIG, c) <= 65_536 for c in kept_128)
    too_big = Config(128, 128, 128, 1, 1, 8, 2, waves_per_eu=0, matrix_instr_nonkdim=16, kpack=1)
    assert shared_memory_bytes(BIG, too_big) == 131_072
    assert not RULES_BY_NAME["shared_memory"].keep(BIG, too_big, MI300X)
    assert RULES_BY_NAME["shared_memory"].keep(BIG, too_big, INTERPRETER_PROFILE)  # H100-like: 227 KiB


def test_mfma_32_needs_32_wide_blocks_and_kpack_deepens_k():
    rule = RULES_BY_NAME["matrix_instruction"].keep
    assert rule(BIG, Config(32, 32, 32, num_warps=1, matrix_instr_nonkdim=32, kpack=1), MI300X)
    assert not rule(BIG, Config(16, 64, 32, num_warps=1, matrix_instr_nonkdim=32, kpack=1), MI300X)
    assert rule(BIG, Config(64, 64, 32, num_warps=1, matrix_instr_nonkdim=16, kpack=2), MI300X)
    assert not rule(BIG, Config(64, 64, 16, num_warps=1, matrix_instr_nonkdim=16, kpack=2), MI300X)


def test_cu_count_decides_split_k(survivors):
    # 16x4096 output: 64x64 tiles give 64 of them, under both GPUs' CU counts, so split-K stays
    assert any(c.SPLIT_K > 1 for c in survivors[(16, MI300X.name)])
    # with fewer CUs than tiles it would go: the rule reads the device's count
    few = prune(SKINNY, MI300X.__class__(**{**MI300X.__dict__, "sm_count": 8}), AMD_SPACE).configs
    assert not any(c.SPLIT_K > 1 and c.BLOCK_SIZE_N <= 512 for c in few if 4096 // c.BLOCK_SIZE_N >= 8)


def test_survivor_counts_are_reported(survivors, capsys):
    for (M, name), configs in sorted(survivors.items()):
        print(f"{name} M={M}: {len(configs)} of {len(AMD_SPACE)}")
    out = capsys.readouterr().out
    assert out.count("of 250000") == 4
