"""benchmarks/bench_search.py on the CPU (interpreter smoke mode): every search runs, each is compared with the
exhaustive winner, and each search's winners land in a results file the benchmark reads."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import yaml

from prune.config import Config

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_search.py"
SPACE = {"BLOCK_SIZE_M": [16, 32], "BLOCK_SIZE_N": [16], "BLOCK_SIZE_K": [16], "GROUP_SIZE_M": [1], "SPLIT_K": [1],
         "num_warps": [1], "num_stages": [1, 2, 3]}  # 6 configs of 2 shapes at 32x32x32: refine refines it


def test_each_search_is_compared_with_the_exhaustive_one_and_its_winners_recorded(tmp_path):
    (tmp_path / "space.yaml").write_text(yaml.safe_dump(SPACE))
    (tmp_path / "sizes.yaml").write_text("- {M: 32, N: 32, K: 32}\n")
    command = [sys.executable, str(BENCH), "sizes.yaml", "--interpret", "--space", "space.yaml", "--iters", "2",
               "--warmup", "1", "--retime_iters", "2", "--num_threads", "2", "--searches", "exhaustive,refine",
               "--out", "out"]
    done = subprocess.run(command, check=False, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TRITON_INTERPRET": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    with open(tmp_path / "out.csv") as handle:
        [row] = list(csv.DictReader(handle))
    assert row["configs"] == "6" and row["refine rounds"].count("/") == 2  # three rounds
    assert row["refine within 1%"] in ("yes", "NO") and float(row["refine / exhaustive"]) > 0
    summary = (tmp_path / "out.md").read_text()
    assert "refine within 1% of exhaustive (winners re-timed side by side):" in summary
    for search in ("exhaustive", "refine"):
        [entry] = yaml.safe_load((tmp_path / f"out.{search}.yaml").read_text())
        assert (entry["M"], entry["N"], entry["K"]) == (32, 32, 32)
        winner = Config(entry["BLOCK_SIZE_M"], entry["BLOCK_SIZE_N"], entry["BLOCK_SIZE_K"],
                        num_stages=entry["num_stages"], num_warps=entry["num_warps"])
        assert str(winner) == row[f"{search} winner"]
