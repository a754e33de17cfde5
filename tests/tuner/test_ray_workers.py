"""tuner.ray_workers on the CPU: a local Ray cluster (started here, 2 CPUs) tunes sizes under the interpreter,
including one whose Ray worker is killed mid-task; and the flag checks, which need no Ray."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from tuner.cli import main
from tuner.errors import UserError
from tuner.ray_workers import check_ray_flags, tune_on_ray

SIZES = [(16, 16, 16), (32, 16, 16), (16, 32, 16)]


@pytest.fixture(scope="module")
def cluster():
    """One local cluster for the module: starting Ray takes seconds."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install ray)")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _tune(tmp_path, space_file):
    sizes, results = tmp_path / "sizes.yaml", tmp_path / "out.yaml"
    sizes.write_text("".join(f"- {{M: {m}, N: {n}, K: {k}}}\n" for m, n, k in SIZES))
    code = main(["--gemm_size_file", str(sizes), "--interpret", "--space", str(space_file), "--compare", "--quiet",
                 "--iters", "1", "--warmup", "0", "--ray", "auto", "--tuning_results_file", str(results)])
    return code, results


def _recorded(results):
    return sorted((e["M"], e["N"], e["K"]) for e in yaml.safe_load(results.read_text()))


def _task_pids() -> list[int]:
    """Ray workers running a tune_task now: Ray titles a busy worker after its task."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(b"ray::tune_task"):
                pids.append(int(entry.name))
        except OSError:  # gone meanwhile
            continue
    return pids


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds Ray's workers in /proc")
def test_a_ray_cluster_tunes_every_size_into_one_file_past_a_killed_worker(cluster, tmp_path, space_file,
                                                                            monkeypatch, capsys):
    """One run (Ray's start-up and interpreter tasks are slow on 2 cores): a worker is killed mid-task."""
    monkeypatch.chdir(tmp_path)
    killed = []

    def kill_one_busy_worker():
        deadline = time.monotonic() + 60
        while not killed and time.monotonic() < deadline:
            pids = _task_pids()
            if pids:
                time.sleep(1.0)  # into its size
                os.kill(pids[0], signal.SIGKILL)
                killed.append(pids[0])
            time.sleep(0.1)

    killer = threading.Thread(target=kill_one_busy_worker)
    killer.start()
    code, results = _tune(tmp_path, space_file)
    killer.join()
    out = capsys.readouterr().out
    assert killed, "no Ray worker was seen running a task"
    assert code == 0, out
    assert "Ray cluster auto" in out and out.count("PASS") == len(SIZES)  # winners checked in float64
    assert _recorded(results) == sorted(SIZES)  # Ray ran the killed task again: nothing lost


def test_ray_flags_are_checked_without_ray():
    check_ray_flags(None, 2, "0,1", True)  # no --ray: nothing to check
    for args, message in [(("auto", 2, None, False), "exclude each other"),
                          (("auto", None, "0", False), "exclude each other"),
                          (("auto", None, None, True), "--ray tunes sizes"),
                          ((" ", None, None, False), "needs an address")]:
        with pytest.raises(UserError, match=message):
            check_ray_flags(*args)


def test_without_ray_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(UserError, match="pip install ray"):
        next(tune_on_ray([], "auto", None, False))
