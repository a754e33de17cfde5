"""tune_gemm.run.ray_workers on the CPU: a local Ray cluster (started here, 2 CPUs) tunes sizes under the interpreter,
whole when there are as many sizes as workers or more, including one whose Ray worker is killed mid-task; one size
split in 2 chunks, one of whose workers is killed mid-chunk (Ray runs the chunk again), or with no retries (the
other chunk's configs decide); the probe of the cluster's nodes; and the flag checks, which need no Ray."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from helpers import problem, small_space_file_space, small_space_names

from tune_gemm import cli
from tune_gemm.cli import main
from tune_gemm.core.config import Config
from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.core.errors import UserError
from tune_gemm.measure import choose_profiler
from tune_gemm.run.ray_workers import (
    check_ray_flags,
    probe_nodes,
    task_options,
    tune_on_ray,
)
from tune_gemm.search.settings import TuneSettings

SIZES = [(16, 16, 16), (32, 16, 16), (16, 32, 16)]
SPLIT = problem(32, 32, 32)  # 24 configs of the small space: 2 chunks of 12 with chunks of at least 4 allowed
# Launches per config where a test kills a worker mid-chunk: in a Ray worker whose timing child is warm from an
# earlier task (reused, tune_gemm.measure.standby) a chunk of 1 launch a config lasts 1.5 s, both at work 1.1 s of it, too
# short for _kill_a_busy_worker; with 6, 8 s and 6.6 s (development machine).
CHUNK_ITERS = 6


@pytest.fixture(scope="module")
def cluster():
    """One local cluster for the module: starting Ray takes seconds."""
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install ray)")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


def _tune(tmp_path, space_file, sizes_tuned=SIZES, iters: int = 1):
    sizes, results = tmp_path / "sizes.yaml", tmp_path / "out.yaml"
    sizes.write_text("".join(f"- {{M: {m}, N: {n}, K: {k}}}\n" for m, n, k in sizes_tuned))
    code = main(["--gemm_size_file", str(sizes), "--interpret", "--space", str(space_file), "--compare", "--quiet",
                 "--iters", str(iters), "--warmup", "0", "--ray", "auto", "--tuning_results_file", str(results)])
    return code, results


def _recorded(results):
    return sorted((e["M"], e["N"], e["K"]) for e in yaml.safe_load(results.read_text()))


def _started_here(pid: int) -> bool:
    """Whether process `pid` descends from this one: a worker of this test's cluster, not of another run's."""
    while pid > 1:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])  # the parent's pid: the field after the state
        if pid == os.getpid():
            return True
    return False


def _task_pids() -> list[int]:
    """Ray workers of this cluster running a tune_task now: Ray titles a busy worker after its task."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes().startswith(b"ray::tune_task") \
                    and _started_here(int(entry.name)):
                pids.append(int(entry.name))
        except OSError:  # gone meanwhile
            continue
    return pids


