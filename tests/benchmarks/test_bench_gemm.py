"""benchmarks/bench_gemm.py on the CPU: its argument split and its CSV (the GPU part runs on the device machine)."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_gemm.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_gemm", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_arguments_after_dashes_go_to_the_tuner():
    split = _bench()._split_at_dashes
    assert split(["r.yaml", "--tune", "s.yaml", "--", "--search", "halving"]) == (
        ["r.yaml", "--tune", "s.yaml"], "--", ["--search", "halving"])
    assert split(["r.yaml", "--csv", "b.csv"]) == (["r.yaml", "--csv", "b.csv"], "", [])


def test_the_csv_is_rewritten_whole_after_each_size(tmp_path):
    write_csv = _bench()._write_csv
    path = tmp_path / "bench.csv"
    rows = [{"size": "16x16x16 fp16->fp16 TT", "tune_gemm us": 5.28}]
    write_csv(path, rows)
    rows.append({"size": "4096x4096x4096 fp16->fp16 TT", "tune_gemm us": 224.35})
    write_csv(path, rows)
    with open(path, newline="") as handle:
        read = list(csv.DictReader(handle))
    assert [row["size"] for row in read] == [row["size"] for row in rows]
    assert read[1]["tune_gemm us"] == "224.35"
    assert [p.name for p in tmp_path.iterdir()] == ["bench.csv"]  # no temporary file left behind
