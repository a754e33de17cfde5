"""Spike filtering in tune_gemm.measure.postprocess.summarize, on synthetic CSVs: a timed launch slower than the
config's first (cold) launch is dropped, unless such launches are half of the timed ones or more."""

from __future__ import annotations

import csv
from pathlib import Path

from tune_gemm.core.config import Config
from tune_gemm.generate.naming import kernel_name, reduce_kernel_name
from tune_gemm.measure.postprocess import load_timings, summarize
from tune_gemm.measure.schema import BASELINE_NAME, COLUMNS

A = Config(64, 64, 32, 8, 1, 4, 3)
SPLIT = Config(16, 64, 64, 1, 4, 4, 2)


def summary(tmp_path: Path, launches: dict[str, list[float]], warmup: int, statistic: str = "median") -> dict:
    path = tmp_path / "t.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for name, durations in launches.items():
            writer.writerows((name, instance, duration) for instance, duration in enumerate(durations))
    table = summarize(load_timings(path), warmup=warmup, statistic=statistic)
    return {row.config: (row.time_us, row.instances) for row in table.itertuples()}


# cold first launch 5000 ns (warm-up), then 7 timed launches of which 3 spike above it
SPIKY = [5000, 1000, 9000, 1000, 8000, 1000, 7000, 1100]


def test_spikes_above_the_first_launch_are_dropped_before_the_median(tmp_path):
    # unfiltered median of the timed launches would be 1100 ns; without the 3 spikes it is 1000
    assert summary(tmp_path, {kernel_name(A): SPIKY}, warmup=1) == {str(A): (1.0, 4)}


def test_a_last_launch_spike_does_not_become_the_time(tmp_path):
    launches = [5000, 1000, 9000, 1000, 1000, 1000, 7000, 1100, 30_000]  # 3 spikes of 8
    assert summary(tmp_path, {kernel_name(A): launches}, warmup=1, statistic="last") == {str(A): (1.1, 5)}


def test_launches_over_the_first_are_the_norm_when_half_or_more(tmp_path):
    # a fast first launch (e.g. clocks not yet throttled): 2 of 4 timed launches are over it, so none is a spike
    launches = [1000, 2000, 900, 2100, 950]
    assert summary(tmp_path, {kernel_name(A): launches}, warmup=1) == {str(A): (1.475, 4)}


def test_the_filter_compares_whole_split_k_launches(tmp_path):
    # main + reduce per launch: 6000 cold, then 1500, 1500, 9500 (spike), 1500, 1600
    main = [5000, 1000, 1000, 9000, 1000, 1100]
    reduce = [1000, 500, 500, 500, 500, 500]
    launches = {kernel_name(SPLIT): main, reduce_kernel_name(SPLIT): reduce}
    assert summary(tmp_path, launches, warmup=1, statistic="last") == {str(SPLIT): (1.6, 4)}


def test_the_baseline_is_filtered_too(tmp_path):
    assert summary(tmp_path, {BASELINE_NAME: SPIKY}, warmup=1) == {BASELINE_NAME: (1.0, 4)}


def test_each_config_has_its_own_cap(tmp_path):
    # B's launches of 3000 ns are under its own cold launch, though over A's
    b = Config(128, 128, 64, 8, 1, 8, 3)
    launches = {kernel_name(A): [2000, 1000, 1000, 1000], kernel_name(b): [4000, 3000, 3000, 3000]}
    assert summary(tmp_path, launches, warmup=1) == {str(A): (1.0, 3), str(b): (3.0, 3)}


def test_without_warmup_the_first_launch_counts_and_caps(tmp_path):
    assert summary(tmp_path, {kernel_name(A): [3000, 1000, 9000, 1000, 1000]}, warmup=0) == {str(A): (1.0, 4)}
