"""tune_gemm.search.order: a fixed permutation whose every prefix samples the whole pruned space."""

from __future__ import annotations

from collections import Counter

from helpers import problem

from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.search.order import visiting_order
from tune_gemm.space.prune import prune


def _configs():
    return prune(problem(4096, 4096, 4096), INTERPRETER_PROFILE).configs


def test_is_a_permutation_and_the_same_for_any_input_order():
    names = [str(config) for config in _configs()]
    ordered = visiting_order(names)
    assert sorted(ordered) == sorted(names)
    assert visiting_order(list(reversed(names))) == ordered


def test_a_quarter_of_the_order_samples_every_tile_and_family_in_proportion():
    configs = {str(config): config for config in _configs()}
    prefix = visiting_order(list(configs))[: len(configs) // 4]
    for field in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "PERSISTENT_TMA"):
        whole = Counter(getattr(config, field) for config in configs.values())
        sampled = Counter(getattr(configs[name], field) for name in prefix)
        for value, count in whole.items():
            share, sampled_share = count / len(configs), sampled[value] / len(prefix)
            assert abs(sampled_share - share) <= 0.5 * share, (field, value, share, sampled_share)


def test_the_pruner_order_would_not_sample_the_large_tiles():
    """Why the order exists: the pruner's own first quarter holds no 256-row tiles at 4096³."""
    configs = _configs()
    assert all(config.BLOCK_SIZE_M < 256 for config in configs[: len(configs) // 4])
    assert any(config.BLOCK_SIZE_M == 256 for config in configs)