def _kill_a_busy_worker(busy: int = 1) -> tuple[threading.Thread, list[int]]:
    """A thread that SIGKILLs one Ray worker running a tune_task, once `busy` of them run at once, a second into
    its item; and the list it adds the killed pid to."""
    killed: list[int] = []

    def kill():
        deadline = time.monotonic() + 60
        while not killed and time.monotonic() < deadline:
            if len(_task_pids()) >= busy:
                time.sleep(1.0)  # into its item
                for pid in _task_pids()[:1]:  # one still at it: a worker done meanwhile would lose nothing
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)
            time.sleep(0.1)

    killer = threading.Thread(target=kill)
    killer.start()
    return killer, killed


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds Ray's workers in /proc")
@pytest.mark.slow  # tuning tasks on a Ray cluster
def test_a_ray_cluster_tunes_every_size_into_one_file_past_a_killed_worker(cluster, tmp_path, space_file,
                                                                            monkeypatch, capsys):
    """One run (Ray's start-up and interpreter tasks are slow on 2 cores): a worker is killed mid-task."""
    monkeypatch.chdir(tmp_path)
    killer, killed = _kill_a_busy_worker()
    code, results = _tune(tmp_path, space_file)
    killer.join()
    out = capsys.readouterr().out
    assert killed, "no Ray worker was seen running a task"
    assert code == 0, out
    assert "Ray cluster auto" in out and out.count("PASS") == len(SIZES)  # winners checked in float64
    assert _recorded(results) == sorted(SIZES)  # Ray ran the killed task again: nothing lost
    assert "Ray cluster:" not in out and "chunks" not in out  # as many sizes as workers or more: whole, no probe


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds Ray's workers in /proc")
@pytest.mark.slow  # tuning tasks on a Ray cluster
def test_one_size_is_split_over_the_cluster_past_a_worker_killed_mid_chunk(cluster, tmp_path, space_file,
                                                                           monkeypatch, capsys):
    """One run: the size's 2 chunks share out its configs, one chunk's worker is killed (both chunks are running
    then: the final round runs alone) and Ray runs the chunk again, and the chunks' best configs are timed again
    in one more task for the winner, which --compare checks."""
    monkeypatch.chdir(tmp_path)
    done = []

    def small_chunks(*args, **kwargs):
        for size_done in tune_on_ray(*args, min_chunk=4, **kwargs):
            done.append(size_done)
            yield size_done

    monkeypatch.setattr(cli, "tune_on_ray", small_chunks)
    killer, killed = _kill_a_busy_worker(busy=2)
    code, results = _tune(tmp_path, space_file, [(SPLIT.M, SPLIT.N, SPLIT.K)], iters=CHUNK_ITERS)
    killer.join()
    out = capsys.readouterr().out
    assert killed, "no two Ray workers were seen running chunks"
    assert code == 0, out
    names = small_space_names(SPLIT)
    assert f"Ray cluster: 2 CPUs, all {INTERPRETER_PROFILE.name}" in out  # the node probed
    assert f"{SPLIT.label}: {len(names)} configs in 2 chunks over 2 workers" in out
    [size_done] = done
    outcome = size_done.outcome
    assert outcome.searched.timed == len(names)  # each config timed in its chunk, the killed chunk's too
    # each config in one chunk (a config the killed attempt timed is resumed from its checkpoint, not compiled again)
    assert set(outcome.compiled.compiled) <= set(names)
    assert len(outcome.compiled.compiled) == len(set(outcome.compiled.compiled))
    assert not outcome.searched.note  # no chunk failed
    for index in range(2):  # the final round: the 4 best of each chunk, from its own share of the configs
        assert len(set(outcome.timings["config"]) & set(names[index::2])) == 4
    assert str(outcome.winner) == outcome.timings.loc[0, "config"] and str(outcome.winner) in names
    [entry] = yaml.safe_load(results.read_text())
    assert str(Config.from_mapping(entry)) == str(outcome.winner)
    assert out.count("PASS") == 1  # --compare checked the size's winner, once
    assert not (tmp_path / "tune_gemm_work").exists()  # chunks' scratch files and checkpoints gone once recorded


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="finds Ray's workers in /proc")
@pytest.mark.slow  # tuning tasks on a Ray cluster
def test_a_chunk_lost_after_its_retries_leaves_the_winner_to_the_other(cluster, tmp_path, capsys):
    settings = TuneSettings(profiler=choose_profiler("auto", "interpreter"), interpret=True, iters=CHUNK_ITERS,
                            warmup=0, space=small_space_file_space(), workdir=tmp_path)
    killer, killed = _kill_a_busy_worker(busy=2)
    [size_done] = tune_on_ray([SPLIT], "auto", settings, compare=False, retries=0, min_chunk=4)
    killer.join()
    assert killed, "no two Ray workers were seen running chunks"
    assert "failed on ray: lost on the Ray cluster after 0 retries" in capsys.readouterr().out
    names, outcome = small_space_names(SPLIT), size_done.outcome
    assert size_done.error is None and outcome.searched.timed == len(names) // 2  # the other chunk's share
    assert "a chunk failed" in outcome.searched.note and str(outcome.winner) in names


@pytest.mark.slow  # with the tests above: the cluster starts only for them
def test_the_probe_reads_each_nodes_device(cluster):
    assert probe_nodes(cluster, task_options(True), interpret=True) == [INTERPRETER_PROFILE]
    assert probe_nodes(cluster, task_options(False), interpret=False) == []  # no node with a GPU: no probe


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
