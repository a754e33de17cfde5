"""tune_gemm.run.items: the work queue's bookkeeping, without processes: retries, a split size's final round handed out
once all its chunks are in, its merged SizeDone, and chunks that fail."""

from __future__ import annotations

from helpers import problem, timed_outcome

from tune_gemm.run.chunks import Chunk, Work
from tune_gemm.run.items import SizeDone, WorkQueue

SPLIT = problem(32, 32, 32)


def _chunk_done(index: int, times: dict[str, float] | None, checkpoint=None) -> tuple[Work, SizeDone]:
    work = Work(SPLIT, Chunk(index, 2))
    if times is None:
        return work, SizeDone(SPLIT, None, "its worker died 3 times", "cpu", f"interpreter {index}")
    return work, SizeDone(SPLIT, timed_outcome(SPLIT, times, checkpoint=checkpoint), None, "cpu",
                          f"interpreter {index}")


def test_the_queue_hands_out_a_final_round_once_all_chunks_are_in(tmp_path):
    queue = WorkQueue([Work(SPLIT, Chunk(0, 2)), Work(SPLIT, Chunk(1, 2)), Work(problem(16, 16, 16))], retries=1)
    chunk = queue.pending.popleft()
    assert queue.put_back(chunk) and queue.pending[0] == chunk  # first retry: back at the front
    assert queue.put_back(chunk) is False  # retries used
    first, second = (tmp_path / "chunk1.json", tmp_path / "chunk2.json")
    assert list(queue.finished(*_chunk_done(0, {"BM16_BN16_BK16_GM1_SK1_nW1_nS1": 2.0}, first))) == []
    assert list(queue.finished(*_chunk_done(1, {"BM32_BN16_BK16_GM1_SK1_nW1_nS1": 1.0}, second))) == []
    final = queue.pending[0]  # before the sizes still waiting: the split size is done soonest
    assert final == Work(SPLIT, finalists=("BM16_BN16_BK16_GM1_SK1_nW1_nS1", "BM32_BN16_BK16_GM1_SK1_nW1_nS1"))
    retimed = timed_outcome(SPLIT, {"BM16_BN16_BK16_GM1_SK1_nW1_nS1": 1.5, "BM32_BN16_BK16_GM1_SK1_nW1_nS1": 1.6})
    first.write_text("{}")
    second.write_text("{}")
    results = queue.finished(final, SizeDone(SPLIT, retimed, None, "cpu", "interpreter 1"))
    [merged] = [next(results)]
    assert str(merged.outcome.winner) == "BM16_BN16_BK16_GM1_SK1_nW1_nS1" and merged.where == "interpreter 1"
    assert first.exists()  # not recorded yet: a rerun could still resume the chunks
    assert list(results) == [] and not first.exists() and not second.exists()


def test_a_failed_chunk_leaves_the_size_to_the_other_and_all_failed_fail_the_size(capsys):
    queue = WorkQueue([Work(SPLIT, Chunk(0, 2)), Work(SPLIT, Chunk(1, 2))], retries=0)
    queue.pending.clear()
    assert list(queue.finished(*_chunk_done(0, None))) == []
    assert f"{SPLIT.label} chunk 1 of 2 failed on interpreter 0: its worker died 3 times" in capsys.readouterr().out
    assert list(queue.finished(*_chunk_done(1, {"BM32_BN16_BK16_GM1_SK1_nW1_nS1": 1.0}))) == []
    assert queue.pending[0].finalists == ("BM32_BN16_BK16_GM1_SK1_nW1_nS1",)

    queue = WorkQueue([Work(SPLIT, Chunk(0, 2)), Work(SPLIT, Chunk(1, 2))], retries=0)
    queue.pending.clear()
    assert list(queue.finished(*_chunk_done(0, None))) == []
    [failed] = queue.finished(*_chunk_done(1, None))
    assert failed.outcome is None and failed.error.startswith("every chunk failed") and not queue.pending
