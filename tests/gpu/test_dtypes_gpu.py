"""On a GPU (`pytest -m gpu`): fp8 (per-tensor scales) and int8 (int32 output) configs compile ahead of launch and
are right against float64 at odd and even sizes, both layouts, split-K, bias; the baselines (torch._scaled_mm,
torch._int_mm and their fallbacks, torch.matmul as TF32 for fp32) run and agree; a short fp8 tune records an entry
with its baseline."""

from __future__ import annotations

import contextlib
from dataclasses import replace

import pytest
import torch
import yaml
from helpers import HAS_FP8, needs_fp8, problem

from tune_gemm.cli import main
from tune_gemm.core.config import ATOMIC_REDUCE, Config
from tune_gemm.generate import write_module
from tune_gemm.generate.loader import load_module
from tune_gemm.kernels import matmul_family as family
from tune_gemm.measure.baselines import (
    FP8_DEQUANTIZED,
    INT8_AS_FP32,
    MATMUL_TF32,
    baseline_for,
    baseline_label,
)

HAS_CUDA = torch.cuda.is_available()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")]

# BLOCK_K >= 32 (one 1-byte dot's depth); split-K; a deep pipeline; small and large tiles.
CONFIGS = [
    Config(64, 64, 64, 8, 1, 4, 3),
    Config(128, 128, 128, 8, 1, 8, 3),
    Config(64, 32, 32, 1, 4, 4, 2),
    Config(64, 32, 32, 1, 4, 4, 2, FUSED_REDUCE=1),  # the partials summed in the GEMM, scaled once
    Config(64, 32, 32, 1, 4, 4, 2, FUSED_REDUCE=ATOMIC_REDUCE),  # added into one sum per tile, scaled once
    Config(16, 64, 128, 1, 2, 4, 4),
]
SIZES = [  # M, N, K, col_a, col_b
    (1024, 1024, 1024, False, True),  # torch._scaled_mm's layout
    (1000, 1000, 1024, False, False),
    (777, 2048, 512, True, True),
    (33, 17, 4096, False, True),
    (4095, 513, 1023, False, False),  # K not a multiple of 32: masked K loop
]


def _check_all(tmp_path, p):
    module = load_module(write_module(p, CONFIGS, tmp_path))
    failures = {}
    for name, launcher in module.LAUNCHERS.items():
        module.COMPILERS[name]()  # what the compile pool does: no launch
        error = family.check_config(launcher, module.PROBLEM, "cuda", seed=7)
        if not error <= p.dtype_a.tolerance:
            failures[name] = error
    assert not failures, failures


@needs_fp8
@pytest.mark.parametrize("dtype,dtype_c", [("fp8", "fp16"), ("fp8", "bf16"), ("fp8", "fp32"), ("bf8", "fp16")])
@pytest.mark.parametrize("M,N,K,col_a,col_b", SIZES)
@pytest.mark.parametrize("bias", [False, True])
def test_fp8_configs_match_float64(tmp_path, dtype, dtype_c, M, N, K, col_a, col_b, bias):
    _check_all(tmp_path, replace(problem(M, N, K, dtype, col_a, col_b, dtype_c), bias=bias))


@pytest.mark.parametrize("M,N,K,col_a,col_b", SIZES)
@pytest.mark.parametrize("bias", [False, True])
def test_int8_configs_are_exact(tmp_path, M, N, K, col_a, col_b, bias):
    _check_all(tmp_path, replace(problem(M, N, K, "int8", col_a, col_b, "int32"), bias=bias))


@pytest.mark.parametrize("dtype,dtype_c,col_b", [
    pytest.param("fp8", "fp16", True, marks=needs_fp8),  # torch._scaled_mm
    pytest.param("fp8", "bf16", False, marks=needs_fp8),  # dequantized torch.matmul
    ("int8", "int32", False),  # torch._int_mm
    ("int8", "int32", True),
    ("fp32", "fp32", False),  # torch.matmul as TF32
    ("fp16", "fp32", False),  # a wider C: torch.mm with out_dtype
    ("bf16", "fp32", True),
])
@pytest.mark.parametrize("bias", [False, True])
def test_the_baseline_runs_on_the_configs_operands(tmp_path, dtype, dtype_c, col_b, bias):
    p = replace(problem(1024, 512, 768, dtype, False, col_b, dtype_c), bias=bias)
    module = load_module(write_module(p, CONFIGS[:1], tmp_path))
    operands = family.make_operands(module.PROBLEM, "cuda", seed=3)
    baseline = baseline_for([operands])
    assert baseline.label == baseline_label(p)
    a, b, c, *extra = operands
    family.poison(c)
    with baseline.precision():
        baseline(0)
    torch.cuda.synchronize()
    if baseline.label not in (FP8_DEQUANTIZED, INT8_AS_FP32):  # the library call wrote C: the configs' product
        assert family.relative_error(c, a, b, *extra) <= p.dtype_a.tolerance, baseline.label


def test_the_fp32_baseline_runs_as_tf32_inside_its_precision_only(tmp_path):
    # TF32 keeps 10 of fp32's 23 mantissa bits: ~3e-4 relative error at this size, against ~1e-6 in full precision
    p = problem(1024, 512, 768, "fp32")
    module = load_module(write_module(p, CONFIGS[:1], tmp_path))
    a, b, c = family.make_operands(module.PROBLEM, "cuda", seed=4)[:3]
    baseline = baseline_for([(a, b, c)])
    assert baseline.label == MATMUL_TF32
    errors = []
    for tf32 in (True, False):
        family.poison(c)
        with baseline.precision() if tf32 else contextlib.nullcontext():
            baseline(0)
        errors.append(family.relative_error(c, a, b))
    assert 1e-4 < errors[0] <= p.dtype_a.tolerance and errors[1] < 1e-5, errors


@needs_fp8
def test_a_short_fp8_tune_records_an_entry_and_its_baseline(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "space.yaml").write_text("BLOCK_SIZE_M: [64, 128]\nBLOCK_SIZE_N: [64, 128]\nBLOCK_SIZE_K: [64, 128]\n"
                                         "GROUP_SIZE_M: [8]\nSPLIT_K: [1]\nnum_warps: [4, 8]\nnum_stages: [3]\n")
    code = main(["-m", "1024", "-n", "1024", "-k", "1024", "-dtype_a", "fp8", "-dtype_b", "fp8", "-dtype_c", "fp16",
                 "-col_b", "--space", "space.yaml", "--compare", "--tuning_results_file", "out.yaml"])
    out = capsys.readouterr().out
    assert code == 0, out
    [entry] = yaml.safe_load((tmp_path / "out.yaml").read_text())
    assert (entry["dtype_a"], entry["dtype_b"], entry["dtype_c"]) == ("fp8", "fp8", "fp16")
    assert entry["matmul_baseline"] == "torch._scaled_mm" and entry["matmul_time_us"] > 0 and entry["time_us"] > 0
    print(f"fp8 1024^3 TN: {entry['time_us']} us ({entry['tflops']} TFLOP/s), _scaled_mm {entry['matmul_time_us']} us")


@pytest.mark.skipif(HAS_FP8, reason="needs a GPU without fp8 dots")
def test_fp8_on_a_gpu_without_fp8_dots_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["-m", "64", "-n", "64", "-k", "64", "-dtype_a", "fp8", "-dtype_b", "fp8"]) == 2
    assert "fp8 matrix instructions" in capsys.readouterr().err
