"""The search flags on the command line (CPU, Triton interpreter): --num_threads / --jobs / --search /
--time_budget / --quiet, and a kill -9 in the middle of a size, after which the same command resumes."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import kill_once_timed

from tune_gemm.cli import main
from tune_gemm.compile.faults import ENV_VAR
from tune_gemm.search.order import visiting_order

ROOT = Path(__file__).resolve().parents[2]
SIZE = ["-m", "32", "-n", "32", "-k", "32"]
SPACE = ("BLOCK_SIZE_M: [16, 32]\nBLOCK_SIZE_N: [16, 32]\nBLOCK_SIZE_K: [16, 32]\nGROUP_SIZE_M: [1]\nSPLIT_K: [1]\n"
         "num_warps: [1]\nnum_stages: [1]\nSTATIC_SHAPE: [0]\n")


@pytest.fixture
def space(tmp_path) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(SPACE)  # 8 configs for 32x32x32
    return path


@pytest.mark.parametrize("args,message", [
    (["--num_threads", "0"], "--num_threads must be at least 1, got 0"),
    (["--jobs", "0"], "--jobs must be at least 1, got 0"),
    (["--time_budget", "0"], "--time_budget must be positive (seconds), got 0.0"),
])
def test_bad_numbers_are_one_line_errors(capsys, args, message):
    assert main([*SIZE, "--interpret", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_search_and_compile_pool_are_checked_by_argparse(capsys):
    for flag in ("--search", "--compile_pool"):
        with pytest.raises(SystemExit):
            main([*SIZE, "--interpret", flag, "fastest"])
        assert "invalid choice: 'fastest'" in capsys.readouterr().err


def test_refine_is_the_default_search(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    space = tmp_path / "space24.yaml"
    space.write_text(SPACE.replace("num_stages: [1]", "num_stages: [1, 2, 3]"))  # 24 configs in 8 kernel shapes
    code = main([*SIZE, "--interpret", "--space", str(space), "--iters", "2", "--warmup", "1",
                 "--tuning_results_file", str(tmp_path / "out.yaml")])
    out = capsys.readouterr().out
    assert code == 0, out
    # one per shape, then the best shapes; every round flushed by default, 32^3 being bound by memory (--flush auto)
    assert "refine: round 0 8 configs x 2 launches after L2 flushes, round 1 " in out


def test_quiet_halving_run_prints_a_line_per_stage(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    space = tmp_path / "space16.yaml"
    space.write_text(SPACE.replace("num_stages: [1]", "num_stages: [1, 2]"))  # 16 configs: more than min_keep
    code = main([*SIZE, "--interpret", "--space", str(space), "--iters", "20", "--warmup", "1", "--search", "halving",
                 "--jobs", "2", "--quiet", "--compare", "--tuning_results_file", str(tmp_path / "out.yaml")])
    out = capsys.readouterr().out
    assert code == 0, out
    label = "32x32x32 fp16->fp16 TT"
    assert re.search(rf"^{label} compile: 16 of 16 configs in [\d.]+ s .*; 0 failed$", out, re.MULTILINE)
    assert re.search(rf"^{label} time round 0: 16 of 16 configs in .*; 0 failed, 2 launches each$", out, re.MULTILINE)
    kept = re.search(rf"^{label} time round 1: (\d+) of (\d+) configs in .*; 0 failed$", out, re.MULTILINE)
    assert kept and kept[1] == kept[2] and 8 <= int(kept[1]) < 16  # the best half, or near-ties of the best
    flushed = " after L2 flushes"  # every round's, 32^3 being bound by memory (--flush auto)
    assert f"halving: round 0 16 configs x 2 launches{flushed}, round 1 {kept[1]} configs x 20 launches{flushed}" in out
    assert re.search(rf"^{label} compare: 1 of 1 configs", out, re.MULTILINE) and "PASS" in out
    assert not (tmp_path / "tune_gemm_work").exists()  # the checkpoint went with the recorded size


def test_kill_9_in_the_middle_of_a_size_then_the_same_command_resumes(tmp_path, space):
    command = [sys.executable, str(ROOT / "tune_gemm.py"), *SIZE, "--interpret", "--space", str(space),
               "--iters", "3", "--warmup", "1", "--search", "exhaustive", "--quiet",
               "--tuning_results_file", str(tmp_path / "out.yaml")]
    checkpoint = tmp_path / "tune_gemm_work" / "checkpoints" / "32x32x32.json"
    # the config the search times last hangs in this run, so that the kill always lands with configs left to time
    configs = [f"BM{m}_BN{n}_BK{k}_GM1_SK1_nW1_nS1" for m in (16, 32) for n in (16, 32) for k in (16, 32)]
    stuck = {**os.environ, ENV_VAR: f"{visiting_order(configs)[-1]}=hang"}
    tuner = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=stuck)
    done = kill_once_timed(tuner, checkpoint, at_least=3)
    assert 3 <= done < 8, "the kill came too late to interrupt anything"

    rerun = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"{done} configs timed before" in rerun.stdout
    assert re.search(rf"time: {8 - done} of {8 - done} configs", rerun.stdout)  # only the rest was timed
    assert "tuned 1 size(s), 8 configs timed" in rerun.stdout
    [entry] = yaml.safe_load((tmp_path / "out.yaml").read_text())
    assert (entry["M"], entry["N"], entry["K"]) == (32, 32, 32)
    assert not checkpoint.exists()


def test_progress_the_child_writes_after_the_parents_last_look_is_counted(tmp_path, monkeypatch, capsys, space):
    # The parent reads the child's progress between polls; a child that writes its last lines and exits between two
    # polls left them unread, and the round's line said "7 of 8 configs" (seen once in CI). A parent that never looks
    # while the child runs still counts every config once it ends.
    from tune_gemm.search import timer

    real = timer.run_child
    monkeypatch.setattr(timer, "run_child", lambda job, *args, **kwargs: real(job, *args, **{**kwargs, "watch": None}))
    monkeypatch.chdir(tmp_path)
    code = main([*SIZE, "--interpret", "--space", str(space), "--iters", "4", "--warmup", "1", "--search",
                 "exhaustive", "--quiet", "--tuning_results_file", str(tmp_path / "out.yaml")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert re.search(r"^32x32x32 fp16->fp16 TT time: 8 of 8 configs in .*; 0 failed$", out, re.MULTILINE), out
