"""tune_gemm.search.refine: the representatives, the shapes refined and the finalists of `--search refine`, on synthetic
configs and timings, and the tile order round 0 takes from a pruned space."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace

import pytest
from helpers import problem

from tune_gemm.core.config import ATOMIC_REDUCE, Config
from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.search.refine import (
    ATOMIC_REDUCE_MIN_SPLIT,
    FUSED_REDUCE_MAX_TILE,
    RefinePlan,
    finalists,
    refine_times,
    refined,
    representatives,
    shape_of,
    shapes,
    times_whole_space,
    variant_steps,
)
from tune_gemm.space.prune import RangeSpace, prune

PLAN = RefinePlan(stages=4, group_m=8, keep=2, margin=0.03, max_keep=3, final=3)


def _variants(block_m: int, block_n: int, stages=(2, 3, 4, 5), groups=(1, 4, 8, 16), **fields) -> list[Config]:
    return [Config(block_m, block_n, 64, GROUP_SIZE_M=g, num_stages=s, num_warps=4, **fields)
            for s, g in itertools.product(stages, groups)]


def test_configs_differing_only_in_stages_and_group_share_a_shape():
    assert shape_of(Config(64, 64, 32, GROUP_SIZE_M=1, num_stages=2)) == shape_of(
        Config(64, 64, 32, GROUP_SIZE_M=8, num_stages=5))
    for other in (Config(64, 128, 32), Config(64, 64, 32, num_warps=8), Config(64, 64, 32, SPLIT_K=2),
                  Config(64, 64, 32, PERSISTENT_TMA=1)):
        assert shape_of(other) != shape_of(Config(64, 64, 32))


def test_who_sums_the_partials_is_a_variant_of_a_split_k_shape():
    assert shape_of(Config(64, 64, 32, SPLIT_K=4)) == shape_of(Config(64, 64, 32, SPLIT_K=4, FUSED_REDUCE=1))


@pytest.mark.parametrize(("block_m", "block_n", "expected"), [(16, 64, 1), (64, 128, 1), (128, 128, 0), (128, 256, 0)])
def test_a_split_k_shape_is_represented_by_its_fused_reduction_for_small_tiles_only(block_m, block_n, expected):
    configs = [replace(config, SPLIT_K=4, FUSED_REDUCE=fused) for config in _variants(block_m, block_n)
               for fused in (0, 1)]
    [rep] = representatives(configs, PLAN)
    assert rep.FUSED_REDUCE == expected and (block_m * block_n <= FUSED_REDUCE_MAX_TILE) == bool(expected)
    assert (rep.num_stages, rep.GROUP_SIZE_M) == (4, 8)


@pytest.mark.parametrize(("block_m", "block_n", "split_k", "tma", "expected"), [
    (16, 64, 8, 0, ATOMIC_REDUCE), (128, 128, 16, 0, ATOMIC_REDUCE), (64, 64, 16, 1, ATOMIC_REDUCE),
    (128, 128, 64, 1, ATOMIC_REDUCE), (64, 64, 4, 0, 1), (128, 128, 4, 0, 0), (128, 128, 2, 1, 1), (128, 256, 4, 1, 1),
])
def test_many_k_slices_are_represented_by_their_atomic_sum_and_a_tma_split_by_its_slots_below(block_m, block_n,
                                                                                              split_k, tma, expected):
    # a TMA split has no reduction kernel: its shape holds the slot and atomic variants only
    configs = [replace(config, SPLIT_K=split_k, FUSED_REDUCE=fused, PERSISTENT_TMA=tma)
               for config in _variants(block_m, block_n) for fused in ((1, 2) if tma else (0, 1, 2))]
    [rep] = representatives(configs, PLAN)
    assert rep.FUSED_REDUCE == expected and (split_k >= ATOMIC_REDUCE_MIN_SPLIT) == (expected == ATOMIC_REDUCE)
    assert (rep.num_stages, rep.GROUP_SIZE_M) == (4, 8)


def test_a_representative_takes_the_preferred_stages_and_group_when_they_exist():
    [rep] = representatives(_variants(128, 128), PLAN)
    assert (rep.num_stages, rep.GROUP_SIZE_M) == (4, 8)


@pytest.mark.parametrize(("stages", "expected"), [((2, 3, 5), 3), ((5, 6), 5), ((1,), 1)])
def test_without_the_preferred_stages_the_nearest_shallower_is_taken_else_the_nearest_deeper(stages, expected):
    [rep] = representatives(_variants(128, 128, stages=stages), PLAN)
    assert rep.num_stages == expected


@pytest.mark.parametrize(("groups", "expected"), [((1, 4, 16), 16), ((1, 4), 4), ((1,), 1), ((32, 64), 32)])
def test_the_group_nearest_the_preferred_on_a_log_scale_is_taken_the_larger_on_a_tie(groups, expected):
    [rep] = representatives(_variants(128, 128, groups=groups), PLAN)
    assert rep.GROUP_SIZE_M == expected


def test_one_representative_per_shape_in_the_order_of_the_configs_shapes_whatever_the_order_within():
    configs = _variants(64, 64) + _variants(128, 64) + _variants(64, 128, PERSISTENT_TMA=1)
    random.Random(3).shuffle(configs)
    reps = representatives(configs, PLAN)
    assert [shape_of(rep) for rep in reps] == list(shapes(configs))
    assert len(reps) == 3 and all((rep.num_stages, rep.GROUP_SIZE_M) == (4, 8) for rep in reps)


def _timed(reps: list[Config], times: list[float]) -> dict[str, float]:
    return {str(rep): time_us for rep, time_us in zip(reps, times)}


def test_refinement_covers_every_other_variant_of_the_best_shapes_only():
    configs = [config for bm in (16, 32, 64, 128, 256) for config in _variants(bm, 64)]
    reps = representatives(configs, PLAN)
    times = _timed(reps, [50.0, 10.0, 30.0, 11.0, 40.0])  # BM32 and BM128 are the best two
    more = refined(configs, times, PLAN)
    assert {c.BLOCK_SIZE_M for c in more} == {32, 128}
    assert len(more) == 2 * (16 - 1) and not set(map(str, more)) & set(times)


def test_refinement_times_the_variants_nearest_their_representative_first_the_faster_shape_first_on_a_tie():
    configs = [config for bm in (16, 32, 64) for config in _variants(bm, 64)]
    reps = representatives(configs, PLAN)
    more = refined(configs, _timed(reps, [50.0, 10.0, 11.0]), PLAN)  # BM32 then BM64: (4 stages, GROUP_SIZE_M 8)
    steps = [variant_steps(c, next(r for r in reps if shape_of(r) == shape_of(c))) for c in more]
    assert steps == sorted(steps) and steps[0] == 1 and steps[-1] == 2 + 3  # 2 stages, GROUP_SIZE_M 1
    assert [(c.BLOCK_SIZE_M, c.num_stages, c.GROUP_SIZE_M) for c in more[:8]] == [
        (32, 3, 8), (32, 4, 4), (32, 4, 16), (32, 5, 8), (64, 3, 8), (64, 4, 4), (64, 4, 16), (64, 5, 8)]
    # a budget that cuts round 1 early has timed the deeper pipeline of the best shapes, not their row-by-row walk
    assert (32, 4, 1) not in [(c.BLOCK_SIZE_M, c.num_stages, c.GROUP_SIZE_M) for c in more[:8]]


@pytest.mark.parametrize(("variant", "steps"), [
    (Config(64, 64, 64, GROUP_SIZE_M=8, num_stages=5), 1), (Config(64, 64, 64, GROUP_SIZE_M=1, num_stages=4), 3),
    (Config(64, 64, 64, GROUP_SIZE_M=16, num_stages=2), 3), (Config(64, 64, 64, GROUP_SIZE_M=8, num_stages=4), 0),
    (Config(64, 64, 64, GROUP_SIZE_M=8, num_stages=4, SPLIT_K=2, FUSED_REDUCE=1), 1),
])
def test_variant_steps_count_stages_doublings_of_the_group_and_the_way_partials_are_summed(variant, steps):
    representative = Config(64, 64, 64, GROUP_SIZE_M=8, num_stages=4, SPLIT_K=variant.SPLIT_K)
    assert variant_steps(variant, representative) == steps


def test_near_ties_are_refined_beyond_keep_but_never_past_max_keep():
    configs = [config for bm in (16, 32, 64, 128, 256) for config in _variants(bm, 64, stages=(4,), groups=(1, 8))]
    reps = representatives(configs, PLAN)
    within = _timed(reps, [10.0, 10.1, 10.2, 20.0, 30.0])  # three within 3% of the best
    assert {c.BLOCK_SIZE_M for c in refined(configs, within, PLAN)} == {16, 32, 64}
    all_tied = _timed(reps, [10.0, 10.0, 10.0, 10.0, 10.0])
    more = refined(configs, all_tied, PLAN)
    assert len({c.BLOCK_SIZE_M for c in more}) == 5 and len(more) == PLAN.max_keep + 2
    # the two shapes past max_keep (ties go by name) are near: only their other tile order is timed
    assert {c.BLOCK_SIZE_M for c in more[:3]} == {128, 16, 256}
    assert [(c.BLOCK_SIZE_M, c.GROUP_SIZE_M) for c in more[-2:]] == [(32, 1), (64, 1)]
    no_margin = RefinePlan(keep=2, margin=0.0, max_keep=3, order_margin=0.0)
    assert {c.BLOCK_SIZE_M for c in refined(configs, within, no_margin)} == {16, 32}


def test_near_shapes_past_the_refined_ones_get_their_row_by_row_variant_timed():
    configs = [config for bm in (16, 32, 64, 128, 256) for config in _variants(bm, 64, stages=(3, 4))]
    # BM16 and BM32 are refined; BM64 and BM128 within 30% of the best; BM256 past it
    times = _timed(representatives(configs, PLAN), [10.0, 10.2, 12.0, 12.9, 13.1])
    probes = [c for c in refined(configs, times, PLAN) if c.BLOCK_SIZE_M not in (16, 32)]
    assert [(c.BLOCK_SIZE_M, c.GROUP_SIZE_M, c.num_stages) for c in probes] == [(64, 1, 4), (128, 1, 4)]
    one_probe = replace(PLAN, max_order_probes=1)
    assert [c.BLOCK_SIZE_M for c in refined(configs, times, one_probe) if c.BLOCK_SIZE_M not in (16, 32)] == [64]
    assert {c.BLOCK_SIZE_M for c in refined(configs, times, replace(PLAN, order_margin=0.0))} == {16, 32}


def test_a_probe_keeps_the_representatives_partial_sums_and_the_nearest_stages_and_skips_a_row_by_row_one():
    split = [Config(64, 64, 64, SPLIT_K=2, GROUP_SIZE_M=g, num_stages=s, num_warps=4, FUSED_REDUCE=r)
             for g, s, r in itertools.product((2, 8), (3, 5), (0, 1))]
    row_by_row = _variants(128, 64, stages=(4,), groups=(1,))
    best = _variants(32, 64, stages=(4,), groups=(1, 8))
    configs = best + split + row_by_row
    reps = representatives(configs, PLAN)
    assert [(r.GROUP_SIZE_M, r.num_stages, r.FUSED_REDUCE) for r in reps[1:]] == [(8, 3, 1), (1, 4, 0)]
    more = refined(configs, _timed(reps, [10.0, 11.0, 11.0]), replace(PLAN, keep=1, max_keep=1))
    assert [(c.BLOCK_SIZE_M, c.GROUP_SIZE_M, c.num_stages, c.FUSED_REDUCE) for c in more] == [
        (64, 2, 3, 1), (32, 1, 4, 0)]  # the split's probe (two steps), BM32's other variant (three); none for BM128


def test_a_shape_whose_representative_has_no_time_is_not_refined():
    configs = _variants(64, 64) + _variants(128, 64)
    reps = representatives(configs, PLAN)
    more = refined(configs, {str(reps[1]): 5.0}, PLAN)
    assert {c.BLOCK_SIZE_M for c in more} == {128}
    assert refined(configs, {}, PLAN) == []


def test_finalists_are_the_fastest_of_both_rounds_and_their_times_pick_the_winner():
    union = {"a": 3.0, "b": 1.0, "c": 2.0, "d": 2.0}
    assert finalists(union, PLAN) == ["b", "c", "d"]
    assert refine_times([{"a": 3.0}, {"b": 1.0}, {"b": 1.2, "c": 1.1}]) == {"b": 1.2, "c": 1.1}


def test_without_a_final_round_rounds_zero_and_one_together_pick_the_winner():
    assert refine_times([{"a": 3.0}, {"b": 1.0}]) == {"a": 3.0, "b": 1.0}
    assert refine_times([{"a": 3.0}, {"b": 1.0}, {}]) == {"a": 3.0, "b": 1.0}
    assert refine_times([{"a": 3.0}]) == {"a": 3.0}
    assert refine_times([]) == {}


def test_a_space_of_few_configs_per_shape_is_timed_whole():
    two_per_shape = _variants(64, 64, stages=(2, 3), groups=(1,)) + _variants(64, 128, stages=(2, 3), groups=(1,))
    assert times_whole_space(two_per_shape, PLAN)  # round 0 would time half of it
    assert not times_whole_space(_variants(64, 64, stages=(2, 3, 4), groups=(1,)), PLAN)  # a third
    assert not times_whole_space(two_per_shape, RefinePlan(whole_space_share=0.6))


@pytest.mark.parametrize("bad", [{"keep": 0}, {"margin": -0.1}, {"keep": 5, "max_keep": 4}, {"stages": 0},
                                 {"final": 0}, {"whole_space_share": 0}, {"whole_space_share": 1.5},
                                 {"order_margin": -0.1}, {"max_order_probes": -1}])
def test_invalid_plans_are_refused(bad):
    with pytest.raises(ValueError, match="invalid refine plan"):
        RefinePlan(**bad)


@pytest.mark.parametrize("M, group", [(128, 4), (256, 4), (512, 8), (2048, 8)])
def test_round_zero_walks_a_few_rows_of_tiles_in_one_group(M, group):
    # the pruned space of 64-row tiles (2, 4, 8 and 32 rows of them): a representative of GROUP_SIZE_M 1 would walk the
    # tiles row by row, which took up to twice as long as one group of every row
    space = RangeSpace(block_m=(64,), block_n=(128,), block_k=(64,), split_k=(1,), num_warps=(4,), num_stages=(3, 4))
    configs = prune(problem(M, 4096, 4096), INTERPRETER_PROFILE, space).configs
    assert [rep.GROUP_SIZE_M for rep in representatives(configs, PLAN)] == [group]
