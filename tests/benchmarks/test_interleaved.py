"""benchmarks/interleaved.py on the CPU: the order of the columns in each round, how many rounds fit the budget,
the medians, the sleep, and which columns' calls outlast the GPU's queue (the event timing itself runs on the device
machine, inside bench_gemm)."""

from __future__ import annotations

import pytest
from helpers import load_benchmark


@pytest.fixture(scope="module")
def interleaved():
    return load_benchmark("interleaved")


def test_every_round_runs_each_column_once_and_the_order_rotates(interleaved):
    orders = interleaved.round_orders(["tune_gemm", "cuBLAS", "max-autotune"], 4)
    assert orders == [["tune_gemm", "cuBLAS", "max-autotune"], ["cuBLAS", "max-autotune", "tune_gemm"],
                      ["max-autotune", "tune_gemm", "cuBLAS"], ["tune_gemm", "cuBLAS", "max-autotune"]]
    # over whole rotations each column runs first, and after each other column, equally often
    firsts = [order[0] for order in interleaved.round_orders(list("abcd"), 8)]
    assert sorted(firsts) == sorted(list("abcd") * 2)


def test_rounds_fill_the_budget_within_bounds(interleaved):
    assert interleaved.rounds_for([1.6, 1.5, 1.5], budget_ms=900) == 195  # three 1.5 ms GEMMs (flush included)
    assert interleaved.rounds_for([0.1, 0.1], budget_ms=900) == interleaved.MAX_ROUNDS  # tiny: capped
    assert interleaved.rounds_for([60.0, 70.0], budget_ms=900) == interleaved.MIN_ROUNDS  # huge: a floor


def test_medians_are_per_column_in_microseconds(interleaved):
    samples = {"a": [1.0, 0.5, 9.0], "b": [0.002, 0.004, 0.003, 0.001]}
    assert interleaved.medians_us(samples) == pytest.approx({"a": 1000.0, "b": 2.5})


def test_the_gpu_sleeps_only_where_short_kernels_leave_the_host_behind(interleaved):
    # max-autotune's wrapper at 150 us of host time, a flush of 85 us, 10 us kernels: 1.5 * 150 - 85 - 10 = 130 us
    assert interleaved.sleep_us([70.0, 150.0, 10.0], flush_us=85.0, shortest_us=10.0) == pytest.approx(130.0)
    assert interleaved.sleep_us([20.0, 30.0], flush_us=85.0, shortest_us=5.0) == 0.0  # the flush alone covers it
    assert interleaved.sleep_us([70.0, 150.0], flush_us=85.0, shortest_us=185.0) == 0.0  # 4096^3: the kernels do


def test_a_column_is_exposed_when_too_many_of_its_calls_find_their_window_open(interleaved):
    one_late = [False] * 19 + [True]  # 1 of 20: within AT_RISK_SHARE (a tenth)
    three_late = [False] * 17 + [True] * 3
    assert interleaved.exposed_columns({"cuBLAS": one_late, "tune_gemm": three_late}) == ["tune_gemm"]
    assert interleaved.exposed_columns({"a": [False] * 10, "b": [True, False] * 5}) == ["b"]


def test_each_attempt_after_an_exposed_one_sleeps_longer(interleaved):
    assert interleaved.longer_sleep_us(130.0, [70.0, 150.0]) == 260.0
    assert interleaved.longer_sleep_us(100.0, [70.0, 300.0]) == pytest.approx(450.0)  # HOST_MARGIN x the slowest
    assert interleaved.longer_sleep_us(0.0, [40.0]) == pytest.approx(60.0)  # no sleep before
