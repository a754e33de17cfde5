"""kill -9 of the tuner at random moments, then the same command again: nothing is lost or corrupted.

While the tuner runs, the results file is read every few milliseconds and must always be valid YAML.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
TRIALS = 20
SIZES = "- {M: 16, N: 16, K: 16}\n- {M: 32, N: 16, K: 16}\n- {M: 16, N: 32, K: 32}\n"
SPACE = "BLOCK_SIZE_M: [16]\nBLOCK_SIZE_N: [16]\nBLOCK_SIZE_K: [16]\nnum_warps: [1]\nnum_stages: [1]\nSPLIT_K: [1]\n" \
        "GROUP_SIZE_M: [1]\nSTATIC_SHAPE: [0]\n"


def _command() -> list[str]:
    return [sys.executable, str(ROOT / "tune_gemm.py"), "--gemm_size_file", "sizes.yaml", "--space", "space.yaml",
            "--interpret", "--iters", "1", "--warmup", "0", "--tuning_results_file", "out.yaml"]


def _sizes_in(path: Path) -> set[tuple]:
    document = yaml.safe_load(path.read_text()) if path.exists() else []
    assert isinstance(document, list) or document is None
    return {(e["M"], e["N"], e["K"]) for e in document or []}


def _run_until(directory: Path, seconds: float | None) -> int | None:
    """Run the tuner; kill -9 it after `seconds` (None: let it finish). Checks the file all along."""
    process = subprocess.Popen(_command(), cwd=directory, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + (seconds if seconds is not None else 600)
    while process.poll() is None and time.monotonic() < deadline:
        _sizes_in(directory / "out.yaml")  # valid YAML at every moment
        time.sleep(0.01)
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        return None
    return process.returncode


def test_kill_nine_at_random_moments_loses_nothing(tmp_path):
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "sizes.yaml").write_text(SIZES)
    (reference / "space.yaml").write_text(SPACE)
    started = time.monotonic()
    assert _run_until(reference, None) == 0
    full_seconds = time.monotonic() - started
    expected = _sizes_in(reference / "out.yaml")
    assert len(expected) == 3

    rng = random.Random(1234)
    killed = 0
    for trial in range(TRIALS):
        directory = tmp_path / f"trial{trial}"
        directory.mkdir()
        (directory / "sizes.yaml").write_text(SIZES)
        (directory / "space.yaml").write_text(SPACE)
        if _run_until(directory, rng.uniform(0.2, full_seconds)) is None:
            killed += 1
        assert _sizes_in(directory / "out.yaml") <= expected
        assert _run_until(directory, None) == 0  # the same command again
        assert _sizes_in(directory / "out.yaml") == expected
        assert not list(directory.glob("generated_kernel*")) and not (directory / "tune_gemm_work").exists()
    assert killed >= TRIALS // 2  # most trials really were interrupted
