"""tune_gemm.run.chunks: which sizes are split into how many chunks, and that chunks share out a size's configs; and a
chunk tuned by tune_size (on the CPU) keeps to its share, in files of its own."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from helpers import problem

from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.measure import ProfilerChoice
from tune_gemm.run.chunks import (
    MIN_CHUNK_CONFIGS,
    Chunk,
    Work,
    alike,
    chunk_count,
    plan,
    plan_work,
)
from tune_gemm.run.pipeline import tune_size
from tune_gemm.search.order import visiting_order
from tune_gemm.search.settings import TuneSettings
from tune_gemm.space.prune import prune
from tune_gemm.space.ranges import space_for

BIG, SMALL = problem(4096, 4096, 4096), problem(16, 16, 16)


@pytest.mark.parametrize("configs, sizes, workers, expected", [
    (10_000, 1, 4, 4),  # one size, every worker gets a chunk
    (10_000, 3, 8, 3),  # fewer sizes than workers: workers / sizes, rounded up
    (10_000, 4, 4, 1),  # a size per worker already
    (10_000, 6, 4, 1),
    (3 * MIN_CHUNK_CONFIGS + 5, 1, 8, 3),  # no chunk under the minimum
    (MIN_CHUNK_CONFIGS + 5, 1, 8, 1),  # too few configs to split at all
    (7, 1, 2, 1),
])
def test_chunk_count(configs, sizes, workers, expected):
    assert chunk_count(configs, sizes, workers) == expected


def test_plan_splits_each_size_and_keeps_whole_ones_whole():
    items = plan_work([(BIG, 2024), (SMALL, 8)], workers=5)
    assert items == [Work(BIG, Chunk(0, 3)), Work(BIG, Chunk(1, 3)), Work(BIG, Chunk(2, 3)), Work(SMALL)]
    assert plan_work([(BIG, 2024), (SMALL, 8)], workers=2) == [Work(BIG), Work(SMALL)]
    assert plan_work([(SMALL, 8)], workers=2, min_chunk=4) == [Work(SMALL, Chunk(0, 2)), Work(SMALL, Chunk(1, 2))]
    assert [w.label for w in items[2:]] == [f"{BIG.label} chunk 3 of 3", SMALL.label]
    assert (items[0].kind, items[3].kind, Work(BIG, finalists=("a",)).kind) == ("chunk", "size", "final round")


def test_sizes_are_split_only_when_fewer_than_workers_and_the_gpus_alike(small_space, capsys):
    split, other = problem(32, 32, 32), problem(32, 32, 64)  # 30 and 40 configs of the small space
    assert plan([split, other], 2, INTERPRETER_PROFILE, small_space, 4) == [Work(split), Work(other)]
    assert plan([split], 2, INTERPRETER_PROFILE, small_space, 4) == [Work(split, Chunk(0, 2)), Work(split, Chunk(1, 2))]
    assert plan([split], 2, INTERPRETER_PROFILE, small_space) == [Work(split)]  # its few configs: under the minimum
    assert plan([split], 2, None, small_space, 4) == [Work(split)]  # unlike or unknown GPUs
    assert capsys.readouterr().out == f"{split.label}: 30 configs in 2 chunks over 2 workers\n"


def test_the_gpus_are_alike_only_when_every_one_is_known_and_the_same():
    another = replace(INTERPRETER_PROFILE, name="another GPU")
    assert alike([INTERPRETER_PROFILE, replace(INTERPRETER_PROFILE)]) == INTERPRETER_PROFILE
    assert alike([INTERPRETER_PROFILE, another]) is None
    assert alike([INTERPRETER_PROFILE, None]) is None  # a GPU whose facts could not be read
    assert alike([]) is None


@pytest.mark.parametrize("count", [2, 3, 5])
def test_chunks_share_out_every_config_once_and_each_samples_the_whole_space(count):
    configs = visiting_order(prune(BIG, INTERPRETER_PROFILE, space_for("nvidia")).configs)
    shares = [Chunk(index, count).take(configs) for index in range(count)]
    assert Counter(str(c) for share in shares for c in share) == Counter(str(c) for c in configs)  # each once
    assert max(map(len, shares)) - min(map(len, shares)) <= 1
    # the share of 256-row tiles in each chunk is the whole space's, within sampling noise
    whole = sum(c.BLOCK_SIZE_M == 256 for c in configs) / len(configs)
    assert whole > 0.05
    for share in shares:
        assert abs(sum(c.BLOCK_SIZE_M == 256 for c in share) / len(share) - whole) < 0.05


def test_a_chunk_tunes_its_share_in_files_of_its_own(tmp_path, small_space, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    size = problem(32, 32, 32)
    settings = TuneSettings(profiler=ProfilerChoice("host", "host"), warmup=0, iters=1, interpret=True,
                            workdir=tmp_path, space=small_space, keep=True)
    names = [str(c) for c in visiting_order(prune(size, INTERPRETER_PROFILE, small_space).configs)]
    outcomes = [tune_size(size, INTERPRETER_PROFILE, settings, compare=False, chunk=Chunk(index, 2))
                for index in range(2)]
    for index, outcome in enumerate(outcomes):
        assert outcome.candidates == len(names[index::2])
        assert set(outcome.timings["config"]) == set(names[index::2])  # its share, all of it timed
        assert f"chunk{index + 1}of2" in outcome.checkpoint.name
    assert outcomes[0].checkpoint != outcomes[1].checkpoint
    work = tmp_path / "tune_gemm_work"
    assert sorted(p.name for p in work.iterdir() if p.name.startswith("tune")) == [
        f"tune_chunk1of2_{size.file_tag}", f"tune_chunk2of2_{size.file_tag}"]
    assert not list(tmp_path.glob("generated_kernel*.py"))  # the whole size's module is not written by a chunk
