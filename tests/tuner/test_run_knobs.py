"""The ROCm script's run knobs end to end on the CPU: --o, --no_warmup, --init_type, --rotating_tensor,
--icache_flush (and our --flush), --bias_vector, --time_breakdown (and --verbose showing it)."""

from __future__ import annotations

import copy
import re
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from helpers import problem

from tune_gemm.cli import main
from tune_gemm.compile.faults import ENV_VAR
from tune_gemm.core.config import Config
from tune_gemm.core.errors import UserError
from tune_gemm.files.results import ResultEntry, read_entries, record, recorded
from tune_gemm.files.sizes import load_sizes
from tune_gemm.measure.job import ChildJob
from tune_gemm.measure.run_knobs import (
    DEFAULT_RESULTS_FILE,
    ZEROS_WARNING,
    flush_rounds,
    results_file,
    rotating_bytes,
    rounds_flushed,
    warmup_launches,
)
from tune_gemm.outputs.console import time_breakdown

SIZE = ["-m", "16", "-n", "16", "-k", "16"]


def _run(tmp_path, space_file, *args, results="out.yaml"):
    return main([*SIZE, "--interpret", "--space", str(space_file), "--iters", "2",
                 *(["--tuning_results_file", str(tmp_path / results)] if results else []), *args])


