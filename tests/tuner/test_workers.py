"""tune_gemm.run.workers on the CPU: interpreter workers stand in for GPUs (--interpret --ngpus N).

Several workers tune a size list into one results file, as one worker does; a worker killed in the middle of
a size has the size retried by a fresh worker; a size whose workers keep dying is reported as failed. With fewer
sizes than workers a size is split into config chunks (tune_gemm.run.chunks), whose best configs are timed again; a
worker killed in a chunk has the chunk retried. The work queue's bookkeeping is tune_gemm.run.items' (test_items)."""

from __future__ import annotations

import functools
import os
import signal
import threading

import yaml
from helpers import problem, small_space_names

from tune_gemm import cli
from tune_gemm.cli import main
from tune_gemm.core.config import Config
from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.measure import choose_profiler
from tune_gemm.run.chunks import Chunk
from tune_gemm.run.gpus import GpuSelection, pinning_env
from tune_gemm.run.workers import Slot, slots_for, tune_on_workers, worker_settings
from tune_gemm.search.settings import TuneSettings

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
    assert "chunk" not in out  # as many sizes as workers and more: each size tuned whole
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

    def kill_doomed(pid, work):
        assigned.append(work.problem)
        if work.problem == doomed:
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


# Chunks: 32x32x32 keeps 24 configs of the small space; chunks of at least 4 configs let tiny spaces be split.
SPLIT = problem(32, 32, 32)
MIN_CHUNK = 4


def _chunked(assigned: list, done: list, kill=None):
    """cli's tune_on_workers with small chunks, recording each item handed out and each SizeDone yielded."""
    def on_assign(pid, work):
        assigned.append((pid, work))
        if kill:
            kill(pid, work)

    def chunked(*args, **kwargs):
        for size_done in tune_on_workers(*args, on_assign=on_assign, min_chunk=MIN_CHUNK, **kwargs):
            done.append(size_done)
            yield size_done
    return chunked


def _tune_split(tmp_path, space_file, *extra):
    results = tmp_path / "out.yaml"
    code = main(["--gemm_size_file", str(_sizes_file(tmp_path, [(SPLIT.M, SPLIT.N, SPLIT.K)])), "--interpret",
                 "--space", str(space_file), "--tuning_results_file", str(results), "--ngpus", "2", *FAST, *extra])
    return code, results


def test_one_size_is_split_over_the_workers_and_its_chunks_best_timed_again(tmp_path, space_file, monkeypatch,
                                                                            capfd):
    monkeypatch.chdir(tmp_path)
    assigned, done = [], []
    monkeypatch.setattr(cli, "tune_on_workers", _chunked(assigned, done))
    code, results = _tune_split(tmp_path, space_file, "--compare")
    out = capfd.readouterr().out
    assert code == 0, out
    names = small_space_names(SPLIT)
    assert f"{SPLIT.label}: {len(names)} configs in 2 chunks over 2 workers" in out
    (first, chunk1), (second, chunk2), (_, final) = assigned
    assert (chunk1.chunk, chunk2.chunk, final.kind) == (Chunk(0, 2), Chunk(1, 2), "final round")
    assert first != second  # both workers tuned a chunk
    for index in range(2):  # the 4 best of each chunk, from its own share of the configs
        assert len(set(final.finalists) & set(names[index::2])) == 4
    [size_done] = done
    outcome = size_done.outcome
    assert sorted(outcome.compiled.compiled) == sorted(names)  # each config in exactly one chunk
    assert outcome.searched.timed == len(names)
    assert sorted(outcome.timings["config"]) == sorted(final.finalists)  # the final round's times decide
    assert str(outcome.winner) == outcome.timings.loc[0, "config"] and str(outcome.winner) in names
    assert outcome.winner_time_us == outcome.timings["time_us"].min()
    [entry] = yaml.safe_load(results.read_text())
    assert str(Config.from_mapping(entry)) == str(outcome.winner)
    assert out.count("PASS") == 1  # --compare checked the size's winner, once
    assert not (tmp_path / "tune_gemm_work").exists()  # chunks' scratch files and checkpoints gone once recorded


def test_a_worker_killed_mid_chunk_has_the_chunk_retried_and_nothing_is_lost(tmp_path, space_file, monkeypatch,
                                                                             capfd):
    monkeypatch.chdir(tmp_path)
    assigned, done = [], []

    def kill_first_chunk(pid, work):
        if work.chunk == Chunk(0, 2) and len(assigned) == 1:
            _kill_later(pid)

    monkeypatch.setattr(cli, "tune_on_workers", _chunked(assigned, done, kill_first_chunk))
    code, results = _tune_split(tmp_path, space_file)
    out = capfd.readouterr().out
    assert code == 0, out
    assert (f"worker died (exit code -9) tuning {SPLIT.label} chunk 1 of 2; the chunk goes back to the queue"
            in out)
    assert [w.chunk for _, w in assigned if w.chunk].count(Chunk(0, 2)) == 2
    [size_done] = done
    assert size_done.outcome.searched.timed == len(small_space_names(SPLIT))  # the retried chunk timed all of its share
    assert len(yaml.safe_load(results.read_text())) == 1
    assert not (tmp_path / "tune_gemm_work").exists()
