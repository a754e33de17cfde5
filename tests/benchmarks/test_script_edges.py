"""benchmarks/script_edges.py: the entries a --sizes list names, the winners a script reads, the GPU it requires, and
bad input ended in one line; and every benchmark script, run as a program with no GPU in sight, ending so instead of
with a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from helpers import BENCHMARKS_DIR, load_benchmark

from tune_gemm.core.errors import EXIT_BAD_INPUT, UserError

RESULT_ENTRY = ("- {M: 64, N: 64, K: 64, BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 64, BLOCK_SIZE_K: 32, GROUP_SIZE_M: 1, "
                "SPLIT_K: 1, num_warps: 4, num_stages: 2}\n")
SECOND_ENTRY = RESULT_ENTRY.replace("M: 64,", "M: 128,", 1)
PLAIN_ENTRY = "- {M: 16, N: 16, K: 16}\n"


@pytest.fixture
def edges():
    return load_benchmark("script_edges")


def _results(tmp_path, text: str = RESULT_ENTRY + SECOND_ENTRY):
    path = tmp_path / "tuned.yaml"
    path.write_text(text)
    return path


def test_a_plain_sizes_file_s_entries_are_fp16_without_configs(edges, tmp_path):
    (entry,) = edges.file_entries(_results(tmp_path, PLAIN_ENTRY))
    assert (entry.problem.M, entry.problem.dtype_a.name, entry.problem.dtype_c.name, entry.config) == (
        16, "fp16", "fp16", None)


def test_the_winners_of_a_results_file_come_with_their_configs(edges, tmp_path):
    winners = edges.recorded_winners(_results(tmp_path), "bench_gemm")
    assert [(w.problem.M, str(w.config)) for w in winners] == [(64, "BM64_BN64_BK32_GM1_SK1_nW4_nS2"),
                                                               (128, "BM64_BN64_BK32_GM1_SK1_nW4_nS2")]


def test_sizes_pick_winners_by_shape_or_number_each_once_in_the_file_s_order(edges, tmp_path):
    path = _results(tmp_path)
    assert [w.problem.M for w in edges.recorded_winners(path, "sustained", "128x64x64")] == [128]
    assert [w.problem.M for w in edges.recorded_winners(path, "sustained", "2, 1,64x64x64")] == [128, 64]
    with pytest.raises(UserError, match=r"^--sizes: '4096x4096x4096' names no entry of the sizes file$"):
        edges.recorded_winners(path, "sustained", "64x64x64,4096x4096x4096")


def test_chosen_entries_keep_their_numbers(edges, tmp_path):
    requests = edges.recorded_winners(_results(tmp_path), "bench_search")
    assert edges.chosen_entries(requests, None) == [(1, requests[0]), (2, requests[1])]
    assert edges.chosen_entries(requests, "2") == [(2, requests[1])]


def test_an_entry_without_a_config_is_named_with_the_script_that_needs_one(edges, tmp_path):
    with pytest.raises(UserError, match=r"tuned.yaml entry 2 has no config fields \(BLOCK_SIZE_M ...\): "
                                        r"launch_cost needs a results file"):
        edges.recorded_winners(_results(tmp_path, RESULT_ENTRY + PLAIN_ENTRY), "launch_cost")


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
MISSING = "sizes file none.yaml does not exist"
NO_CONFIG = "plain.yaml entry 1 has no config fields (BLOCK_SIZE_M ...): {} needs a results file"


@pytest.mark.parametrize("script, arguments, line", [
    ("bench_gemm", ["tuned.yaml"], NO_GPU),
    ("bench_gemm", ["none.yaml"], MISSING),  # the input is checked before the GPU, so that a CPU machine sees both
    ("bench_gemm", ["plain.yaml"], NO_CONFIG.format("bench_gemm")),
    ("launch_cost", ["tuned.yaml"], NO_GPU),
    ("launch_cost", ["plain.yaml"], NO_CONFIG.format("launch_cost")),
    ("sustained", ["tuned.yaml"], NO_GPU),
    ("sustained", ["tuned.yaml", "--sizes", "16x16x16"], "--sizes: '16x16x16' names no entry of the sizes file"),
    ("breakdown", ["16", "16", "16", "BM64_BN64_BK32_GM1_SK1_nW4_nS2"], NO_GPU),
    ("breakdown", ["16", "16", "16", "BOGUS"], "not a config name: 'BOGUS' (bad token 'BOGUS')"),
    ("bench_compile", ["-m", "64"], NO_GPU),
    ("bench_search", ["none.yaml", "--interpret"], MISSING),
    ("bench_search", ["plain.yaml", "--interpret", "--space", "none.yaml"], "space file none.yaml cannot be read"),
    ("bench_search", ["plain.yaml", "--interpret", "--searches", "sideways"],
     "--searches: choose from exhaustive, halving, refine"),
])
def test_each_script_without_a_gpu_or_with_bad_input_ends_in_one_line(tmp_path, script, arguments, line):
    _results(tmp_path, RESULT_ENTRY)
    (tmp_path / "plain.yaml").write_text(PLAIN_ENTRY)
    hidden = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": ""}  # no GPU, also on a GPU machine
    done = subprocess.run([sys.executable, str(BENCHMARKS_DIR / f"{script}.py"), *arguments], cwd=tmp_path,
                          env=hidden, capture_output=True, text=True, timeout=300, check=False)
    # torch and Triton may warn on a build without CUDA; the script's own words are its last line
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.strip().splitlines()[-1] == f"{script}: error: {line}"
