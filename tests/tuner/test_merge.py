"""tune_gemm.run.merge: the finalists of a split size's chunks, the size's outcome merged from theirs, and the final round
itself (on the CPU: the configs timed side by side, the fastest winning, its check against float64)."""

from __future__ import annotations

from helpers import problem, timed_outcome

from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.measure import ProfilerChoice
from tune_gemm.run.merge import SplitSize, final_round
from tune_gemm.search.progress import Stages
from tune_gemm.search.settings import TuneSettings
from tune_gemm.space.prune import prune

SIZE = problem(64, 64, 64)


def _names(*block_m: int) -> list[str]:
    return [f"BM{m}_BN16_BK16_GM1_SK1_nW1_nS1" for m in block_m]


def test_finalists_are_the_best_few_of_each_chunk():
    first = dict(zip(_names(16, 32, 64, 128, 256), [5.0, 1.0, 4.0, 2.0, 3.0]))
    second = dict(zip(_names(17, 33), [7.0, 6.0]))  # fewer than the few: all of them
    split = SplitSize(3)
    split.add(timed_outcome(SIZE, first), None)
    assert not split.complete
    split.add(None, "its worker died 3 times")
    split.add(timed_outcome(SIZE, second), None)
    assert split.complete
    assert split.finalists(per_chunk=4) == tuple(_names(32, 128, 256, 64, 33, 17))


def test_the_merged_outcome_is_the_final_rounds_with_what_the_chunks_did(tmp_path):
    chunks = [timed_outcome(SIZE, dict(zip(_names(16, 32), [1.0, 2.0])), checkpoint=tmp_path / "a.json"),
              timed_outcome(SIZE, dict(zip(_names(64, 128), [3.0, 4.0])), checkpoint=tmp_path / "b.json")]
    final = timed_outcome(SIZE, dict(zip(_names(16, 64), [2.5, 2.0])), check_error=1e-4)
    final.seconds = {"compile": 0.5, "profile": 0.25, "compare": 0.125}
    final.searched.flushed = True  # timed after L2 flushes, unlike the chunks' outcomes
    split = SplitSize(3, chunks, ["a chunk's reason"])
    merged = split.merged(final)
    assert str(merged.winner) == _names(64)[0] and merged.winner_time_us == 2.0  # re-timed: the other chunk's wins
    assert merged.timings is final.timings and merged.check_error == 1e-4 and merged.matmul_time_us == 9.0
    assert sorted(merged.compiled.compiled) == sorted(_names(16, 32, 64, 128)) and merged.candidates == 4
    assert merged.searched.timed == 4 and merged.checkpoint is None  # the coordinator discards the chunks'
    assert merged.seconds == {"compile": 2.0, "profile": 4.0, "final round": 0.75, "compare": 0.125}
    assert "a chunk's reason" in merged.searched.note and merged.searched.flushed  # as the final round's times
    for chunk in chunks:
        chunk.checkpoint.write_text("{}")
    split.discard_checkpoints()
    assert not any(chunk.checkpoint.exists() for chunk in chunks)


def test_the_final_round_times_its_configs_side_by_side(tmp_path, small_space, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    settings = TuneSettings(profiler=ProfilerChoice("host", "host"), warmup=0, iters=2, interpret=True,
                            workdir=tmp_path, space=small_space)
    names = [str(c) for c in prune(SIZE, INTERPRETER_PROFILE, small_space).configs[:3]]
    outcome = final_round(SIZE, names, INTERPRETER_PROFILE, settings, True, print, Stages())
    assert sorted(outcome.timings["config"]) == sorted(names)
    assert outcome.searched.flushed  # the round that picks the winner: flushed by default
    assert str(outcome.winner) == outcome.timings.loc[0, "config"]
    assert outcome.winner_time_us == outcome.timings["time_us"].min()
    assert (outcome.timings["instances"] == 2).all()  # the run's launches, as halving's final round
    assert outcome.matmul_time_us is not None
    assert outcome.check_error <= SIZE.dtype_a.tolerance
    assert not (tmp_path / "tune_gemm_work").exists()
