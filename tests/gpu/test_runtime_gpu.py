"""On a GPU (`pytest -m gpu`): the run-time matmul against float64 for fp16/bf16/fp32 and every layout, through
tuned, bucketed and default configs (a STATIC_SHAPE one among them); a results file from a real tuning run; the
custom op under torch.compile(fullgraph=True); a tuned config too big for the GPU replaced by the default with a
warning; fp8 with its scales through the recorded H100 winners, and int8."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest
import torch
from helpers import RUNTIME_DTYPES

from tune_gemm import clear_results, explain, load_results, matmul
from tune_gemm.cli import main
from tune_gemm.core.dtypes import DTYPES
from tune_gemm.kernels.matmul_family import poison
from tune_gemm.runtime import dispatch
from tune_gemm.runtime.dispatch import Dispatcher
from tune_gemm.runtime.lookup import BUCKET, DEFAULT, EXACT, M_BUCKET

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

NEEDS_TMA = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9,
                               reason="the persistent TMA family needs compute capability 9 (Hopper) or newer")
TUNED_SIZE = (384, 512, 256)
SPACE = """\
BLOCK_SIZE_M: [64, 128]
BLOCK_SIZE_N: [64]
BLOCK_SIZE_K: [32, 64]
GROUP_SIZE_M: [1, 4]
SPLIT_K: [1]
num_warps: [4]
num_stages: [3]
"""
ENTRIES = """\
- {{M: 512, N: 512, K: 512, BLOCK_SIZE_M: 128, BLOCK_SIZE_N: 128, BLOCK_SIZE_K: 32, GROUP_SIZE_M: 8, num_warps: 4, num_stages: 3, gpu: {gpu}}}
- {{M: 16, N: 4096, K: 4096, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 64, BLOCK_SIZE_K: 128, SPLIT_K: 4, num_warps: 4, num_stages: 4, gpu: {gpu}}}
- {{M: 1000, N: 1000, K: 1000, rowMajorA: N, dtype_a: bf16, dtype_b: bf16, dtype_c: bf16, BLOCK_SIZE_M: 128, BLOCK_SIZE_N: 64, BLOCK_SIZE_K: 32, GROUP_SIZE_M: 8, num_warps: 4, num_stages: 4, gpu: {gpu}}}
- {{M: 300, N: 700, K: 900, rowMajorB: N, dtype_a: fp32, dtype_b: fp32, dtype_c: fp32, BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 64, BLOCK_SIZE_K: 32, GROUP_SIZE_M: 8, num_warps: 4, num_stages: 3, gpu: {gpu}}}
- {{M: 256, N: 256, K: 256, rowMajorA: N, rowMajorB: N, dtype_c: fp32, BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 64, BLOCK_SIZE_K: 64, SPLIT_K: 2, num_warps: 4, num_stages: 3, FUSED_REDUCE: 1, gpu: {gpu}}}
- {{M: 2048, N: 2048, K: 2048, dtype_a: fp32, dtype_b: fp32, dtype_c: fp32, BLOCK_SIZE_M: 128, BLOCK_SIZE_N: 128, BLOCK_SIZE_K: 128, num_warps: 4, num_stages: 5, gpu: {gpu}}}
- {{M: 512, N: 512, K: 512, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16, num_warps: 1, num_stages: 1, gpu: Some Other GPU}}
- {{M: 16, N: 16, K: 16, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16, num_warps: 2, num_stages: 2, STATIC_SHAPE: 1, gpu: {gpu}}}
- {{M: 1024, N: 1024, K: 1024, rowMajorB: N, BLOCK_SIZE_M: 128, BLOCK_SIZE_N: 128, BLOCK_SIZE_K: 64, GROUP_SIZE_M: 8, num_warps: 4, num_stages: 3, PERSISTENT_TMA: 1, gpu: {gpu}}}
"""
# (M, N, K, dtype, A column-major, B column-major, out dtype, expected rule)
CASES = [
    (512, 512, 512, "fp16", False, False, None, EXACT),
    pytest.param(1024, 1024, 1024, "fp16", False, True, None, EXACT, marks=NEEDS_TMA),  # persistent TMA config
    pytest.param(1000, 1000, 1000, "fp16", False, True, None, BUCKET, marks=NEEDS_TMA),  # on odd leading dims
    (16, 4096, 4096, "fp16", False, False, None, EXACT),
    (16, 16, 16, "fp16", False, False, None, EXACT),  # STATIC_SHAPE: sizes compiled in as constants
    (13, 16, 16, "fp16", False, False, None, M_BUCKET),  # ... and another binary for a neighbouring shape
    (13, 4096, 4096, "fp16", False, False, None, M_BUCKET),
    (1000, 1000, 1000, "bf16", True, False, None, EXACT),
    (900, 1000, 1000, "bf16", True, False, None, M_BUCKET),
    (1000, 1020, 1000, "bf16", True, False, None, BUCKET),
    (300, 700, 900, "fp32", False, True, None, EXACT),
    (256, 256, 256, "fp16", True, True, "fp32", EXACT),
    *((333, 77, 515, dtype, col_a, col_b, None, DEFAULT)
      for dtype, col_a, col_b in itertools.product(RUNTIME_DTYPES, (False, True), (False, True))),
]


def _operand(rows, cols, column_major, dtype):
    data = torch.randn((cols, rows) if column_major else (rows, cols), device="cuda").to(dtype)
    return data.t() if column_major else data


def _error(c, a, b) -> float:
    reference = a.double() @ b.double()
    if not torch.isfinite(c.double()).all():
        return float("inf")
    return (torch.linalg.norm(c.double() - reference) / torch.linalg.norm(reference)).item()


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Hand-written entries for this GPU, plus one size tuned for real into the same file."""
    directory = tmp_path_factory.mktemp("runtime")
    path = directory / "results.yaml"
    path.write_text(ENTRIES.format(gpu=torch.cuda.get_device_name()))
    (directory / "space.yaml").write_text(SPACE)
    M, N, K = TUNED_SIZE
    cwd = os.getcwd()
    os.chdir(directory)  # the tuner's work files there: each parallel worker (pytest -n) tunes into its own
    try:
        assert main(["-m", str(M), "-n", str(N), "-k", str(K), "--space", str(directory / "space.yaml"), "--compare",
                     "--tuning_results_file", str(path)]) == 0
    finally:
        os.chdir(cwd)
    clear_results()
    load_results(path)
    yield path
    clear_results()


