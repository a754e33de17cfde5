"""kill -9 of the tuner in each phase of a run, then the same command again: nothing is lost or corrupted.

Each trial kills the tuner as soon as its files show that it has reached one phase (start-up, the first size's
kernels generated, its timing child at work, its timings written, each size recorded), so that the trials cover
every phase of the run once. While the tuner runs, the results file is read every few milliseconds and must always
be valid YAML.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SIZES = "- {M: 16, N: 16, K: 16}\n- {M: 32, N: 16, K: 16}\n- {M: 16, N: 32, K: 32}\n"
SPACE = "BLOCK_SIZE_M: [16]\nBLOCK_SIZE_N: [16]\nBLOCK_SIZE_K: [16]\nnum_warps: [1]\nnum_stages: [1]\nSPLIT_K: [1]\n" \
        "GROUP_SIZE_M: [1]\nSTATIC_SHAPE: [0]\n"
WORK = "tune_gemm_work"


def _command() -> list[str]:
    return [sys.executable, str(ROOT / "tune_gemm.py"), "--gemm_size_file", "sizes.yaml", "--space", "space.yaml",
            "--interpret", "--iters", "1", "--warmup", "0", "--tuning_results_file", "out.yaml"]


def _sizes_in(path: Path) -> set[tuple]:
    document = yaml.safe_load(path.read_text()) if path.exists() else []
    assert isinstance(document, list) or document is None
    return {(e["M"], e["N"], e["K"]) for e in document or []}


def _recorded(count: int) -> Callable[[Path, float], bool]:
    return lambda directory, _: len(_sizes_in(directory / "out.yaml")) >= count


# A phase of the run -> when the tuner is in it: (the run's directory, seconds since its start) -> bool
PHASES: dict[str, Callable[[Path, float], bool]] = {
    "start-up": lambda _, seconds: seconds >= 0.3,
    "first size's work folder made": lambda directory, _: any((directory / WORK).glob("tune*")),
    "first size's timing child at work": lambda directory, _: any((directory / WORK).glob("tune*/ready*")),
    "first size timed, not yet recorded": lambda directory, _: any((directory / WORK).glob("tune*/round*.csv")),
    "one size recorded": _recorded(1),
    "two sizes recorded": _recorded(2),
    "every size recorded, cleaning up": _recorded(3),
}


def _run_until(directory: Path, phase: Callable[[Path, float], bool] | None) -> int | None:
    """Run the tuner; kill -9 it once it is in `phase` (None: let it finish). Checks the file all along."""
    started = time.monotonic()
    process = subprocess.Popen(_command(), cwd=directory, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = started + 600
    while process.poll() is None and time.monotonic() < deadline:
        _sizes_in(directory / "out.yaml")  # valid YAML at every moment
        if phase is not None and phase(directory, time.monotonic() - started):
            break
        time.sleep(0.01)
    if process.poll() is None:
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        return None
    return process.returncode


@pytest.mark.slow
def test_kill_nine_in_every_phase_of_a_run_loses_nothing(tmp_path):
    reference = tmp_path / "reference"
    reference.mkdir()
    (reference / "sizes.yaml").write_text(SIZES)
    (reference / "space.yaml").write_text(SPACE)
    assert _run_until(reference, None) == 0
    expected = _sizes_in(reference / "out.yaml")
    assert len(expected) == 3

    killed = []
    for trial, (name, phase) in enumerate(PHASES.items()):
        directory = tmp_path / f"trial{trial}"
        directory.mkdir()
        (directory / "sizes.yaml").write_text(SIZES)
        (directory / "space.yaml").write_text(SPACE)
        if _run_until(directory, phase) is None:
            killed.append(name)
        assert _sizes_in(directory / "out.yaml") <= expected, name
        assert _run_until(directory, None) == 0, name  # the same command again
        assert _sizes_in(directory / "out.yaml") == expected, name
        assert not list(directory.glob("generated_kernel*")) and not (directory / WORK).exists(), name
    # the trials really were interrupted: a phase of a few hundredths of a second may end between two looks
    assert len(killed) >= len(PHASES) - 2, f"killed only in: {killed}"
