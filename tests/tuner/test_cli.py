"""tune_gemm.cli end to end on the CPU (Triton interpreter): tune, record, check, and refuse bad input."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import torch
import yaml
from helpers import problem

import tune_gemm.cli
from tune_gemm.cli import main
from tune_gemm.compile.faults import ENV_VAR
from tune_gemm.core.config import Config
from tune_gemm.files.sizes import load_sizes
from tune_gemm.search.checkpoint import Checkpoint

ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def _tune(tmp_path, space_file, *size_args, extra=()):
    results = tmp_path / "out.yaml"
    code = main([*size_args, "--interpret", "--space", str(space_file), "--compare", "--iters", "2", "--warmup", "1",
                 "--tuning_results_file", str(results), *extra])
    return code, results


@pytest.mark.parametrize("M,N,K", [(16, 16, 16), (33, 17, 40)])
def test_interpreter_run_tunes_checks_and_records(tmp_path, space_file, monkeypatch, capsys, M, N, K):
    monkeypatch.chdir(tmp_path)
    code, results = _tune(tmp_path, space_file, "-m", str(M), "-n", str(N), "-k", str(K))
    out = capsys.readouterr().out
    assert code == 0, out
    assert "PASS" in out and "NOT meaningful" in out
    [request] = load_sizes(results, problem(1, 1, 1))
    assert (request.problem.M, request.problem.N, request.problem.K) == (M, N, K)
    assert isinstance(request.config, Config)
    entry = yaml.safe_load(results.read_text())[0]
    assert entry["profiler"] == "host" and entry["gpu"] == "CPU (Triton interpreter)"
    assert not list(tmp_path.glob("generated_kernel*")) and not (tmp_path / "tune_gemm_work").exists()


def test_results_file_drives_compare_wo_tuning(tmp_path, space_file, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    sizes = tmp_path / "sizes.yaml"
    sizes.write_text("- {M: 24, N: 40, K: 32, rowMajorA: N, rowMajorB: T}\n- {M: 16, N: 48, K: 64, dtype_a: bf16, "
                     "dtype_b: bf16, dtype_c: bf16}\n")
    code, results = _tune(tmp_path, space_file, "--gemm_size_file", str(sizes), extra=["--keep"])
    assert code == 0, capsys.readouterr().out
    assert len(list(tmp_path.glob("generated_kernel*.py"))) == 2  # --keep
    capsys.readouterr()
    assert main(["--gemm_size_file", str(results), "--compare_wo_tuning", "--interpret"]) == 0
    assert capsys.readouterr().out.count("PASS") == 2


def test_compare_wo_tuning_fails_on_a_wrong_entry(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results.yaml"
    good = "{M: 32, N: 32, K: 32, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16, SPLIT_K: 2}"
    # BLOCK_SIZE_N 24 is no power of two: the kernel cannot be built, so the entry cannot be trusted
    wrong = "{M: 32, N: 32, K: 32, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 24, BLOCK_SIZE_K: 16}"
    fused = "{M: 40, N: 24, K: 64, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16, SPLIT_K: 4, FUSED_REDUCE: 1}"
    tma = ("{M: 70, N: 130, K: 96, BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 64, BLOCK_SIZE_K: 32, SPLIT_K: 2, PERSISTENT_TMA: 1, "
           "FUSED_REDUCE: 1}")
    results.write_text(f"- {good}\n- {wrong}\n- {fused}\n- {tma}\n")
    assert main(["--gemm_size_file", str(results), "--compare_wo_tuning", "--interpret"]) == 1
    out = capsys.readouterr().out
    assert "PASS 32x32x32" in out and "FAIL 32x32x32" in out and "3 passed, 1 failed" in out
    assert "PASS 40x24x64 fp16->fp16 TT BM16_BN16_BK16_GM1_SK4_nW4_nS2_FR1" in out
    assert "PASS 70x130x96 fp16->fp16 TT BM64_BN64_BK32_GM1_SK2_nW4_nS2_TMA1_FR1" in out


def test_compare_wo_tuning_names_why_an_entry_did_not_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results.yaml"
    plain = "{M: 32, N: 32, K: 32, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16}"
    # recorded on an H100: the interpreter does not run Gluon, so the entry cannot be checked here
    warp_groups = ("{M: 256, N: 160, K: 64, BLOCK_SIZE_M: 256, BLOCK_SIZE_N: 160, BLOCK_SIZE_K: 32, num_warps: 16, "
                   "num_stages: 4, PERSISTENT_TMA: 1, WARP_GROUPS: 1}")
    results.write_text(f"- {plain}\n- {warp_groups}\n")
    monkeypatch.setenv(ENV_VAR, "BM16_BN16_BK16_GM1_SK1_nW4_nS2=raise")
    assert main(["--gemm_size_file", str(results), "--compare_wo_tuning", "--interpret"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"FAIL 32x32x32 .* failed to run: InjectedFault", out)
    assert re.search(r"FAIL 256x160x64 .*_WG1: .* failed to run: ValueError: .*Gluon, which the Triton interpreter "
                     "does not run", out)
    assert "0 passed, 2 failed" in out


def test_compare_wo_tuning_needs_configs(tmp_path, capsys):
    sizes = tmp_path / "sizes.yaml"
    sizes.write_text("- {M: 16, N: 16, K: 16}\n")
    assert main(["--gemm_size_file", str(sizes), "--compare_wo_tuning", "--interpret"]) == 2
    assert "no config fields" in capsys.readouterr().err


@pytest.mark.parametrize("args,message", [
    (["-m", "16", "-n", "16"], "give the size"),
    (["-m", "0", "-n", "16", "-k", "16"], "-m must be positive"),
    (["-m", "16", "-n", "16", "-k", "16", "-dtype_a", "fp64"], "not a known dtype"),
    (["-m", "16", "-n", "16", "-k", "16", "-dtype_a", "int8", "-dtype_b", "int8"], "need dtype_c int32"),
    (["-m", "16", "-n", "16", "-k", "16", "-dtype_a", "e4m3", "-dtype_b", "fp8", "-dtype_c", "fp8"], "dtype_c fp8"),
    (["-m", "16", "-n", "16", "-k", "16", "-dtype_a", "bf16"], "same dtype"),
    (["-m", "16", "-n", "16", "-k", "16", "--profiler", "vtune"], "not known"),
    (["-m", "16", "-n", "16", "-k", "16", "--profiler", "ncu"], "needs a GPU"),
    (["-m", "16", "-n", "16", "-k", "16", "--profiler", "cupti"], "needs a GPU"),
    (["-m", "16", "-n", "16", "-k", "16", "--jobs", "0"], "--jobs"),
    (["-m", "16", "-n", "16", "-k", "16", "--compare", "--compare_wo_tuning"], "exclude each other"),
    (["-m", "16", "-n", "16", "-k", "16", "--gemm_size_file", "x.yaml"], "not both"),
    (["--gemm_size_file", "missing.yaml"], "does not exist"),
    (["-m", "16", "-n", "16", "-k", "16", "--tuning_results_file", "/no/such/dir/out.yaml"], "does not exist"),
    (["-m", "100000", "-n", "100000", "-k", "16"], "over the kernel's limit"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    assert main([*args, "--interpret"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_bad_space_file_is_refused(tmp_path, capsys):
    space = tmp_path / "space.yaml"
    space.write_text("BLOCK_SIZE_M: [24]\n")
    assert main(["-m", "16", "-n", "16", "-k", "16", "--interpret", "--space", str(space)]) == 2
    assert "BLOCK_SIZE_M" in capsys.readouterr().err


SPLIT_SPACE = ("BLOCK_SIZE_M: [16]\nBLOCK_SIZE_N: [16]\nBLOCK_SIZE_K: [16]\nGROUP_SIZE_M: [1]\nSPLIT_K: [2]\n"
               "num_warps: [1]\nnum_stages: [1]\nSTATIC_SHAPE: [0]\nPERSISTENT_TMA: [0]\n")


@pytest.mark.parametrize(("flags", "space_size"), [((), 3), (("--deterministic",), 2)])
def test_deterministic_leaves_the_atomic_sums_out_of_the_space(tmp_path, monkeypatch, capsys, flags, space_size):
    monkeypatch.chdir(tmp_path)
    space = tmp_path / "space.yaml"
    space.write_text(SPLIT_SPACE + "FUSED_REDUCE: [0, 1, 2]\n")
    code, results = _tune(tmp_path, space, "-m", "16", "-n", "16", "-k", "64", extra=flags)
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"{space_size} of {space_size} configs survive pruning" in out  # each way the slices sum, or all but one
    [entry] = yaml.safe_load(results.read_text())
    assert entry.get("FUSED_REDUCE", 0) != 2 or not flags


def test_deterministic_refuses_a_space_of_atomic_sums_alone(tmp_path, capsys):
    space = tmp_path / "space.yaml"
    space.write_text(SPLIT_SPACE + "FUSED_REDUCE: [2]\n")
    assert main(["-m", "16", "-n", "16", "-k", "64", "--interpret", "--space", str(space), "--deterministic"]) == 2
    err = capsys.readouterr().err
    assert "--deterministic" in err and "atomic" in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_no_gpu_without_interpret_says_to_use_it(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "tune_gemm.py"), "-m", "16", "-n", "16", "-k", "16"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "--interpret" in run.stderr and "Traceback" not in run.stderr


def test_rerun_skips_recorded_sizes_unless_retune(tmp_path, space_file, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    helpers_started = []  # the run's compile workers and first timing child start only when a size is to be tuned
    monkeypatch.setattr(tune_gemm.cli, "start_helpers", helpers_started.append)
    code, results = _tune(tmp_path, space_file, "-m", "16", "-n", "16", "-k", "16")
    assert code == 0 and len(helpers_started) == 1
    first = results.read_text()
    capsys.readouterr()
    assert _tune(tmp_path, space_file, "-m", "16", "-n", "16", "-k", "16")[0] == 0
    out = capsys.readouterr().out
    assert "skipping 1 size(s)" in out and "tuned 0 size(s)" in out and results.read_text() == first
    assert len(helpers_started) == 1
    assert _tune(tmp_path, space_file, "-m", "16", "-n", "16", "-k", "16", extra=["--retune"])[0] == 0
    assert "tuned 1 size(s)" in capsys.readouterr().out and len(helpers_started) == 2


def test_a_recorded_size_leaves_no_checkpoint_behind(tmp_path, space_file, monkeypatch, capsys):
    # kill -9 between recording a size and discarding its checkpoint: the rerun, which skips the size, removes it
    monkeypatch.chdir(tmp_path)
    assert _tune(tmp_path, space_file, "-m", "16", "-n", "16", "-k", "16")[0] == 0
    left = Checkpoint.path_for(tmp_path, problem(16, 16, 16).file_tag)
    left.parent.mkdir(parents=True)
    left.write_text("{}")
    assert _tune(tmp_path, space_file, "-m", "16", "-n", "16", "-k", "16")[0] == 0
    assert "skipping 1 size(s)" in capsys.readouterr().out
    assert not (tmp_path / "tune_gemm_work").exists()


def test_a_second_tuner_on_the_same_results_file_is_refused(tmp_path, space_file, monkeypatch, capsys):
    from tune_gemm.files.results import exclusive

    monkeypatch.chdir(tmp_path)
    with exclusive(tmp_path / "out.yaml"):
        code, _ = _tune(tmp_path, space_file, "-m", "16", "-n", "16", "-k", "16")
    assert code == 2 and "in use by another tune_gemm run" in capsys.readouterr().err
    assert not (tmp_path / "out.yaml").exists()


@pytest.mark.parametrize("make,message", [
    (lambda d: d / "sizes_dir", "cannot be read"),  # a directory where the file should be
    (lambda d: d / "sizes.yaml", "not valid YAML"),
    (lambda d: d / "list.yaml", "must be a non-empty YAML list"),
])
def test_sizes_file_problems(tmp_path, capsys, make, message):
    (tmp_path / "sizes_dir").mkdir()
    (tmp_path / "sizes.yaml").write_text("- {M: 16, N: [\n")
    (tmp_path / "list.yaml").write_text("M: 16\nN: 16\n")
    assert main(["--gemm_size_file", str(make(tmp_path)), "--interpret"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_results_file_in_an_unwritable_directory(tmp_path, capsys):
    assert main(["-m", "16", "-n", "16", "-k", "16", "--interpret", "--tuning_results_file", "/proc/out.yaml"]) == 2
    assert "not writable" in capsys.readouterr().err


@pytest.mark.parametrize("entry,field", [
    ("{N: 16, K: 16}", "missing M"),
    ("{M: 0, N: 16, K: 16}", "M must be positive"),
    ("{M: 16, N: -4, K: 16}", "N must be positive"),
    ("{M: 16, N: 16, K: 2.5}", "K must be an integer"),
    ("{M: 16, N: 16, K: 16, rowMajorA: X}", "rowMajorA must be"),
    ("{M: 16, N: 16, K: 16, dtype_a: fp64}", "dtype_a 'fp64' is not a known dtype"),
    ("{M: 16, N: 16, K: 16, dtype_a: fp16, dtype_b: bf16}", "A and B must have the same dtype"),
    ("{M: \"__import__('os').system('true')\", N: 16, K: 16}", "M must be an integer"),
    ("{M: 16, N: 16, K: 16, BLOCK_SIZE_M: \"64; import os\", BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16}",
     "BLOCK_SIZE_M must be an integer"),
])
def test_bad_sizes_file_entries_name_file_entry_and_field(tmp_path, capsys, entry, field):
    sizes = tmp_path / "sizes.yaml"
    sizes.write_text(f"- {{M: 16, N: 16, K: 16}}\n- {entry}\n")
    assert main(["--gemm_size_file", str(sizes), "--interpret"]) == 2
    err = capsys.readouterr().err
    assert f"{sizes} entry 2: " in err and field in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.glob("generated_kernel*"))  # refused before anything was generated


@pytest.mark.parametrize("extra,expected", [((), 300.0), (("--config_timeout", "7"), 7.0)])
def test_config_timeout_defaults_to_the_slow_allowance_under_the_interpreter(tmp_path, space_file, monkeypatch,
                                                                           extra, expected):
    seen = {}
    monkeypatch.setattr("tune_gemm.cli._tune", lambda requests, args, settings, *rest: seen.setdefault("s", settings) and 0)
    main(["-m", "16", "-n", "16", "-k", "16", "--interpret", "--space", str(space_file),
          "--tuning_results_file", str(tmp_path / "out.yaml"), *extra])
    assert seen["s"].config_timeout == expected
