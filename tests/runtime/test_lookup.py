"""tune_gemm.runtime.lookup: exact shape, then same N/K in M's power-of-two bucket, then all-dimension buckets, then default."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tune_gemm.core.config import Config
from tune_gemm.runtime.lookup import (
    BUCKET,
    DEFAULT,
    EXACT,
    M_BUCKET,
    bucket,
    choose,
    default_config,
)


def _config(tag: int) -> Config:
    """Distinct configs, so that a test sees which tuned shape a choice came from."""
    return Config(16, 16, 16, GROUP_SIZE_M=tag)


def test_bucket_is_the_next_power_of_two():
    assert [bucket(x) for x in (1, 2, 3, 16, 17, 32, 33, 4096, 4097)] == [1, 2, 4, 16, 32, 32, 64, 4096, 8192]


def test_exact_shape_wins_over_every_neighbour():
    tuned = {(32, 64, 64): _config(1), (31, 64, 64): _config(2), (33, 64, 64): _config(3)}
    choice = choose(tuned, (32, 64, 64))
    assert (choice.rule, choice.config, choice.tuned_shape) == (EXACT, _config(1), (32, 64, 64))


def test_same_weights_in_the_m_bucket_nearest_m_ties_to_the_larger():
    tuned = {(17, 4096, 4096): _config(1), (31, 4096, 4096): _config(2), (16, 4096, 4096): _config(3)}
    assert choose(tuned, (20, 4096, 4096)).tuned_shape == (17, 4096, 4096)  # 16 is in bucket 16, not 32
    assert choose(tuned, (24, 4096, 4096)).tuned_shape == (31, 4096, 4096)  # 7 from both: the larger M
    assert choose(tuned, (24, 4096, 4096)).rule == M_BUCKET
    assert choose(tuned, (8, 4096, 4096)).rule == DEFAULT  # bucket 8 holds nothing, and no other dimension matches


def test_same_weights_beat_a_closer_shape_with_other_weights():
    tuned = {(33, 4096, 4096): _config(1), (62, 4000, 4096): _config(2)}
    choice = choose(tuned, (62, 4096, 4096))
    assert (choice.rule, choice.tuned_shape) == (M_BUCKET, (33, 4096, 4096))


def test_all_dimension_bucket_nearest_in_log_distance():
    tuned = {(100, 1000, 1000): _config(1), (65, 600, 520): _config(2), (100, 1000, 1100): _config(3)}
    choice = choose(tuned, (120, 1024, 900))
    assert (choice.rule, choice.tuned_shape, choice.config) == (BUCKET, (100, 1000, 1000), _config(1))
    assert choose(tuned, (120, 1024, 1030)).tuned_shape == (100, 1000, 1100)  # the only one in K's bucket 2048
    assert choose(tuned, (120, 1024, 3000)).rule == DEFAULT  # K bucket 4096: nothing there


def test_default_when_nothing_is_tuned_scales_down_for_small_matrices():
    choice = choose({}, (4096, 4096, 4096))
    assert (choice.rule, choice.tuned_shape) == (DEFAULT, None)
    assert (choice.config.BLOCK_SIZE_M, choice.config.BLOCK_SIZE_N, choice.config.BLOCK_SIZE_K) == (64, 64, 32)
    small = default_config(5, 20, 3)
    assert (small.BLOCK_SIZE_M, small.BLOCK_SIZE_N, small.BLOCK_SIZE_K, small.SPLIT_K) == (16, 32, 16, 1)
    one_byte = choose({}, (5, 20, 3), least_block_k=32).config  # a 1-byte dot takes K tiles of 32 at least
    assert (one_byte.BLOCK_SIZE_M, one_byte.BLOCK_SIZE_N, one_byte.BLOCK_SIZE_K) == (16, 32, 32)
    assert default_config(4096, 4096, 4096, least_block_k=32) == default_config(4096, 4096, 4096)


@given(st.integers(1, 2**20), st.integers(1, 2**20), st.integers(1, 2**20))
def test_default_config_fits_the_smallest_shared_memory_in_fp32(M, N, K):
    config = default_config(M, N, K)
    fp32_bytes = config.num_stages * (config.BLOCK_SIZE_M + config.BLOCK_SIZE_N) * config.BLOCK_SIZE_K * 4
    assert fp32_bytes <= 64 * 1024  # AMD's LDS, the smallest the tuner knows
    for side in (config.BLOCK_SIZE_M, config.BLOCK_SIZE_N, config.BLOCK_SIZE_K):
        assert side >= 16 and side & (side - 1) == 0  # tl.dot and tl.arange need these


_SIDE = st.sampled_from([1, 3, 16, 17, 31, 32, 48, 64, 100, 128])
_SHAPE = st.tuples(_SIDE, _SIDE, _SIDE)


@settings(max_examples=300)
@given(st.dictionaries(_SHAPE, st.integers(1, 8).map(_config), max_size=12), _SHAPE)
def test_every_choice_follows_its_rule(tuned, shape):
    choice = choose(tuned, shape)
    assert (choice.rule == EXACT) == (shape in tuned)
    if choice.rule == DEFAULT:
        assert choice.tuned_shape is None and choice.config == default_config(*shape)
        assert not any(tuple(map(bucket, s)) == tuple(map(bucket, shape)) for s in tuned)
        return
    assert tuned[choice.tuned_shape] == choice.config
    assert tuple(map(bucket, choice.tuned_shape)) == tuple(map(bucket, shape))
    same_weights = [s for s in tuned if s[1:] == shape[1:] and bucket(s[0]) == bucket(shape[0])]
    if choice.rule == M_BUCKET:
        assert choice.tuned_shape[1:] == shape[1:]
        assert abs(choice.tuned_shape[0] - shape[0]) == min(abs(s[0] - shape[0]) for s in same_weights)
    if choice.rule == BUCKET:
        assert not same_weights
