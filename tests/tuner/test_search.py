"""tune_gemm.search.search end to end on the CPU (Triton interpreter, host timer): halving and refine rounds, --jobs
chunks, the time budget, and resuming from the checkpoint an interrupted run left."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from helpers import problem

from tune_gemm.compile.faults import ENV_VAR
from tune_gemm.core.config import Config
from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.generate.naming import kernel_name
from tune_gemm.measure import ProfilerChoice
from tune_gemm.measure.schema import BASELINE_NAME, KernelTiming, append_rows
from tune_gemm.run.pipeline import SizeFailed, tune_size
from tune_gemm.search import budget as search_budget
from tune_gemm.search import halving, refine, search, timer
from tune_gemm.search.checkpoint import Checkpoint
from tune_gemm.search.halving import HalvingPlan
from tune_gemm.search.refine import RefinePlan, shape_of
from tune_gemm.search.settings import TuneSettings
from tune_gemm.space.prune import prune
from tune_gemm.space.ranges import RangeSpace

SPACE = RangeSpace(block_m=(16, 32), block_n=(16, 32), block_k=(16, 32), group_m=(1,), split_k=(1,), num_warps=(1,),
                   num_stages=(1,))  # 8 configs for 32x32x32
PROBLEM = problem(32, 32, 32)
UNCOMPILABLE = "BM32_BN32_BK32_GM1_SK1_nW1_nS1"


def _settings(tmp_path, **overrides) -> TuneSettings:
    fields = {"profiler": ProfilerChoice("host", "host"), "warmup": 1, "iters": 4, "interpret": True,
              "workdir": tmp_path, "space": SPACE, "config_timeout": 60}
    return TuneSettings(**{**fields, **overrides})


@pytest.fixture(autouse=True)
def interpreted(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _recording_child_runs(patch: pytest.MonkeyPatch) -> list:
    """Every ChildJob the search starts from now on, run for real: the list `patch` has them added to."""
    started = []
    real = timer.run_child

    def recording(job, *args, **kwargs):
        started.append(job)
        return real(job, *args, **kwargs)

    patch.setattr(timer, "run_child", recording)
    return started


@pytest.fixture
def jobs(monkeypatch) -> list:
    """Every ChildJob the search starts, run for real."""
    return _recording_child_runs(monkeypatch)


def _tune(tmp_path, **overrides):
    return tune_size(PROBLEM, INTERPRETER_PROFILE, _settings(tmp_path, **overrides), compare=False, log=lambda _: None)


def test_halving_rounds_shrink_the_field_and_the_winner_is_one_of_the_space(tmp_path, monkeypatch, jobs):
    monkeypatch.setattr(halving, "HALVING", HalvingPlan(first_iters=1, reduction=2, margin=0.0, min_keep=2))
    outcome = _tune(tmp_path, search="halving", cache_flush="final")
    rounds = [(r.index, r.warmup, r.iters, r.configs) for r in outcome.searched.rounds]
    assert rounds == [(0, 1, 1, 8), (1, 1, 2, 4), (2, 1, 4, 2)]  # the final round: the run's warm-up and launches
    assert [len(job.time_configs) for job in jobs] == [8, 4, 2]
    assert jobs[0].ready_path and not jobs[1].ready_path  # only the first round waits on the compile stream
    kept = set(jobs[2].time_configs)
    assert str(outcome.winner) in kept <= set(jobs[1].time_configs) <= set(jobs[0].time_configs)
    assert set(outcome.timings["config"]) == kept and [job.iters for job in jobs] == [1, 2, 4]
    assert outcome.searched.timed == 8 and outcome.matmul_time_us is not None
    # with --flush final only the final round's launches (and its torch.matmul) run after L2 flushes
    assert [job.cache_flush for job in jobs] == [False, False, True] and outcome.searched.flushed


STAGED = RangeSpace(block_m=(16, 32), block_n=(16, 32), block_k=(16,), group_m=(1,), split_k=(1,), num_warps=(1, 2),
                    num_stages=(1, 2, 3))  # 8 shapes of 3 stage variants each for 32x32x32
REFINE = RefinePlan(stages=2, keep=2, margin=0.0, max_keep=2, final=3)


@pytest.fixture(scope="module")
def staged_refine(tmp_path_factory) -> tuple:
    """One refine run over STAGED under REFINE, its parts kept: (its outcome, every ChildJob it started), for the
    tests of its rounds and of the parts they load."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRITON_INTERPRET", "1")
        started = _recording_child_runs(patch)
        patch.setattr(refine, "REFINE", REFINE)
        outcome = _tune(tmp_path_factory.mktemp("staged_refine"), search="refine", space=STAGED, cache_flush="final",
                        keep=True)  # parts kept
    return outcome, started


