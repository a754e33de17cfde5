"""benchmarks/script_edges.py: the winners a script reads, the GPU it requires, and bad input ended in one line; and
every benchmark script, run as a program on this CPU, ending so instead of with a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import BENCHMARKS_DIR, load_benchmark

from tuner.errors import EXIT_BAD_INPUT, UserError

RESULT_ENTRY = ("- {M: 64, N: 64, K: 64, BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 64, BLOCK_SIZE_K: 32, GROUP_SIZE_M: 1, "
                "SPLIT_K: 1, num_warps: 4, num_stages: 2}\n")


@pytest.fixture
def edges():
    return load_benchmark("script_edges")


def test_the_winners_of_a_results_file_come_with_their_configs(edges, tmp_path):
    path = tmp_path / "tuned.yaml"
    path.write_text(RESULT_ENTRY + RESULT_ENTRY.replace("M: 64,", "M: 128,", 1))
    winners = edges.recorded_winners(path, "bench_gemm")
    assert [(w.problem.M, str(w.config)) for w in winners] == [(64, "BM64_BN64_BK32_GM1_SK1_nW4_nS2"),
                                                               (128, "BM64_BN64_BK32_GM1_SK1_nW4_nS2")]


def test_an_entry_without_a_config_is_named_with_the_script_that_needs_one(edges, tmp_path):
    path = tmp_path / "sizes.yaml"
    path.write_text(RESULT_ENTRY + "- {M: 16, N: 16, K: 16}\n")
    with pytest.raises(UserError, match=r"sizes.yaml entry 2 has no config fields \(BLOCK_SIZE_M ...\): "
                                        r"launch_cost needs a results file"):
        edges.recorded_winners(path, "launch_cost")


def test_a_missing_results_file_is_a_user_error(edges, tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        edges.recorded_winners(tmp_path / "none.yaml", "bench_gemm")


def test_a_gpu_is_required_only_where_torch_sees_none(edges, monkeypatch):
    monkeypatch.setattr("torch.cuda.is_available", lambda: True)
    edges.require_gpu()
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    with pytest.raises(UserError, match="needs a GPU, and torch sees none"):
        edges.require_gpu()


def test_a_user_error_ends_the_script_in_one_line_with_its_code(edges, capsys):
    def fails() -> int:
        raise UserError("sizes file x.yaml does not exist")

    assert edges.run_script("bench_gemm", fails) == EXIT_BAD_INPUT
    assert capsys.readouterr().err == "bench_gemm: error: sizes file x.yaml does not exist\n"
    assert edges.run_script("bench_gemm", lambda: 130) == 130


def test_other_errors_are_not_hidden(edges):
    def breaks() -> int:
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        edges.run_script("bench_gemm", breaks)


NO_GPU = "needs a GPU, and torch sees none (torch.cuda.is_available() is False)"


@pytest.mark.parametrize("script, arguments, line", [
    ("bench_gemm", ["tuned.yaml"], f"bench_gemm: error: {NO_GPU}"),
    ("launch_cost", ["tuned.yaml"], f"launch_cost: error: {NO_GPU}"),
    ("sustained", ["tuned.yaml"], f"sustained: error: {NO_GPU}"),
    ("breakdown", ["16", "16", "16", "BM64_BN64_BK32_GM1_SK1_nW4_nS2"], f"breakdown: error: {NO_GPU}"),
    ("breakdown", ["16", "16", "16", "BOGUS"], "breakdown: error: not a config name: 'BOGUS' (bad token 'BOGUS')"),
    ("bench_compile", ["-m", "64"], f"bench_compile: error: {NO_GPU}"),
    ("bench_search", ["none.yaml", "--interpret"], "bench_search: error: sizes file none.yaml does not exist"),
])
def test_each_script_without_a_gpu_or_with_bad_input_ends_in_one_line(tmp_path, script, arguments, line):
    (tmp_path / "tuned.yaml").write_text(RESULT_ENTRY)
    done = subprocess.run([sys.executable, str(BENCHMARKS_DIR / f"{script}.py"), *arguments], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    # torch and Triton may warn on the CPU build (no CUDA); the script's own words are its last line
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.strip().splitlines()[-1] == line