def _fail(capsys, *args) -> str:
    assert main([*SIZE, "--interpret", *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    return err


# --o ------------------------------------------------------------------------------------------------------------

def test_o_is_the_results_file(tmp_path, space_file, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert _run(tmp_path, space_file, "--o", str(tmp_path / "rocm.yaml"), results=None) == 0
    assert len(read_entries(tmp_path / "rocm.yaml")) == 1 and not DEFAULT_RESULTS_FILE.exists()
    assert f"results in {tmp_path / 'rocm.yaml'}" in capsys.readouterr().out


def test_o_and_tuning_results_file_must_agree(tmp_path, capsys):
    assert results_file(Path("a.yaml"), Path("a.yaml")) == Path("a.yaml")
    assert results_file(None, None) == DEFAULT_RESULTS_FILE
    err = _fail(capsys, "--o", str(tmp_path / "a.yaml"), "--tuning_results_file", str(tmp_path / "b.yaml"))
    assert "--o" in err and "--tuning_results_file" in err and "different results files" in err


# --no_warmup ----------------------------------------------------------------------------------------------------

def _instances(tmp_path) -> pd.Series:
    [csv] = (tmp_path / "tune_gemm_work").glob("tune*/round0.csv")
    frame = pd.read_csv(csv)
    return frame[frame["kernel_name"].str.startswith("matmul_kernel_")].groupby("kernel_name")["instance"]


def test_no_warmup_launches_no_warmup_and_compiles_nothing_ahead(tmp_path, space_file, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # a config that does not compile: the compile stage catches it, or without one, its first launch
    uncompilable = "BM16_BN16_BK16_GM1_SK1_nW1_nS1"
    monkeypatch.setenv(ENV_VAR, f"{uncompilable}=compile")
    assert _run(tmp_path, space_file, "--warmup", "2", "--keep", results="warm.yaml") == 0
    assert "compile failures 1, runtime failures 0" in capsys.readouterr().out
    assert (_instances(tmp_path).max() == 3).all()  # 2 warm-up + 2 timed launches in the CSV
    (tmp_path / "tune_gemm_work").rename(tmp_path / "warm_work")

    assert _run(tmp_path, space_file, "--no_warmup", "--keep", "--compare") == 0
    assert "compile failures 0, runtime failures 1" in capsys.readouterr().out  # no compile stage ran
    instances = _instances(tmp_path)
    assert len(instances) == 7 and f"matmul_kernel_{uncompilable}" not in instances.groups
    assert (instances.min() == 0).all() and (instances.max() == 1).all() and (instances.count() == 2).all()


def test_no_warmup_excludes_a_positive_warmup(capsys):
    assert warmup_launches(None, False) == 5 and warmup_launches(3, False) == 3
    assert warmup_launches(None, True) == 0 and warmup_launches(0, True) == 0
    assert "--no_warmup and --warmup 3 exclude each other" in _fail(capsys, "--no_warmup", "--warmup", "3")


# --init_type, --rotating_tensor, --icache_flush, --flush: what reaches the child --------------------------------

@pytest.fixture
def jobs(monkeypatch) -> list:
    """Every ChildJob started (each is saved for its child to read), run for real."""
    saved = []
    real = ChildJob.save

    def recording(job, path):
        saved.append(copy.deepcopy(job))
        return real(job, path)

    monkeypatch.setattr(ChildJob, "save", recording)
    return saved


def test_timing_knobs_reach_the_child_and_checks_stay_random(tmp_path, space_file, monkeypatch, capsys, jobs):
    monkeypatch.chdir(tmp_path)
    code = _run(tmp_path, space_file, "--init_type", "zeros", "--rotating_tensor", "3", "--icache_flush", "--compare")
    out = capsys.readouterr().out
    assert code == 0, out
    timing = [job for job in jobs if job.time_configs]
    [check] = [job for job in jobs if job.check_configs]
    assert timing and all((job.init_type, job.rotating_bytes, job.cache_flush) == ("zeros", 3 * 2**20, True)
                          for job in timing)
    assert check.init_type == "randn"  # on zeros every kernel would pass
    assert ZEROS_WARNING in out and re.search(r"PASS 16x16x16 .* relative error \d", out)


def test_timing_knobs_default_to_the_automatic_ones(tmp_path, space_file, monkeypatch, jobs):
    monkeypatch.chdir(tmp_path)
    assert _run(tmp_path, space_file) == 0
    assert jobs and all((job.init_type, job.rotating_bytes, job.env) == ("randn", None, {}) for job in jobs)
    # the space is timed whole in one round, the one that picks the winner: flushed, and recorded so
    assert all(job.cache_flush for job in jobs if job.time_configs)
    assert read_entries(tmp_path / "out.yaml")[0]["l2_flushed"] is True


def test_flush_none_times_without_flushes_and_records_so(tmp_path, space_file, monkeypatch, jobs):
    monkeypatch.chdir(tmp_path)
    assert _run(tmp_path, space_file, "--flush", "none") == 0
    assert jobs and not any(job.cache_flush for job in jobs)
    assert read_entries(tmp_path / "out.yaml")[0]["l2_flushed"] is False


def test_flush_rounds():
    assert flush_rounds(None, False) == "auto" and flush_rounds(None, True) == "all"
    assert flush_rounds("none", False) == "none" and flush_rounds("all", True) == "all"
    with pytest.raises(UserError, match="--icache_flush .* and --flush final exclude each other"):
        flush_rounds("final", True)


def test_icache_flush_with_flush_none_is_refused(capsys):
    assert "--flush none exclude each other" in _fail(capsys, "--icache_flush", "--flush", "none")


def test_rotating_tensor_bounds(capsys):
    assert rotating_bytes(None, 2**30) is None and rotating_bytes(0, 2**30) == 0
    with pytest.raises(UserError, match="more than the GPU's 1024 MB"):
        rotating_bytes(1025, 2**30)
    assert "--rotating_tensor must be 0 or more" in _fail(capsys, "--rotating_tensor", "-1")
    assert "more than the GPU's" in _fail(capsys, "--rotating_tensor", str(10**6))


def test_init_type_is_checked_by_argparse(capsys):
    with pytest.raises(SystemExit):
        main([*SIZE, "--interpret", "--init_type", "ones"])
    assert "invalid choice: 'ones'" in capsys.readouterr().err


# --bias_vector -------------------------------------------------------------------------------------------------

def test_bias_vector_is_tuned_checked_recorded_and_reproduced(tmp_path, space_file, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    sizes = tmp_path / "sizes.yaml"
    sizes.write_text("- {M: 33, N: 17, K: 64}\n")  # odd edges; the space holds SPLIT_K 1 and 2
    code = main(["--gemm_size_file", str(sizes), "--interpret", "--space", str(space_file), "--iters", "1",
                 "--bias_vector", "--compare", "--o", str(tmp_path / "out.yaml")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert re.search(r"PASS 33x17x64 fp16->fp16 TT \+bias winner", out)
    [entry] = read_entries(tmp_path / "out.yaml")
    assert entry["bias_vector"] is True
    [request] = load_sizes(tmp_path / "out.yaml", problem(1, 1, 1))
    assert request.problem.bias
    # the results file alone brings the bias back: no --bias_vector here
    assert main(["--gemm_size_file", str(tmp_path / "out.yaml"), "--compare_wo_tuning", "--interpret"]) == 0
    assert re.search(r"PASS 33x17x64 fp16->fp16 TT \+bias BM", capsys.readouterr().out)


def test_a_bias_entry_is_its_own_size_in_the_results(tmp_path):
    path = tmp_path / "out.yaml"
    plain = problem(16, 16, 16)
    biased = replace(plain, bias=True)
    record(path, ResultEntry(plain, Config(16, 16, 16, 1, 1, 1, 1), 1.0, 1.0, "cpu", "host"))
    entries = read_entries(path)
    assert "bias_vector" not in entries[0]  # entries without a bias keep the ROCm layout
    assert recorded(entries, plain) and not recorded(entries, biased)
    record(path, ResultEntry(biased, Config(16, 16, 16, 1, 1, 1, 1), 1.0, 1.0, "cpu", "host"))
    assert [entry.get("bias_vector", False) for entry in read_entries(path)] == [False, True]


def test_bias_vector_in_a_sizes_file_must_be_a_boolean(tmp_path, capsys):
    sizes = tmp_path / "sizes.yaml"
    sizes.write_text("- {M: 16, N: 16, K: 16, bias_vector: 'yes'}\n")
    assert main(["--gemm_size_file", str(sizes), "--interpret"]) == 2
    assert f"{sizes} entry 1: bias_vector must be true or false" in capsys.readouterr().err


# --time_breakdown -----------------------------------------------------------------------------------------------

def test_time_breakdown_line_adds_up():
    outcome = SimpleNamespace(problem=problem(8, 8, 8), seconds={"prune": 0.01, "compile": 1.5, "profile": 2.25,
                                                                 "post-process": 0.125, "compare": 0.5})
    assert time_breakdown(outcome) == ("time breakdown 8x8x8 fp16->fp16 TT: compile 1.50 s + profile 2.25 s + "
                                       "post-process 0.12 s = 3.88 s; prune 0.01 s; compare 0.50 s")


_BREAKDOWN = re.compile(r"^time breakdown 16x16x16 fp16->fp16 TT: compile ([\d.]+) s \+ profile ([\d.]+) s \+ "
                        r"post-process ([\d.]+) s = ([\d.]+) s; prune [\d.]+ s$", re.MULTILINE)


@pytest.mark.parametrize("flag,shown", [(None, False), ("--time_breakdown", True), ("--verbose", True)])
def test_time_breakdown_is_printed_per_size_when_asked(tmp_path, space_file, monkeypatch, capsys, flag, shown):
    monkeypatch.chdir(tmp_path)
    assert _run(tmp_path, space_file, *([flag] if flag else [])) == 0
    lines = _BREAKDOWN.findall(capsys.readouterr().out)
    assert len(lines) == (1 if shown else 0)
    if shown:
        compile_s, profile_s, post_s, total = map(float, lines[0])
        assert profile_s > 0 and abs(compile_s + profile_s + post_s - total) <= 0.015


@pytest.mark.parametrize("size, flush", [((1, 28672, 4096), "all"), ((16, 4096, 4096), "all"),
                                         ((64, 128256, 4096), "all"), ((128, 14336, 4096), "final"),
                                         ((4096, 4096, 4096), "final"), ((1024, 1024, 1024), "final")])
def test_auto_flushes_every_round_of_a_size_bound_by_memory(size, flush):
    # decoding steps and skinny batches move a byte for every few flops; squares and wide batches do not
    assert rounds_flushed("auto", problem(*size, col_b=True)) == flush
    for chosen in ("final", "all", "none"):  # a setting given is kept whatever the size
        assert rounds_flushed(chosen, problem(*size)) == chosen
