"""benchmarks/launch_cost.py: the column that launches through Triton's JIT turns replays off for its calls only."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from helpers import load_benchmark

launch_cost = load_benchmark("launch_cost")


def test_the_jit_column_turns_replays_off_for_its_calls_only():
    module = SimpleNamespace(REPLAY_LAUNCHES=True)
    seen = []
    call = launch_cost.through_the_jit(module, lambda: seen.append(module.REPLAY_LAUNCHES))
    call()
    assert seen == [False] and module.REPLAY_LAUNCHES

    def failing():
        raise RuntimeError("launch failed")
    with pytest.raises(RuntimeError, match="launch failed"):
        launch_cost.through_the_jit(module, failing)()
    assert module.REPLAY_LAUNCHES
