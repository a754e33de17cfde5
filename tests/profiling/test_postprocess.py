"""tune_gemm.measure.postprocess (CSV -> one time per config) and tune_gemm.measure.schema (append_rows, per_launch_totals)."""

from __future__ import annotations

import csv
from pathlib import Path

import pandas as pd
import pytest

from tune_gemm.core.config import Config
from tune_gemm.generate.naming import kernel_name, reduce_kernel_name
from tune_gemm.measure.postprocess import STATISTICS, load_timings, summarize
from tune_gemm.measure.schema import (
    BASELINE_NAME,
    COLUMNS,
    KernelTiming,
    append_rows,
    per_launch_totals,
)

A = Config(64, 64, 32, 8, 1, 4, 3)
B = Config(128, 128, 64, 8, 1, 8, 3)
SPLIT = Config(16, 64, 64, 1, 4, 4, 2)  # split-K: main kernel + _reduce kernel per launch
CUBLAS = "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off"


def write_csv(path: Path, rows: list[tuple]) -> Path:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(rows)
    return path


def rows_for(name: str, durations: list[float]) -> list[tuple]:
    return [(name, instance, duration) for instance, duration in enumerate(durations)]


def as_dict(table: pd.DataFrame) -> dict[str, tuple[float, int]]:
    return {row.config: (row.time_us, row.instances) for row in table.itertuples()}


def test_schema_columns():
    assert COLUMNS == ("kernel_name", "instance", "duration_ns")
    assert BASELINE_NAME == "torch.matmul"
    assert STATISTICS == ("median", "last")


# --- summarize ------------------------------------------------------------------------------------------------------


def test_warmup_instances_dropped(tmp_path):
    # Two huge warm-up launches (instances 0, 1) then 3 timed ones.
    path = write_csv(tmp_path / "t.csv", rows_for(kernel_name(A), [900_000, 800_000, 3000, 1000, 2000]))
    table = summarize(load_timings(path), warmup=2)
    assert list(table.columns) == ["config", "time_us", "instances"]
    assert as_dict(table) == {str(A): (2.0, 3)}


def test_warmup_zero_keeps_everything(tmp_path):
    path = write_csv(tmp_path / "t.csv", rows_for(kernel_name(A), [9000, 1000, 2000]))
    assert as_dict(summarize(load_timings(path), warmup=0)) == {str(A): (2.0, 3)}


def test_warmup_beyond_all_instances_gives_nothing(tmp_path):
    path = write_csv(tmp_path / "t.csv", rows_for(kernel_name(A), [1000, 2000]))
    table = summarize(load_timings(path), warmup=5)
    assert table.empty


def test_median_versus_last(tmp_path):
    # Timed launches (warmup=1): 4000, 1000, 3000, 2000 -> median 2500 ns, last 2000 ns.
    path = write_csv(tmp_path / "t.csv", rows_for(kernel_name(A), [50_000, 4000, 1000, 3000, 2000]))
    frame = load_timings(path)
    assert as_dict(summarize(frame, warmup=1, statistic="median")) == {str(A): (2.5, 4)}
    assert as_dict(summarize(frame, warmup=1, statistic="last")) == {str(A): (2.0, 4)}


def test_median_is_the_default(tmp_path):
    path = write_csv(tmp_path / "t.csv", rows_for(kernel_name(A), [1000, 7000, 2000]))
    assert as_dict(summarize(load_timings(path), warmup=0)) == {str(A): (2.0, 3)}


def test_last_means_highest_instance_not_last_row(tmp_path):
    rows = [(kernel_name(A), 3, 3000), (kernel_name(A), 1, 1000), (kernel_name(A), 2, 2000)]
    path = write_csv(tmp_path / "t.csv", rows)
    assert as_dict(summarize(load_timings(path), warmup=0, statistic="last")) == {str(A): (3.0, 3)}


def test_unknown_statistic(tmp_path):
    path = write_csv(tmp_path / "t.csv", rows_for(kernel_name(A), [1000]))
    with pytest.raises(ValueError, match="statistic"):
        summarize(load_timings(path), warmup=0, statistic="mean")


def test_split_k_reduce_rows_added_launch_by_launch(tmp_path):
    main = [10_000, 1000, 1100, 1200]
    reduce = [5_000, 500, 900, 100]  # per launch totals: 1500, 2000, 1300 -> median 1500, last 1300
    rows = rows_for(kernel_name(SPLIT), main) + rows_for(reduce_kernel_name(SPLIT), reduce)
    path = write_csv(tmp_path / "t.csv", rows)
    frame = load_timings(path)
    assert as_dict(summarize(frame, warmup=1, statistic="median")) == {str(SPLIT): (1.5, 3)}
    assert as_dict(summarize(frame, warmup=1, statistic="last")) == {str(SPLIT): (1.3, 3)}


def test_reduce_rows_interleaved(tmp_path):
    rows = []
    for instance, (main, red) in enumerate([(1000, 100), (2000, 200), (3000, 300)]):
        rows += [(kernel_name(SPLIT), instance, main), (reduce_kernel_name(SPLIT), instance, red)]
    path = write_csv(tmp_path / "t.csv", rows)
    assert as_dict(summarize(load_timings(path), warmup=0)) == {str(SPLIT): (2.2, 3)}


def test_baseline_kept_and_unknown_kernels_ignored(tmp_path):
    rows = (rows_for(kernel_name(A), [0, 4000, 4000])
            + rows_for(BASELINE_NAME, [0, 3000, 5000])
            + rows_for(CUBLAS, [0, 1, 1])  # a BLAS kernel the profiler saw: not a subject
            + rows_for("matmul_kernel_not_a_config", [0, 1, 1])
            + rows_for("triton_poi_fused_0", [0, 1, 1]))
    path = write_csv(tmp_path / "t.csv", rows)
    table = summarize(load_timings(path), warmup=1)
    assert as_dict(table) == {BASELINE_NAME: (4.0, 2), str(A): (4.0, 2)}
    assert set(table["config"]) == {BASELINE_NAME, str(A)}