def test_refine_times_one_config_per_shape_then_the_best_shapes_then_the_finalists(staged_refine):
    outcome, jobs = staged_refine
    first, second, final = (job.time_configs for job in jobs)
    assert len(jobs) == 3 and all((job.warmup, job.iters) == (1, 4) for job in jobs)  # the run's launches throughout
    assert len(first) == 8 and all(name.endswith("_nS2") for name in first)  # one per shape, the preferred stages
    assert len({shape_of(Config.parse(name)) for name in second}) == 2 and len(second) == 2 * 2
    assert not set(first) & set(second)
    assert jobs[0].ready_path and jobs[1].ready_path != jobs[0].ready_path and not jobs[2].ready_path
    assert len(final) == 3 and set(final) <= set(first) | set(second)
    assert set(outcome.timings["config"]) == set(final) and str(outcome.winner) in final
    assert [(r.index, r.configs) for r in outcome.searched.rounds] == [(0, 8), (1, 4), (2, 3)]
    assert outcome.searched.timed == 12 and sorted(outcome.compiled.compiled) == sorted(first + second)
    assert [job.cache_flush for job in jobs] == [False, False, True] and outcome.searched.flushed


def test_rounds_after_the_first_load_their_configs_from_parts_of_their_own(staged_refine):
    # round 0 loads each config from the size's parts, slices of its visiting order; a later round's few configs
    # come from all over them, so they are written again, together, and loaded from there
    outcome, jobs = staged_refine
    first, second, final = jobs
    assert {Path(path).parent.name for path in first.parts.values()} == {"tune32x32x32"}
    for job, folder in ((second, "round1_parts"), (final, "round2_parts")):
        assert sorted(job.parts) == sorted(job.time_configs)
        assert {Path(path).parent.name for path in job.parts.values()} == {folder}
        held = "\n".join(Path(path).read_text() for path in set(job.parts.values()))
        assert all(f"def {kernel_name(Config.parse(name))}(" in held for name in job.time_configs)
    assert str(outcome.winner) in final.time_configs and outcome.searched.rounds[2].configs == len(final.time_configs)


def test_refine_times_a_space_of_one_config_per_shape_whole_in_one_child(tmp_path, jobs):
    outcome = _tune(tmp_path, search="refine")  # SPACE: 8 configs, each its own shape
    assert len(jobs) == 1 and len(jobs[0].time_configs) == 8
    assert [(r.index, r.configs) for r in outcome.searched.rounds] == [(0, 8)]
    assert jobs[0].cache_flush and outcome.searched.flushed  # the one round picks the winner
    assert len(outcome.timings) == 8 and str(outcome.winner) in jobs[0].time_configs