@pytest.fixture
def poisoned(monkeypatch):
    """Outputs start as NaN (the most negative int32 for int8's): an element the kernel does not write fails the
    check."""
    def new_output(shape, dtype, device):
        c = torch.empty(shape, dtype=dtype, device=device)
        poison(c)
        return c

    monkeypatch.setattr(dispatch, "new_output", new_output)


@pytest.mark.parametrize("M,N,K,dtype,col_a,col_b,out_dtype,rule", CASES)
def test_matmul_matches_float64(results, poisoned, M, N, K, dtype, col_a, col_b, out_dtype, rule):
    a = _operand(M, K, col_a, DTYPES[dtype].torch_dtype)
    b = _operand(K, N, col_b, DTYPES[dtype].torch_dtype)
    out = DTYPES[out_dtype].torch_dtype if out_dtype else None
    assert explain(a, b, out).rule == rule
    c = matmul(a, b, out)
    assert c.dtype == (out or a.dtype) and c.shape == (M, N)
    assert _error(c, a, b) <= DTYPES[dtype].tolerance


def test_the_tuned_entry_is_used_exactly(results):
    import yaml

    [tuned] = [e for e in yaml.safe_load(results.read_text()) if (e["M"], e["N"], e["K"]) == TUNED_SIZE]
    M, N, K = TUNED_SIZE
    a, b = _operand(M, K, False, torch.float16), _operand(K, N, False, torch.float16)
    choice = explain(a, b)
    assert choice.rule == EXACT and choice.config.BLOCK_SIZE_M == tuned["BLOCK_SIZE_M"]
    assert _error(matmul(a, b), a, b) <= DTYPES["fp16"].tolerance


