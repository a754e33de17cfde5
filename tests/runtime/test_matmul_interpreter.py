"""The run-time matmul on the CPU (Triton interpreter): every dtype and layout against float64 (fp8 with and without
its per-tensor scales), tuned (split-K, persistent TMA and num_ctas too) and default configs, odd tiny sizes,
strided operands, empty shapes, and the custom op under torch.compile(fullgraph=True).

The kernels run in one child process (interpreted_matmul.py) where TRITON_INTERPRET is set before Triton loads.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import RUNTIME_DTYPES

from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.core.dtypes import DTYPES
from tune_gemm.runtime.dispatch import default_output

HERE = Path(__file__).resolve().parent
CPU = INTERPRETER_PROFILE.name
RESULTS = f"""\
- {{M: 33, N: 17, K: 40, rowMajorA: T, rowMajorB: T, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 32, BLOCK_SIZE_K: 16, GROUP_SIZE_M: 2, SPLIT_K: 2, num_warps: 1, num_stages: 1, gpu: {CPU}}}
- {{M: 33, N: 17, K: 40, rowMajorA: N, rowMajorB: T, BLOCK_SIZE_M: 32, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 32, GROUP_SIZE_M: 1, SPLIT_K: 1, num_warps: 1, num_stages: 1, gpu: {CPU}}}
- {{M: 30, N: 20, K: 50, rowMajorA: T, rowMajorB: N, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16, GROUP_SIZE_M: 1, SPLIT_K: 3, num_warps: 1, num_stages: 1, dtype_a: bf16, dtype_b: bf16, dtype_c: bf16, gpu: {CPU}}}
- {{M: 24, N: 40, K: 33, rowMajorA: N, rowMajorB: N, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 32, GROUP_SIZE_M: 2, SPLIT_K: 1, num_warps: 1, num_stages: 1, dtype_a: fp32, dtype_b: fp32, dtype_c: fp32, gpu: {CPU}}}
- {{M: 24, N: 40, K: 33, rowMajorA: T, rowMajorB: T, BLOCK_SIZE_M: 32, BLOCK_SIZE_N: 32, BLOCK_SIZE_K: 16, GROUP_SIZE_M: 1, SPLIT_K: 2, num_warps: 1, num_stages: 1, dtype_c: fp32, gpu: {CPU}}}
- {{M: 17, N: 9, K: 25, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16, gpu: Some Other GPU}}
- {{M: 70, N: 130, K: 90, BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 64, BLOCK_SIZE_K: 64, GROUP_SIZE_M: 2, num_warps: 4, num_stages: 2, PERSISTENT_TMA: 1, gpu: {CPU}}}
- {{M: 67, N: 129, K: 33, rowMajorA: N, rowMajorB: N, BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 128, BLOCK_SIZE_K: 64, num_warps: 8, num_stages: 3, PERSISTENT_TMA: 1, EPILOGUE_SUBTILE: 1, dtype_a: bf16, dtype_b: bf16, dtype_c: bf16, gpu: {CPU}}}
- {{M: 70, N: 130, K: 90, rowMajorB: N, BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 64, BLOCK_SIZE_K: 32, num_warps: 4, num_stages: 2, PERSISTENT_TMA: 1, num_ctas: 2, gpu: {CPU}}}
- {{M: 100, N: 60, K: 50, rowMajorA: N, rowMajorB: N, BLOCK_SIZE_M: 32, BLOCK_SIZE_N: 32, BLOCK_SIZE_K: 16, GROUP_SIZE_M: 2, num_warps: 4, num_stages: 2, num_ctas: 2, gpu: {CPU}}}
- {{M: 40, N: 36, K: 96, rowMajorB: N, BLOCK_SIZE_M: 32, BLOCK_SIZE_N: 32, BLOCK_SIZE_K: 32, GROUP_SIZE_M: 1, SPLIT_K: 2, num_warps: 1, num_stages: 1, dtype_a: fp8, dtype_b: fp8, dtype_c: bf16, gpu: {CPU}}}
- {{M: 70, N: 130, K: 200, rowMajorB: N, BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 64, BLOCK_SIZE_K: 128, num_warps: 4, num_stages: 2, PERSISTENT_TMA: 1, dtype_a: fp8, dtype_b: fp8, dtype_c: fp16, gpu: {CPU}}}
- {{M: 70, N: 130, K: 200, BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 64, BLOCK_SIZE_K: 128, num_warps: 4, num_stages: 2, PERSISTENT_TMA: 1, EPILOGUE_SUBTILE: 1, dtype_a: fp8, dtype_b: fp8, dtype_c: fp16, gpu: {CPU}}}
- {{M: 70, N: 130, K: 90, BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 64, BLOCK_SIZE_K: 32, num_warps: 4, num_stages: 2, PERSISTENT_TMA: 1, dtype_a: fp32, dtype_b: fp32, dtype_c: fp32, gpu: {CPU}}}
- {{M: 33, N: 17, K: 70, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 32, SPLIT_K: 2, num_warps: 1, num_stages: 1, dtype_a: int8, dtype_b: int8, dtype_c: int32, gpu: {CPU}}}
- {{M: 1, N: 37, K: 700, rowMajorB: N, BLOCK_SIZE_M: 1, BLOCK_SIZE_N: 4, BLOCK_SIZE_K: 512, num_warps: 4, num_stages: 1, gpu: {CPU}}}
- {{M: 3, N: 50, K: 64, BLOCK_SIZE_M: 4, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16, SPLIT_K: 2, num_warps: 1, num_stages: 2, FUSED_REDUCE: 2, gpu: {CPU}}}
"""
SCALES = [0.5, 0.125]  # fp8's per-tensor scales in the cases that pass them


def _case(name, M, N, K, dtype="fp16", col_a=False, col_b=False, rule="default", **extra) -> dict:
    return dict(name=name, M=M, N=N, K=K, dtype=dtype, col_a=col_a, col_b=col_b, rule=rule, **extra)


CASES = [
    _case("tuned fp16 TT split-K", 33, 17, 40, rule="exact"),
    _case("tuned fp16 NT", 33, 17, 40, col_a=True, rule="exact"),
    _case("tuned bf16 TN split-K 3", 30, 20, 50, "bf16", col_b=True, rule="exact"),
    _case("tuned fp32 NN", 24, 40, 33, "fp32", True, True, rule="exact"),
    _case("tuned fp16 into fp32", 24, 40, 33, out_dtype="fp32", rule="exact"),
    _case("tuned persistent TMA fp16 TT", 70, 130, 90, rule="exact"),
    _case("tuned persistent TMA bf16 NN, split epilogue", 67, 129, 33, "bf16", True, True, rule="exact"),
    _case("tuned persistent TMA fp16 TN, clusters of 2", 70, 130, 90, col_b=True, rule="exact"),
    _case("tuned fp16 NN, clusters of 2", 100, 60, 50, col_a=True, col_b=True, rule="exact"),
    _case("m bucket", 40, 17, 40, rule="m_bucket"),
    _case("all-dimension bucket", 20, 24, 40, "bf16", col_b=True, rule="bucket"),
    _case("other GPU's entry unused", 17, 9, 25),
    _case("padded leading dimension", 33, 17, 40, storage_a="padded", rule="exact"),
    _case("no unit stride: copied", 33, 17, 40, col_a=True, storage_a="strided", rule="exact"),
    _case("one row, one column", 1, 9, 1, "fp32", True, True),
    _case("empty M", 0, 5, 7),
    _case("empty K", 6, 5, 0),
    *(_case(f"default {dtype} {'N' if col_a else 'T'}{'N' if col_b else 'T'}", 19, 13, 21, dtype, col_a, col_b)
      for dtype, col_a, col_b in itertools.product(RUNTIME_DTYPES, (False, True), (False, True))),
    _case("tuned fp8 TN split-K into bf16, scaled", 40, 36, 96, "fp8", col_b=True, out_dtype="bf16", scales=SCALES,
          rule="exact"),
    _case("tuned persistent TMA fp8 TN, scaled", 70, 130, 200, "fp8", col_b=True, scales=SCALES, rule="exact"),
    _case("tuned persistent TMA fp8 TT (B copied K-major), split epilogue, scaled", 70, 130, 200, "fp8",
          scales=SCALES, rule="exact"),
    _case("tuned persistent TMA fp32 TT (B copied K-major)", 70, 130, 90, "fp32", rule="exact"),
    _case("tuned int8 TT split-K into int32", 33, 17, 70, "int8", rule="exact"),
    _case("tuned one-row tile TN (no matrix instruction)", 1, 37, 700, col_b=True, rule="exact"),
    _case("tuned four-row tile TT, split K added atomically", 3, 50, 64, rule="exact"),
    _case("fp8 without scales", 19, 13, 21, "fp8", col_b=True),
    _case("default bf8 TN into fp32, scaled", 19, 13, 21, "bf8", col_b=True, out_dtype="fp32", scales=SCALES),
    _case("default fp8 K shorter than a K tile, scaled", 9, 10, 5, "fp8", col_b=True, scales=SCALES),
    *(_case(f"default {dtype} {'N' if col_a else 'T'}{'N' if col_b else 'T'}", 19, 13, 21, dtype, col_a, col_b,
            **({"scales": SCALES} if dtype == "fp8" else {}))
      for dtype, col_a, col_b in itertools.product(("fp8", "int8"), (False, True), (False, True))),
]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> dict:
    directory = tmp_path_factory.mktemp("interpreted")
    (directory / "results.yaml").write_text(RESULTS)
    (directory / "cases.json").write_text(json.dumps(CASES))
    run = subprocess.run([sys.executable, str(HERE / "interpreted_matmul.py"), str(directory / "results.yaml"),
                          str(directory / "cases.json"), str(directory / "out.json")],
                         env={**os.environ, "TRITON_INTERPRET": "1"}, capture_output=True, text=True, timeout=600,
                         check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads((directory / "out.json").read_text())


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_matmul_matches_float64_with_the_expected_config(report, case):
    result = report[case["name"]]
    out_dtype = case.get("out_dtype", default_output(DTYPES[case["dtype"]]).name)
    assert result["rule"] == case["rule"]
    assert result["error"] <= DTYPES[case["dtype"]].tolerance, result
    assert result["shape"] == [case["M"], case["N"]] and result["contiguous"]
    assert result["dtype"] == str(DTYPES[out_dtype].torch_dtype).removeprefix("torch.")


def test_custom_op_under_torch_compile_fullgraph(report):
    assert report["compiled"]["same_as_eager"] and report["compiled"]["dynamic_same_as_eager"]
    assert report["compiled"]["error"] <= DTYPES["fp16"].tolerance


def test_custom_op_passes_opcheck(report):
    assert report["opcheck"]["failures"] == {}