def test_a_budget_spent_in_refinement_closes_with_the_fastest_timed_side_by_side(tmp_path, monkeypatch, jobs):
    monkeypatch.setattr(refine, "REFINE", REFINE)
    _spend_after(monkeypatch, 1, round_index=1)
    outcome = _tune(tmp_path, search="refine", space=STAGED, time_budget=1000.0, cache_flush="final")
    first, second, closing = jobs
    assert second.time_configs and len(closing.time_configs) == REFINE.final
    assert set(closing.time_configs) <= set(first.time_configs) | set(second.time_configs)
    # the closing round is timed as the final round is: the run's launches, flushed, torch.matmul beside it
    assert (closing.warmup, closing.iters, closing.baseline) == (1, 4, True)
    assert [job.cache_flush for job in jobs] == [False, False, True] and outcome.searched.flushed
    assert set(outcome.timings["config"]) == set(closing.time_configs) and str(outcome.winner) in closing.time_configs
    assert [(r.index, r.final, r.closing) for r in outcome.searched.rounds] == [
        (0, False, False), (1, False, False), (2, True, True)]
    cut = outcome.searched.rounds[1]
    assert cut.planned == len(second.time_configs) and 1 <= cut.configs <= cut.planned
    assert cut.cut_at == 997.0 and outcome.searched.rounds[0].cut_at is None
    assert outcome.searched.note == (
        f"time budget of 1000 s spent: round 0 timed all its 8 configs, round 1 stopped at 997 s ({cut.configs} of "
        f"its {cut.planned} configs timed); {8 + cut.configs} of 24 configs timed in all, winner picked from the 3 "
        f"fastest timed again in a closing round")
    # a rerun resumes round 1, whose finalists may change: the closing round is not in the checkpoint
    assert len(Checkpoint.open(tmp_path, PROBLEM.file_tag, _key(outcome)).rounds) == 2


def test_a_budget_spent_in_the_first_refine_round_still_refines_the_best_shapes_it_timed(tmp_path, monkeypatch, jobs):
    monkeypatch.setattr(refine, "REFINE", REFINE)
    _spend_after(monkeypatch, 3, sample=True)  # round 0 stops at 987 s of 1000: round 1 has until 997
    outcome = _tune(tmp_path, search="refine", space=STAGED, time_budget=1000.0, cache_flush="final")
    first, second, closing = jobs
    assert first.stop_path.endswith("stop_sample") and second.stop_path.endswith("stop")
    timed_first = Checkpoint.open(tmp_path, PROBLEM.file_tag, _key(outcome)).rounds[0].times
    shapes_timed = {shape_of(Config.parse(name)) for name in timed_first}
    cut, refined = outcome.searched.rounds[:2]
    assert 3 <= cut.configs == len(timed_first) < cut.planned == 8 and cut.cut_at == pytest.approx(987.0)
    # round 1: the other variants of the best two shapes among those round 0 timed
    assert refined.cut_at is None and refined.configs == refined.planned == len(second.time_configs) == 2 * 2
    assert {shape_of(Config.parse(name)) for name in second.time_configs} <= shapes_timed
    assert len({shape_of(Config.parse(name)) for name in second.time_configs}) == 2
    # a round 0 cut short ends in the closing round, not round 2: its finalists may change when a rerun resumes it
    assert set(closing.time_configs) <= set(first.time_configs) | set(second.time_configs)
    assert len(closing.time_configs) == REFINE.final and [job.cache_flush for job in jobs] == [False, False, True]
    assert [(r.index, r.closing) for r in outcome.searched.rounds] == [(0, False), (1, False), (2, True)]
    assert outcome.searched.note.startswith(f"time budget of 1000 s spent: round 0 stopped at 987 s ({cut.configs} "
                                            f"of its 8 configs timed), round 1 timed all its 4 configs; ")
    assert outcome.searched.flushed and str(outcome.winner) in closing.time_configs


@pytest.mark.parametrize("budget, sample_seconds", [(40.0, 31.0), (130.0, 117.0), (1.0, 0.65)])
def test_refine_round_0_leaves_round_1_a_reserve_of_fifteen_percent_at_most_ten_seconds(budget, sample_seconds):
    assert search.sample_seconds(budget) == pytest.approx(sample_seconds)


def test_a_closing_round_cut_by_the_whole_budget_picks_from_the_rounds_before(tmp_path, monkeypatch, jobs):
    monkeypatch.setattr(refine, "REFINE", REFINE)
    _spend_after(monkeypatch, 2, sample=True)
    _spend_after(monkeypatch, 0, final=True)  # the closing round has no time left when it starts
    outcome = _tune(tmp_path, search="refine", space=STAGED, time_budget=1000.0, cache_flush="final")
    first, second = Checkpoint.open(tmp_path, PROBLEM.file_tag, _key(outcome)).rounds
    assert len(jobs) == 3 and set(outcome.timings["config"]) == set(first.times) | set(second.times)
    assert "configs timed in rounds 0 and 1 (" in outcome.searched.note  # the closing round timed nothing
    assert not outcome.searched.flushed  # picked from rounds 0 and 1, timed back to back