def test_custom_op_under_torch_compile_fullgraph(results):
    def scaled(x, y):
        return matmul(x, y) * 2 + 1

    a, b = _operand(16, 4096, False, torch.float16), _operand(4096, 4096, False, torch.float16)
    compiled = torch.compile(scaled, fullgraph=True)
    assert torch.equal(compiled(a, b), scaled(a, b))
    assert _error((compiled(a, b) - 1) / 2, a, b) <= DTYPES["fp16"].tolerance
    dynamic = torch.compile(scaled, fullgraph=True, dynamic=True)
    for M in (13, 16, 100):
        a = _operand(M, 4096, False, torch.float16)
        assert torch.equal(dynamic(a, b), scaled(a, b))


def test_a_config_too_big_for_this_gpu_falls_back_to_the_default(results, poisoned):
    a, b = _operand(2048, 2048, False, torch.float32), _operand(2048, 2048, False, torch.float32)
    assert explain(a, b).rule == EXACT  # 5 stages of 128x128 + 128x128 fp32 tiles: 640 KiB of shared memory
    with pytest.warns(UserWarning, match="does not fit"):
        c = matmul(a, b)
    assert _error(c, a, b) <= DTYPES["fp32"].tolerance
    assert explain(a, b).rule == DEFAULT


FP8_RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "h100_fp8.yaml"
NEEDS_FP8 = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (8, 9),
                               reason="fp8 matrix instructions need compute capability 8.9 or newer")


@NEEDS_FP8
@pytest.mark.parametrize("M,N,K,col_b,rule_on_an_h100", [
    (4096, 4096, 4096, True, EXACT),  # the recorded persistent TMA winner, 128x256 tiles
    (4000, 4096, 4096, True, M_BUCKET),
    (128, 14336, 4096, True, EXACT),
    (4095, 4097, 1023, True, EXACT),  # rows of 1023 bytes: not 16-byte aligned
    (1000, 1000, 1000, False, DEFAULT),  # a row-major B: nothing recorded
])
def test_fp8_with_scales_through_the_recorded_h100_winners(poisoned, M, N, K, col_b, rule_on_an_h100):
    dispatcher = Dispatcher()
    dispatcher.load(FP8_RESULTS)
    fp8 = DTYPES["fp8"]
    a, b = _operand(M, K, False, fp8.torch_dtype), _operand(K, N, col_b, fp8.torch_dtype)
    scale_a, scale_b = torch.tensor([0.5], device="cuda"), torch.tensor([0.25], device="cuda")
    if torch.cuda.get_device_name() == "NVIDIA H100 80GB HBM3":  # the GPU the entries were recorded on
        assert dispatcher.choose(a, b).rule == rule_on_an_h100
    c = dispatcher.matmul(a, b, None, scale_a, scale_b)
    assert c.dtype == torch.float16 and c.shape == (M, N)
    assert _error(c, a.double() * 0.5, b.double() * 0.25) <= fp8.tolerance
    unscaled = dispatcher.matmul(a, b, torch.bfloat16)
    assert unscaled.dtype == torch.bfloat16 and _error(unscaled, a, b) <= fp8.tolerance


def test_int8_into_int32_is_exact(poisoned):
    a = torch.randint(-127, 128, (333, 515), dtype=torch.int8, device="cuda")
    b = torch.randint(-127, 128, (77, 515), dtype=torch.int8, device="cuda").t()
    c = matmul(a, b)
    assert c.dtype == torch.int32 and torch.equal(c, (a.double() @ b.double()).int())
