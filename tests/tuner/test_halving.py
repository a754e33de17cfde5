"""tune_gemm.search.halving: which configs each round keeps and how many launches it times, and the rounds its strategy
asks for, on synthetic timings."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tune_gemm.core.config import Config
from tune_gemm.measure import ProfilerChoice
from tune_gemm.search.checkpoint import RoundState
from tune_gemm.search.halving import HALVING, HalvingPlan, HalvingSearch, final_times, keep, ranked, round_spec
from tune_gemm.search.search import SEARCHES, strategy_for
from tune_gemm.search.settings import TuneSettings
from tune_gemm.search.strategy import Progress, Round, RoundSpec

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


def _configs(count: int) -> list[Config]:
    return [Config(16 * (1 + i), 16, 16) for i in range(count)]


def _timed(progress: Progress, round_: Round, times: dict[Config, float], complete: bool = True) -> None:
    """`round_` done, its configs timed at `times`: what the runner leaves in the checkpoint."""
    spec = round_.spec
    if spec.index == len(progress.rounds):
        progress.rounds.append(RoundState(spec.warmup, spec.iters))
    progress.rounds[spec.index].times.update({str(c): times[c] for c in round_.configs})
    progress.rounds[spec.index].complete = complete
    progress.done.append(round_)


def test_the_halving_strategy_asks_for_shrinking_rounds_then_says_done():
    configs = _configs(40)
    times = {config: 100.0 + index for index, config in enumerate(reversed(configs))}  # the last config is fastest
    search = HalvingSearch(warmup=5, iters=200, plan=HalvingPlan(first_iters=2, reduction=2, margin=0.0, min_keep=5))
    progress = Progress([], [], False, {str(c): c for c in configs})
    asked = []
    while (round_ := search.next_round(configs, progress)) is not None:
        asked.append((round_.spec, len(round_.configs), round_.compiles))
        _timed(progress, round_, times)
    assert asked == [(RoundSpec(0, 1, 2, False), 40, True), (RoundSpec(1, 1, 4, False), 20, False),
                     (RoundSpec(2, 1, 8, False), 10, False), (RoundSpec(3, 5, 200, True), 5, False)]
    assert progress.done[-1].configs == list(reversed(configs))[:5]  # the fastest five, fastest first


def test_the_halving_strategy_closes_a_cut_search_with_the_fastest_it_timed():
    configs = _configs(40)
    times = {config: 100.0 + index for index, config in enumerate(configs)}
    search = HalvingSearch(warmup=5, iters=200, plan=HalvingPlan(first_iters=2, reduction=2, margin=0.0, min_keep=5))
    progress = Progress([], [], False, {str(c): c for c in configs})
    first = search.next_round(configs, progress)
    _timed(progress, replace(first, configs=first.configs[:12]), times, complete=False)  # the budget cut it
    closing = search.next_round(configs, progress)
    assert closing.closing and closing.spec == RoundSpec(1, 5, 200, True) and closing.configs == configs[:5]
    _timed(progress, closing, times)
    assert search.next_round(configs, progress) is None
    # nothing timed before the budget ran out: no closing round
    nothing = Progress([RoundState(1, 2)], [first], True, progress.config_of)
    assert search.next_round(configs, nothing) is None


def test_every_search_is_registered_by_its_name():
    assert list(SEARCHES) == ["exhaustive", "halving", "refine"]
    assert all(strategy.name == name for name, strategy in SEARCHES.items())
    settings = TuneSettings(ProfilerChoice("host", "host"), search="halving", warmup=3, iters=50)
    halving = strategy_for(settings)
    assert isinstance(halving, HalvingSearch) and halving.plan == HALVING and (halving.warmup, halving.iters) == (3, 50)
    with pytest.raises(ValueError, match="search must be one of"):
        strategy_for(TuneSettings(ProfilerChoice("host", "host"), search="random"))
