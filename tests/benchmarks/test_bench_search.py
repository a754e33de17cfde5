"""benchmarks/bench_search.py on the CPU (interpreter smoke mode): every search runs, each is compared with the
exhaustive winner, and each search's winners land in a results file the benchmark reads."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import yaml
from helpers import kill_once_timed

from tune_gemm.compile.faults import ENV_VAR
from tune_gemm.core.config import Config
from tune_gemm.search.order import visiting_order

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_search.py"
# 6 configs of 2 shapes at 32x32x32: refine refines it
SPACE = {"BLOCK_SIZE_M": [16, 32], "BLOCK_SIZE_N": [16], "BLOCK_SIZE_K": [16], "GROUP_SIZE_M": [1], "SPLIT_K": [1],
         "num_warps": [1], "num_stages": [1, 2, 3], "STATIC_SHAPE": [0]}


def _command(tmp_path: Path, searches: str, *extra: str) -> list[str]:
    (tmp_path / "space.yaml").write_text(yaml.safe_dump(SPACE))
    (tmp_path / "sizes.yaml").write_text("- {M: 32, N: 32, K: 32}\n")
    return [sys.executable, str(BENCH), "sizes.yaml", "--interpret", "--space", "space.yaml", "--iters", "2",
            "--warmup", "1", "--retime_iters", "2", "--num_threads", "2", "--searches", searches, "--out", "out",
            *extra]


def test_each_search_is_compared_with_the_exhaustive_one_and_its_winners_recorded(tmp_path):
    command = _command(tmp_path, "exhaustive,refine")
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


def test_a_search_cut_short_resumes_from_its_run_dir(tmp_path):
    command = _command(tmp_path, "exhaustive", "--run_dir", "runs")
    checkpoint = tmp_path / "runs" / "32x32x32" / "exhaustive" / "tune_gemm_work" / "checkpoints" / "32x32x32.json"
    # the config searched last hangs in the first run, so that the kill lands with configs left to time
    configs = [f"BM{m}_BN16_BK16_GM1_SK1_nW1_nS{s}" for m in (16, 32) for s in (1, 2, 3)]
    stuck = {**os.environ, "TRITON_INTERPRET": "1", ENV_VAR: f"{visiting_order(configs)[-1]}=hang"}
    bench = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=stuck)
    done = kill_once_timed(bench, checkpoint, at_least=2)
    assert 2 <= done < 6, "the kill came too late to interrupt anything"

    rerun = subprocess.run(command, check=False, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "TRITON_INTERPRET": "1"})
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert f"{done} configs timed before" in rerun.stdout
    with open(tmp_path / "out.csv") as handle:
        [row] = list(csv.DictReader(handle))
    assert row["exhaustive s"].endswith("(resumed)") and row["exhaustive rounds"] == "6x2"
    assert not checkpoint.exists()  # recorded: nothing left to resume
