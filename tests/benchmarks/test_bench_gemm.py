"""benchmarks/bench_gemm.py on the CPU: its argument split (the GPU part runs on the device machine)."""

from __future__ import annotations

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