def test_a_budget_spent_in_a_halving_round_closes_with_its_fastest(tmp_path, monkeypatch, jobs):
    monkeypatch.setattr(halving, "HALVING", HalvingPlan(first_iters=1, reduction=2, margin=0.0, min_keep=2))
    _spend_after(monkeypatch, 5)
    outcome = _tune(tmp_path, search="halving", time_budget=1000.0, cache_flush="final")
    assert [(job.iters, job.cache_flush) for job in jobs] == [(1, False), (4, True)]
    assert len(jobs[1].time_configs) == 2 and set(jobs[1].time_configs) <= set(jobs[0].time_configs)
    assert [(r.index, r.iters, r.closing) for r in outcome.searched.rounds] == [(0, 1, False), (1, 4, True)]


@pytest.mark.parametrize("budget, finalist_seconds", [(40.0, 37.0), (130.0, 127.0), (1.0, 0.8), (15.0, 12.0)])
def test_the_closing_round_keeps_a_fifth_of_the_budget_at_most_three_seconds(budget, finalist_seconds):
    assert search.finalist_seconds(budget) == pytest.approx(finalist_seconds)


def _key(outcome) -> dict:
    """The key of the checkpoint the search left (read back from its file)."""
    return json.loads(outcome.checkpoint.read_text())["key"]


@pytest.mark.parametrize("cache_flush, expected", [("final", [False, True]), ("all", [True, True]),
                                                    ("none", [False, False]), ("auto", [False, True])])
def test_which_rounds_flush(tmp_path, cache_flush, expected):
    settings = _settings(tmp_path, cache_flush=cache_flush)
    assert [settings.flushes(final) for final in (False, True)] == expected


def test_by_default_a_size_bound_by_memory_flushes_every_round(tmp_path, monkeypatch, jobs):
    monkeypatch.setattr(refine, "REFINE", REFINE)
    assert PROBLEM.arithmetic_intensity < 64  # 32^3: about 11 flops per byte
    outcome = _tune(tmp_path, search="refine", space=STAGED)  # --flush auto
    assert len(jobs) == 3 and all(job.cache_flush for job in jobs) and outcome.searched.flushed


def test_an_unknown_flush_policy_is_refused(tmp_path):
    with pytest.raises(ValueError, match="cache_flush must be one of"):
        _settings(tmp_path, cache_flush="sometimes")


def test_jobs_split_the_configs_into_child_runs(tmp_path, jobs):
    outcome = _tune(tmp_path, jobs=3)
    assert [len(job.time_configs) for job in jobs] == [3, 3, 2]
    assert [job.baseline for job in jobs] == [True, False, False]  # torch.matmul once
    assert len(outcome.timings) == 8 and all(job.iters == 4 for job in jobs)


def _spend_after(monkeypatch, done: int, round_index: int = 0, final: bool = False, sample: bool = False) -> None:
    """The time budget of the rounds that choose finalists (`final`: of the round that picks the winner, `sample`:
    of refine's round 0) runs out once `done` configs of round `round_index` are timed, instead of after so many
    seconds."""
    real = search_budget.Budget.check
    watched = "stop_final" if final else "stop_sample" if sample else "stop"

    def check(budget):
        progress = budget.stop_path.parent / f"progress{round_index}_0.txt"
        if (budget.stop_path.name == watched and progress.exists()
                and progress.read_text().count("done ") >= done):
            budget.started = time.perf_counter() - budget.seconds  # its seconds have passed
        real(budget)

    monkeypatch.setattr(search_budget.Budget, "check", check)