def test_sorted_fastest_first(tmp_path):
    rows = (rows_for(kernel_name(A), [0, 3000, 3000])
            + rows_for(kernel_name(B), [0, 1000, 1000])
            + rows_for(BASELINE_NAME, [0, 2000, 2000])
            + rows_for(kernel_name(SPLIT), [0, 4000, 4000]) + rows_for(reduce_kernel_name(SPLIT), [0, 500, 500]))
    path = write_csv(tmp_path / "t.csv", rows)
    table = summarize(load_timings(path), warmup=1)
    assert list(table["config"]) == [str(B), BASELINE_NAME, str(A), str(SPLIT)]
    assert list(table["time_us"]) == [1.0, 2.0, 3.0, 4.5]
    assert list(table.index) == [0, 1, 2, 3]
    assert Config.parse(table.loc[0, "config"]) == B


def test_kernel_name_with_rocm_size_prefix_maps_to_config(tmp_path):
    rows = rows_for(f"matmul_kernel_M16_N16_K16_{A}", [0, 1000])
    path = write_csv(tmp_path / "t.csv", rows)
    assert as_dict(summarize(load_timings(path), warmup=1)) == {str(A): (1.0, 1)}


# --- load_timings ---------------------------------------------------------------------------------------------------


def test_load_timings_missing_file(tmp_path):
    frame = load_timings(tmp_path / "none.csv")
    assert frame.empty and list(frame.columns) == list(COLUMNS)


def test_load_timings_empty_file(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("")
    frame = load_timings(path)
    assert frame.empty and list(frame.columns) == list(COLUMNS)


def test_load_timings_header_only(tmp_path):
    path = write_csv(tmp_path / "t.csv", [])
    frame = load_timings(path)
    assert frame.empty and list(frame.columns) == list(COLUMNS)


def test_summarize_of_empty_frame(tmp_path):
    table = summarize(load_timings(tmp_path / "none.csv"), warmup=1)
    assert table.empty
    assert "time_us" in table.columns and "config" in table.columns


def test_load_timings_missing_columns(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("kernel_name,duration_ns\nmatmul_kernel_BM16_BN16_BK16_GM1_SK1_nW4_nS2,100\n")
    with pytest.raises(ValueError, match=r"missing columns \['instance'\]"):
        load_timings(path)


def test_load_timings_not_a_csv_of_ours(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(ValueError) as info:
        load_timings(path)
    assert str(path) in str(info.value) and "duration_ns" in str(info.value)


def test_load_timings_values(tmp_path):
    path = write_csv(tmp_path / "t.csv", [(kernel_name(A), 0, 1234.5), (BASELINE_NAME, 0, 99)])
    frame = load_timings(path)
    assert list(frame["kernel_name"]) == [kernel_name(A), BASELINE_NAME]
    assert list(frame["instance"]) == [0, 0]
    assert list(frame["duration_ns"]) == [1234.5, 99.0]


# --- schema ---------------------------------------------------------------------------------------------------------


def test_append_rows_writes_header_once(tmp_path):
    path = tmp_path / "t.csv"
    append_rows(path, [KernelTiming(kernel_name(A), 0, 1000.0), KernelTiming(kernel_name(A), 1, 2000.0)])
    append_rows(path, [KernelTiming(BASELINE_NAME, 0, 1500.0)])
    append_rows(path, [])
    lines = path.read_text().splitlines()
    assert lines == [
        "kernel_name,instance,duration_ns",
        f"{kernel_name(A)},0,1000.0",
        f"{kernel_name(A)},1,2000.0",
        "torch.matmul,0,1500.0",
    ]


def test_append_rows_to_empty_existing_file_writes_header(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("")
    append_rows(path, [KernelTiming(kernel_name(B), 0, 10.0)])
    assert path.read_text().splitlines() == ["kernel_name,instance,duration_ns", f"{kernel_name(B)},0,10.0"]


def test_append_rows_empty_list_on_new_file_writes_only_header(tmp_path):
    path = tmp_path / "t.csv"
    append_rows(path, [])
    assert path.read_text().splitlines() == ["kernel_name,instance,duration_ns"]


def test_append_rows_then_summarize(tmp_path):
    path = tmp_path / "t.csv"
    append_rows(path, [KernelTiming(kernel_name(A), i, d) for i, d in enumerate([9e6, 1000.0, 3000.0])])
    append_rows(path, [KernelTiming(kernel_name(B), i, d) for i, d in enumerate([9e6, 500.0, 700.0])])
    assert as_dict(summarize(load_timings(path), warmup=1)) == {str(B): (0.6, 2), str(A): (2.0, 2)}


def test_per_launch_totals_sums_kernels_of_each_launch():
    rows = [KernelTiming("gemm_a", 0, 100.0), KernelTiming("splitk_reduce", 0, 20.0),
            KernelTiming("gemm_a", 2, 300.0), KernelTiming("gemm_a", 1, 200.0), KernelTiming("splitk_reduce", 1, 5.0)]
    assert per_launch_totals(rows, BASELINE_NAME) == [
        KernelTiming(BASELINE_NAME, 0, 120.0),
        KernelTiming(BASELINE_NAME, 1, 205.0),
        KernelTiming(BASELINE_NAME, 2, 300.0),
    ]


def test_per_launch_totals_empty():
    assert per_launch_totals([], BASELINE_NAME) == []
