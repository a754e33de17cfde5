"""tune_gemm.search.halving: which configs each round keeps and how many launches it times, on synthetic timings."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tune_gemm.search.halving import HalvingPlan, final_times, keep, ranked, round_spec

PLAN = HalvingPlan(first_iters=2, reduction=10, margin=0.03, min_keep=8)


def _spread(count: int, step: float = 0.05) -> dict[str, float]:
    """Configs c000.. with times 100, 105, 110...: no two within the default margin of each other."""
    return {f"c{i:03d}": 100.0 * (1 + step * i) for i in range(count)}


def test_a_round_keeps_the_best_tenth():
    times = _spread(200)
    assert keep(times, PLAN) == [f"c{i:03d}" for i in range(20)]


def test_near_ties_of_the_best_are_kept_beyond_the_fraction():
    times = _spread(100)
    times.update({f"tie{i}": 100.0 * (1 + 0.001 * i) for i in range(15)})  # 15 configs within 3% of the best
    kept = keep(times, PLAN)
    assert set(kept) >= {f"tie{i}" for i in range(15)} and len(kept) == 16  # ties and c000; ceil(115/10) = 12 < 16
    assert keep(times, HalvingPlan(margin=0.0)) == ranked(times)[:12]  # without the margin: just the fraction


def test_small_fields_keep_at_least_min_keep():
    assert keep(_spread(20), PLAN) == [f"c{i:03d}" for i in range(8)]
    assert keep(_spread(5), PLAN) == [f"c{i:03d}" for i in range(5)]
    assert keep({}, PLAN) == []


def test_ties_at_the_cut_are_broken_by_name_whatever_the_order_given():
    times = {"best": 1.0, **{f"n{i}": 2.0 for i in range(29)}}  # the cut (3 kept) falls inside the tie
    shuffled = list(times)
    random.Random(1).shuffle(shuffled)
    plan = HalvingPlan(margin=0.0, min_keep=3, reduction=10)
    assert keep({name: times[name] for name in shuffled}, plan) == ["best", "n0", "n1"]


@given(st.dictionaries(st.text("abc", min_size=1, max_size=4), st.floats(1.0, 1e4), min_size=1, max_size=60))
def test_kept_configs_are_the_fastest_prefix_and_hold_the_best(times):
    kept = keep(times, PLAN)
    order = ranked(times)
    assert kept == order[:len(kept)]
    assert order[0] in kept
    assert len(kept) >= min(len(times), PLAN.min_keep)
    within = sum(1 for t in times.values() if t <= times[order[0]] * (1 + PLAN.margin))
    assert len(kept) <= max(PLAN.min_keep, -(-len(times) // PLAN.reduction), within)


def test_rounds_grow_their_launches_until_the_final_one():
    first = round_spec(PLAN, 0, 1000, warmup=5, iters=20)
    assert (first.warmup, first.iters, first.final) == (1, 2, False)
    final = round_spec(PLAN, 1, 100, warmup=5, iters=20)
    assert (final.warmup, final.iters, final.final) == (5, 20, True)
    long_run = [round_spec(PLAN, i, 1000, warmup=5, iters=500) for i in range(4)]
    assert [(r.iters, r.final) for r in long_run] == [(2, False), (20, False), (200, False), (500, True)]


def test_a_small_field_or_few_launches_go_straight_to_the_final_round():
    assert round_spec(PLAN, 0, 8, warmup=5, iters=20).final
    assert round_spec(PLAN, 0, 1000, warmup=5, iters=2).final
    assert round_spec(PLAN, 0, 1000, warmup=0, iters=20).warmup == 0  # --no_warmup stays without warm-up


def test_the_winner_comes_from_the_last_round_that_timed_anything():
    rounds = [{"a": 1.0, "b": 2.0}, {"b": 1.5}, {}]
    assert final_times(rounds) == {"b": 1.5}
    assert final_times([{}]) == {}


@pytest.mark.parametrize("fields", [{"first_iters": 0}, {"reduction": 1}, {"margin": -0.1}, {"min_keep": 0}])
def test_invalid_plans_are_refused(fields):
    with pytest.raises(ValueError, match="invalid halving plan"):
        HalvingPlan(**fields)