def test_a_spent_budget_picks_from_what_is_timed_and_a_rerun_resumes_the_rest(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, f"{UNCOMPILABLE}=compile")
    with monkeypatch.context() as budget:
        _spend_after(budget, 3, final=True)  # SPACE is timed whole, in one final round
        first = _tune(tmp_path, time_budget=1000.0)
    timed = set(first.timings["config"])
    assert 3 <= len(timed) < 7 and str(first.winner) in timed
    assert "time budget of 1000 s spent" in first.searched.note
    assert first.checkpoint.exists()  # kept: the size is not recorded (the CLI records, then discards it)

    compiled, resumed = [], []
    real_stream, real_run = timer.compile_stream, timer.run_child
    monkeypatch.setattr(timer, "compile_stream",
                        lambda module, names, *args: compiled.extend(names) or real_stream(module, names, *args))
    monkeypatch.setattr(timer, "run_child", lambda job, *args, **kw: resumed.append(job) or real_run(job, *args, **kw))
    logged = []
    second = tune_size(PROBLEM, INTERPRETER_PROFILE, _settings(tmp_path), compare=False, log=logged.append)
    assert any(f"resuming {first.checkpoint}: {len(timed)} configs timed before" in line for line in logged)
    rest = set(_space_names()) - timed - {UNCOMPILABLE}
    assert set(compiled) == rest  # neither the timed configs nor the known compile failure again
    assert {name for job in resumed for name in job.time_configs} == rest
    assert set(second.timings["config"]) == timed | rest and second.searched.note is None


def _space_names() -> list[str]:
    return [str(c) for c in prune(PROBLEM, INTERPRETER_PROFILE, SPACE).configs]


def test_a_checkpoint_under_other_settings_is_not_resumed(tmp_path):
    _tune(tmp_path, iters=2)
    [path] = (tmp_path / "tune_gemm_work" / "checkpoints").glob("*.json")
    old = Checkpoint.open(tmp_path, PROBLEM.file_tag, {"not": "this run"})
    assert not old.resumed
    logged = []
    tune_size(PROBLEM, INTERPRETER_PROFILE, _settings(tmp_path, iters=3), compare=False, log=logged.append)
    assert not any("resuming" in line for line in logged)  # 3 launches are not 2: times start over
    assert path.exists()


def test_a_budget_spent_before_anything_is_timed_fails_the_size(tmp_path):
    # spent at the first look, while the child is still starting: it times nothing
    with pytest.raises(SizeFailed, match="time budget of 1e-06 s spent before any config was timed"):
        _tune(tmp_path, time_budget=1e-6)


def test_runtime_failures_name_the_first_few_configs_and_count_the_rest():
    assert search.runtime_failures({}) == ""
    failed = {f"BM{n}": "child died (exit -9): no progress for 60 s (hang), killed" for n in (16, 32, 64, 128)}
    text = search.runtime_failures(failed)
    assert text.startswith("; 4 configs failed at run time: BM16 (child died") and text.endswith(", and 1 more")
    assert "BM128" not in text


def test_the_timing_rows_are_read_as_they_come_and_only_once(tmp_path):
    path = tmp_path / "round0.csv"
    rows = timer.TimingRows(path)
    assert rows.of({"a"}).empty  # no file yet
    first, second = (kernel_name(Config(size, 16, 16)) for size in (16, 32))
    append_rows(path, [KernelTiming(first, i, 1000.0 + i) for i in range(3)])
    with open(path, "a") as handle:
        handle.write(f"{second},0,20")  # a child appending the next line: not read until complete
    a, b = str(Config(16, 16, 16)), str(Config(32, 16, 16))
    assert rows.of({a, b})["duration_ns"].tolist() == [1000.0, 1001.0, 1002.0]
    with open(path, "a") as handle:
        handle.write("00.0\n")
    append_rows(path, [KernelTiming(BASELINE_NAME, 0, 7.0)])
    assert rows.of({b})[["kernel_name", "duration_ns"]].values.tolist() == [[second, 2000.0], [BASELINE_NAME, 7.0]]
    path.write_bytes(b"x" * path.stat().st_size)  # what is read once is not read again
    assert rows.of(set()).values.tolist() == [[BASELINE_NAME, 0, 7.0]]  # torch.matmul's rows beside any config's
