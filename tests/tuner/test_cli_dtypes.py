"""The command line with fp8 and int8 under the interpreter: a tune checks the winner against float64 and records
the dtype names and the baseline that ran; a bad combination is one line and exit 2."""

from __future__ import annotations

import pytest
import yaml

from tune_gemm.cli import main

# Two tile configs with the 32-deep K tile 1-byte inputs need, one of them split-K: a short run.
SPACE = """\
BLOCK_SIZE_M: [32]
BLOCK_SIZE_N: [32]
BLOCK_SIZE_K: [32]
GROUP_SIZE_M: [1]
SPLIT_K: [1, 2]
num_warps: [1]
num_stages: [1]
PERSISTENT_TMA: [0]
STATIC_SHAPE: [0]
"""


@pytest.mark.parametrize("dtypes,layout,baseline", [
    (["fp8", "e4m3", "fp16"], ["-col_b"], "torch._scaled_mm"),
    (["bf8", "bf8", "bf16"], [], "torch.matmul (fp8 dequantized)"),
    (["int8", "int8", "int32"], [], "torch._int_mm"),
])
def test_a_tune_records_dtypes_and_baseline(tmp_path, monkeypatch, capsys, dtypes, layout, baseline):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "space.yaml").write_text(SPACE)
    a, b, c = dtypes
    code = main(["-m", "33", "-n", "32", "-k", "64", "-dtype_a", a, "-dtype_b", b, "-dtype_c", c, *layout,
                 "--interpret", "--space", "space.yaml", "--compare", "--iters", "1", "--warmup", "1",
                 "--tuning_results_file", "out.yaml"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "PASS" in out and baseline in out
    [entry] = yaml.safe_load((tmp_path / "out.yaml").read_text())
    assert (entry["dtype_a"], entry["dtype_b"], entry["dtype_c"]) == (a, a, c)  # the alias e4m3 is recorded as fp8
    assert entry["BLOCK_SIZE_K"] == 32 and entry["matmul_baseline"] == baseline and entry["matmul_time_us"] > 0


@pytest.mark.parametrize("dtypes,message", [
    (["fp8", "fp8", "fp8"], "dtype_c fp8 with fp8 inputs is not supported"),
    (["int8", "int8", "fp16"], "int8 inputs need dtype_c int32, not fp16"),
    (["int32", "int32", "int32"], "int32 is an output type only"),
    (["fp8", "bf8", "fp16"], "A and B must have the same dtype"),
    (["e4m3fnuz", "fp8", "fp16"], "not a known dtype"),
])
def test_bad_combination_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys, dtypes, message):
    monkeypatch.chdir(tmp_path)
    a, b, c = dtypes
    assert main(["-m", "32", "-n", "32", "-k", "32", "-dtype_a", a, "-dtype_b", b, "-dtype_c", c, "--interpret"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
