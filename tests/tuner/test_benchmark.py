"""--benchmark, --config_str, --reference and --junit end to end on the CPU (Triton interpreter)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from helpers import problem

from tune_gemm.cli import main
from tune_gemm.core.config import Config
from tune_gemm.files.sizes import load_sizes

FIXTURES = Path(__file__).parent / "fixtures"
FAST = ["--interpret", "--iters", "2", "--warmup", "1"]
ONE = "M32_N32_K32_BM16_BN16_BK16_GM1_SK1_nW1_nS0_EU0_kP1_mfma16_schedNONE"  # a ROCm-printed name


def test_benchmark_runs_a_rocm_file_as_it_is(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    report = tmp_path / "report.yaml"
    assert main(["--gemm_size_file", str(FIXTURES / "rocm_v34_results.yaml"), "--benchmark",
                 "--benchmark_results_file", str(report), *FAST]) == 0
    out = capsys.readouterr().out
    assert out.count("note:") == 1 and "num_stages 0 (AMD's stream pipeliner" in out
    assert "benchmark: 2 config(s)" in out and "2 correct, 0 wrong or not run" in out and "NOT meaningful" in out
    entries = yaml.safe_load(report.read_text())
    # exactly the file's configs, as they run here: AMD knobs dropped, num_stages 0 as 2
    assert [Config.from_mapping(e) for e in entries] == [Config(16, 32, 16, 1, 1, 2, 2), Config(32, 16, 16, 1, 1, 1, 2)]
    for entry in entries:
        assert entry["correct"] is True and entry["relative_error"] <= 1e-2 and entry["iters"] == 2
        assert entry["time_us"] > 0 and entry["matmul_time_us"] > 0 and entry["profiler"] == "host"
        assert entry["l2_flushed"] is True  # timed as a tuning run's final round is, by default
    # the report is a results file: it drives the next --benchmark or --compare_wo_tuning
    assert [r.problem for r in load_sizes(report, problem(1, 1, 1))] == [problem(24, 40, 48, col_a=True),
                                                                           problem(32, 16, 32, col_b=True)]
    assert not list(tmp_path.glob("generated_kernel*")) and not (tmp_path / "tune_gemm_work").exists()


def test_a_failing_entry_is_reported_and_exits_1(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    results = tmp_path / "results.yaml"
    good = "{M: 32, N: 32, K: 32, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16, SPLIT_K: 2}"
    wrong = "{M: 32, N: 32, K: 32, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 24, BLOCK_SIZE_K: 16}"  # no power of two
    results.write_text(f"- {good}\n- {wrong}\n")
    assert main(["--gemm_size_file", str(results), "--benchmark", "--o", "bench.yaml", *FAST]) == 1
    assert "1 correct, 1 wrong or not run; report in bench.yaml" in capsys.readouterr().out
    first, second = yaml.safe_load((tmp_path / "bench.yaml").read_text())  # --o names the report, as theirs
    assert first["correct"] is True and "failure" not in first
    assert second["BLOCK_SIZE_N"] == 24 and second["failure"] and "time_us" not in second


def test_config_str_takes_the_size_from_the_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["--config_str", ONE, *FAST]) == 0
    out = capsys.readouterr().out
    assert "PASS 32x32x32 fp16->fp16 TT BM16_BN16_BK16_GM1_SK1_nW1_nS2: " in out
    assert "1 correct" in out and not (tmp_path / "benchmark_results.yaml").exists()  # no report unless asked


@pytest.mark.parametrize("tflops,code,status", [("1.0e+9", 1, "FAIL"), ("1.0e-12", 0, "PASS")])
def test_reference_regression_fails_and_pass_passes(tmp_path, monkeypatch, capsys, tflops, code, status):
    monkeypatch.chdir(tmp_path)
    reference = tmp_path / "reference.yaml"
    reference.write_text(f"- {{M: 48, N: 16, K: 32, rowMajorA: T, rowMajorB: N, tflops: {tflops}}}\n")
    junit = tmp_path / "junit.xml"
    assert main(["--config_str", "BM16_BN16_BK16_GM1_SK1_nW1_nS2", "-m", "48", "-n", "16", "-k", "32", "-col_b",
                 "--reference", str(reference), "--junit", str(junit), *FAST]) == code
    out = capsys.readouterr().out.splitlines()
    lines = [line for line in out if line.startswith(status) and ("reference" in line or "geometric" in line)]
    assert len(lines) == 2 and lines[0].startswith(f"{status} 48x16x32 fp16->fp16 TN:")
    assert lines[1].startswith(f"{status} geometric mean of 1 ratio(s)")
    suite = ET.parse(junit).getroot()
    assert suite.get("tests") == "2" and suite.get("failures") == ("2" if status == "FAIL" else "0")


@pytest.mark.parametrize("args,message", [
    (["--benchmark"], "--benchmark needs --gemm_size_file"),
    (["--benchmark", "--gemm_size_file", "x.yaml", "--compare_wo_tuning"], "--benchmark and --compare_wo_tuning"),
    (["--config_str", ONE, "--gemm_size_file", "x.yaml"], "--config_str takes its size from the name"),
    (["-m", "16", "-n", "16", "-k", "16", "--reference", "r.yaml"], "--reference needs --benchmark or --config_str"),
    (["-m", "16", "-n", "16", "-k", "16", "--junit", "j.xml"], "--junit needs --benchmark or --config_str"),
    (["--config_str", ONE, "--threshold", "0"], "--threshold must be in (0, 1]"),
    (["--config_str", "BM16_BN16_BK16"], "names no size (M.._N.._K.._): give -m -n -k"),
    (["--config_str", ONE, "-m", "64", "-n", "32", "-k", "32"], "names size 32x32x32 but -m -n -k give 64x32x32"),
    (["--config_str", "BM16_BN16_BK16", "-m", "16"], "give all of -m -n -k"),
    (["--config_str", "M0_N16_K16_BM16_BN16_BK16"], "-m must be positive"),
    (["--config_str", "BM16_BN16_XX3", "-m", "16", "-n", "16", "-k", "16"], "--config_str: not a config name"),
    (["--config_str", ONE, "--o", "a.yaml", "--benchmark_results_file", "b.yaml"], "name different reports"),
])
def test_bad_benchmark_flags_exit_2(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    assert main([*args, "--interpret"]) == 2
    assert message in capsys.readouterr().err


def test_benchmark_needs_configs_and_keeps_its_reference(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["--gemm_size_file", str(FIXTURES / "rocm_input_sizes.yaml"), "--benchmark", "--interpret"]) == 2
    assert "entry 1 has no config fields (BLOCK_SIZE_M ...): --benchmark needs a results file" in capsys.readouterr().err
    reference = tmp_path / "benchmark_results.yaml"
    reference.write_text("- {M: 32, N: 32, K: 32, tflops: 1.0}\n")
    assert main(["--gemm_size_file", str(FIXTURES / "rocm_v3_results.yaml"), "--benchmark", "--interpret",
                 "--reference", "benchmark_results.yaml"]) == 2  # the default report would replace it
    assert "would replace its own --reference" in capsys.readouterr().err
    assert reference.read_text() == "- {M: 32, N: 32, K: 32, tflops: 1.0}\n"
