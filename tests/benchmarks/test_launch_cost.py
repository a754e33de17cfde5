"""benchmarks/launch_cost.py: the column that launches through Triton's JIT turns replays off for its calls only."""

from __future__ import annotations

import pytest
from helpers import load_benchmark

from tune_gemm.kernels.matmul_family import replay

launch_cost = load_benchmark("launch_cost")


def test_the_jit_column_turns_replays_off_for_its_calls_only(monkeypatch):
    monkeypatch.setattr(replay, "REPLAY_LAUNCHES", True)  # as on an NVIDIA GPU
    seen = []
    call = launch_cost.through_the_jit(lambda: seen.append(replay.REPLAY_LAUNCHES))
    call()
    assert seen == [False] and replay.REPLAY_LAUNCHES

    def failing():
        raise RuntimeError("launch failed")
    with pytest.raises(RuntimeError, match="launch failed"):
        launch_cost.through_the_jit(failing)()
    assert replay.REPLAY_LAUNCHES


def test_host_figures_are_medians_of_rounds_in_which_the_columns_take_turns(monkeypatch):
    order = []
    figures = {"first": iter([(10.0, 20.0), (30.0, 40.0), (20.0, 90.0)]), "second": iter([(5.0, 6.0)] * 3)}

    def measured(call):
        order.append(call())
        return next(figures[order[-1]])
    monkeypatch.setattr(launch_cost, "host_and_back_to_back_us", measured)
    host = launch_cost.interleaved_host_us({"first": lambda: "first", "second": lambda: "second"}, rounds=3)
    assert order == ["first", "second"] * 3
    assert host == {"first": (20.0, 40.0), "second": (5.0, 6.0)}
