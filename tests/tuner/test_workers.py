"""tuner.workers on the CPU: interpreter workers stand in for GPUs (--interpret --ngpus N).

Several workers tune a size list into one results file, as one worker does; a worker killed in the middle of
a size has the size retried by a fresh worker; a size whose workers keep dying is reported as failed."""

from __future__ import annotations

import functools
import os
import signal
import threading

import yaml
from helpers import problem

from profiling import choose_profiler
from prune.config import Config
from prune.device import INTERPRETER_PROFILE
from tuner import cli
from tuner.cli import main
from tuner.gpus import GpuSelection, pinning_env
from tuner.pipeline import TuneSettings
from tuner.workers import Slot, slots_for, tune_on_workers, worker_settings

SIZES = [(16, 16, 16), (32, 16, 16), (16, 32, 16), (32, 32, 16)]
FAST = ["--iters", "1", "--warmup", "0", "--quiet"]


def _sizes_file(tmp_path, sizes=SIZES):
    path = tmp_path / "sizes.yaml"
    path.write_text("".join(f"- {{M: {m}, N: {n}, K: {k}}}\n" for m, n, k in sizes))
    return path


def _tune(tmp_path, space_file, name, *extra):
    results = tmp_path / name
    code = main(["--gemm_size_file", str(_sizes_file(tmp_path)), "--interpret", "--space", str(space_file),
                 "--tuning_results_file", str(results), *FAST, *extra])
    return code, results


def _sizes(results):
    return sorted((e["M"], e["N"], e["K"]) for e in yaml.safe_load(results.read_text()))


def _kill_later(pid: int, seconds: float = 1.5) -> None:
    """SIGKILL the worker while it tunes its size (a tiny size takes several seconds under the interpreter)."""
    threading.Timer(seconds, lambda: os.kill(pid, signal.SIGKILL)).start()


def test_two_workers_record_what_one_worker_records(tmp_path, space_file, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    code, alone = _tune(tmp_path, space_file, "alone.yaml")  # the reference run: no need to check it
    assert code == 0, capfd.readouterr()
    capfd.readouterr()
    code, spread = _tune(tmp_path, space_file, "spread.yaml", "--ngpus", "2", "--compare")
    out = capfd.readouterr().out
    assert code == 0, out
    assert "interpreter workers 0,1" in out and out.count("PASS") == len(SIZES)
    assert "[interpreter 0]" in out and "[interpreter 1]" in out  # both took sizes
    assert _sizes(spread) == _sizes(alone) == sorted(SIZES)
    for entry in yaml.safe_load(spread.read_text()):  # each winner passed --compare (float64 reference) above
        Config.from_mapping(entry)  # and its entry holds the whole config
    assert not (tmp_path / "tune_gemm_work").exists()


def test_a_killed_worker_has_its_size_tuned_by_another(tmp_path, space_file, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    killed = []

    def kill_first(pid, size):
        if not killed:
            killed.append(size)
            _kill_later(pid)

    monkeypatch.setattr(cli, "tune_on_workers", functools.partial(tune_on_workers, on_assign=kill_first))
    code, results = _tune(tmp_path, space_file, "out.yaml", "--ngpus", "2", "--compare")
    out = capfd.readouterr().out
    assert code == 0, out
    assert f"worker died (exit code -9) tuning {killed[0].label}; the size goes back to the queue" in out
    assert _sizes(results) == sorted(SIZES)  # every size recorded, the killed one included
    assert out.count("PASS") == len(SIZES)


def test_a_size_whose_workers_keep_dying_fails_and_the_rest_go_on(tmp_path, small_space, monkeypatch):
    monkeypatch.chdir(tmp_path)
    doomed = problem(16, 16, 16)
    assigned = []

    def kill_doomed(pid, size):
        assigned.append(size)
        if size == doomed:
            _kill_later(pid, 1.0)

    settings = TuneSettings(profiler=choose_profiler("auto", "interpreter"), interpret=True, iters=1, warmup=0,
                            space=small_space)
    done = list(tune_on_workers([doomed, problem(32, 16, 16)], slots_for(GpuSelection((0, 1)), "none", True),
                                settings, compare=False, retries=1, on_assign=kill_doomed))
    by_size = {d.problem: d for d in done}
    assert assigned.count(doomed) == 2  # first try and one retry
    assert by_size[doomed].outcome is None and "its worker died 2 times" in by_size[doomed].error
    other = by_size[problem(32, 16, 16)]
    assert other.error is None and other.outcome.winner is not None and other.where.startswith("interpreter")


def test_each_worker_gets_its_share_of_the_compile_workers_and_its_pin():
    """N workers get --num_threads // N compile workers each: together they fill the host, no more."""
    settings = TuneSettings(profiler=choose_profiler("auto", "interpreter"), num_threads=7)
    slot = Slot("GPU 3", pinning_env(3, "nvidia", environ={}), INTERPRETER_PROFILE)
    assert worker_settings(settings, slot, 3).num_threads == 2
    assert worker_settings(settings, slot, 8).num_threads == 1
    assert worker_settings(settings, slot, 3).child_env == {"CUDA_VISIBLE_DEVICES": "3"}
