"""tune_gemm.runtime.dispatch without launching: layouts from strides, the call's variant and shape, argument checks."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from helpers import problem

from tune_gemm.core.config import Config
from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.core.errors import UserError
from tune_gemm.runtime.dispatch import Dispatcher, column_major
from tune_gemm.runtime.lookup import DEFAULT, EXACT, M_BUCKET
from tune_gemm.runtime.table import Table, TunedEntry

CONFIG = Config(16, 32, 16, SPLIT_K=2)


def _entry(M, N, K, **kwargs) -> TunedEntry:
    return TunedEntry(problem(M, N, K, **kwargs), CONFIG, INTERPRETER_PROFILE.name, None, None, None, {})


def test_layouts_from_strides():
    a = torch.randn(8, 12)
    assert column_major(a) is False
    assert column_major(torch.randn(12, 8).t()) is True
    assert column_major(torch.randn(8, 20)[:, :12]) is False  # padded leading dimension
    assert column_major(torch.randn(20, 8)[:12].t()) is True
    assert column_major(torch.randn(8, 24)[:, ::2]) is None  # no unit stride: copied before the launch
    assert column_major(torch.randn(12, 1)) is False and column_major(torch.randn(1, 12).t()) is False
    assert column_major(torch.randn(1, 12)[:, ::2]) is True  # a single row is read along its one stride


def test_the_call_picks_the_entry_of_its_layout_and_dtype():
    dispatcher = Dispatcher(Table([_entry(33, 17, 40, col_b=True), _entry(32, 17, 40, dtype="bf16")]))
    a, b_col = torch.randn(33, 40, dtype=torch.float16), torch.randn(17, 40, dtype=torch.float16).t()
    assert dispatcher.choose(a, b_col).rule == EXACT
    assert dispatcher.choose(a, b_col.contiguous()).rule == DEFAULT  # row-major B: nothing tuned
    assert dispatcher.choose(a, b_col, torch.float32).rule == DEFAULT  # fp32 output: another variant
    bf16 = dispatcher.choose(a.bfloat16()[:30], b_col.bfloat16().contiguous())
    assert (bf16.rule, bf16.tuned_shape, bf16.config) == (M_BUCKET, (32, 17, 40), CONFIG)
    strided = torch.randn(17, 80, dtype=torch.float16)[:, ::2].t()  # (40, 17) with no unit stride: read row-major
    assert dispatcher.choose(a, strided).rule == DEFAULT


def test_loading_clears_earlier_choices(tmp_path):
    dispatcher = Dispatcher()
    a, b = torch.randn(16, 16, dtype=torch.float16), torch.randn(16, 16, dtype=torch.float16)
    assert dispatcher.choose(a, b).rule == DEFAULT
    results = tmp_path / "r.yaml"
    results.write_text("- {M: 16, N: 16, K: 16, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16}\n")
    dispatcher.load(results)
    assert dispatcher.choose(a, b).rule == EXACT
    dispatcher.clear()
    assert dispatcher.choose(a, b).rule == DEFAULT


@pytest.mark.parametrize("a,b,out_dtype,error,message", [
    (torch.randn(2, 3, 4), torch.randn(4, 5), None, ValueError, "2-D"),
    (torch.randn(3, 4), torch.randn(5, 6), None, ValueError, "cannot be multiplied"),
    (torch.randn(3, 4).half(), torch.randn(4, 6).bfloat16(), None, TypeError, "same dtype"),
    (torch.randn(3, 4).double(), torch.randn(4, 6).double(), None, TypeError,
     "float64; supported: torch.float16, torch.bfloat16, torch.float32, torch.float8_e4m3fn"),
    (torch.randn(3, 4), torch.randn(4, 6), torch.float16, TypeError, "narrower"),
    (torch.randn(3, 4).to(torch.float8_e4m3fn), torch.randn(4, 6).to(torch.float8_e4m3fn), torch.float8_e4m3fn,
     TypeError, "dtype_c fp8 with fp8 inputs is not supported"),
    (torch.ones(3, 4, dtype=torch.int8), torch.ones(4, 6, dtype=torch.int8), torch.float16, TypeError,
     "int8 inputs need dtype_c int32"),
    (torch.ones(3, 4, dtype=torch.int32), torch.ones(4, 6, dtype=torch.int32), None, TypeError, "output type only"),
])
def test_bad_calls_are_refused_with_a_message(a, b, out_dtype, error, message):
    with pytest.raises(error, match=message):
        Dispatcher().choose(a, b, out_dtype)


def test_outputs_default_to_the_tuners_dtype_c_for_each_input():
    fp8, int8 = torch.ones(3, 4, dtype=torch.float8_e5m2), torch.ones(3, 4, dtype=torch.int8)
    dispatcher = Dispatcher(Table([_entry(3, 3, 4, dtype="bf8", dtype_c="fp16", col_b=True),
                                   _entry(3, 3, 4, dtype="int8", dtype_c="int32", col_b=True)]))
    assert dispatcher.choose(fp8, fp8.t()).rule == EXACT  # e5m2 into fp16
    assert dispatcher.choose(int8, int8.t()).rule == EXACT  # int8 into int32
    assert dispatcher.choose(fp8, fp8.t(), torch.bfloat16).rule == DEFAULT  # another output: another variant
    # the default config's K tile is a 1-byte dot's smallest (32), however short K is
    assert dispatcher.choose(fp8[:, :2], fp8.t()[:2]).config.BLOCK_SIZE_K == 32


def _fp8(rows, cols):
    return torch.randn(rows, cols).to(torch.float8_e4m3fn)


@pytest.mark.parametrize("a,b,scales,error,message", [
    (_fp8(3, 4), _fp8(4, 5), (torch.tensor([1.0]), None), ValueError, "both scale_a and scale_b, or neither"),
    (_fp8(3, 4), _fp8(4, 5), (torch.tensor([1.0, 2.0]), torch.tensor([1.0])), ValueError,
     "scale_a must be one float32 value on cpu .* shape \\(2,\\)"),
    (_fp8(3, 4), _fp8(4, 5), (torch.tensor([1.0]), torch.tensor([1.0], dtype=torch.float64)), ValueError,
     "scale_b must be one float32 value .* torch.float64"),
    (torch.randn(3, 4).half(), torch.randn(4, 5).half(), (torch.tensor([1.0]), torch.tensor([1.0])), TypeError,
     "scales come with fp8 inputs only, not fp16"),
])
def test_bad_scales_are_refused_before_any_launch(a, b, scales, error, message):
    with pytest.raises(error, match=message):
        Dispatcher().matmul(a, b, None, *scales)


def test_fp8_is_refused_on_a_gpu_without_fp8_matrix_instructions(monkeypatch):
    from tune_gemm.runtime import dispatch

    ampere = replace(INTERPRETER_PROFILE, name="NVIDIA A100", fp8=False)
    monkeypatch.setattr(dispatch, "_device_profile", lambda device: ampere)
    with pytest.raises(TypeError, match="fp8 inputs need a GPU with fp8 matrix instructions .* NVIDIA A100"):
        Dispatcher().matmul(_fp8(3, 4), _fp8(4, 5), scale_a=torch.tensor([1.0]), scale_b=torch.tensor([1.0]))


def test_operands_past_32_bit_offsets_are_refused():
    def meta(*shape):  # shapes and strides without memory
        return torch.empty(shape, dtype=torch.float16, device="meta")

    with pytest.raises(ValueError, match="A .* spans 2\\*\\*31 elements"):
        Dispatcher().choose(meta(3, 2**30), meta(2**30, 1))  # last element of A at 3 * 2**30 - 1
    with pytest.raises(ValueError, match="C would hold"):
        Dispatcher().choose(meta(2**16, 8), meta(8, 2**15))


def test_cpu_tensors_need_the_interpreter():
    # a fresh process without TRITON_INTERPRET: this one runs the interpreter (tests/conftest.py)
    script = ("import torch\nfrom tune_gemm.runtime.dispatch import Dispatcher\n"
              "try:\n    Dispatcher().matmul(torch.randn(4, 4), torch.randn(4, 4))\n"
              "except ValueError as error:\n    print(error)\n")
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                            cwd=Path(__file__).resolve().parents[2], timeout=300)
    assert "TRITON_INTERPRET" in result.stdout, result.stdout + result.stderr


def test_the_process_table_starts_from_the_environment(tmp_path, monkeypatch):
    from tune_gemm.runtime import dispatch

    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("- {M: 16, N: 16, K: 16, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16}\n")
    second.write_text("- {M: 32, N: 16, K: 16, BLOCK_SIZE_M: 32, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16}\n")
    monkeypatch.setenv(dispatch.RESULTS_ENV, f"{first}:{second}")
    monkeypatch.setattr(dispatch, "_process_dispatcher", None)
    assert len(dispatch.process_dispatcher().table) == 2
    assert dispatch.process_dispatcher() is dispatch.process_dispatcher()
    monkeypatch.setenv(dispatch.RESULTS_ENV, str(tmp_path / "missing.yaml"))
    monkeypatch.setattr(dispatch, "_process_dispatcher", None)
    with pytest.raises(UserError, match="missing.yaml does not exist"):
        dispatch.process_dispatcher()


def _counted_checks(monkeypatch) -> list:
    checked = []
    check = Dispatcher._check

    def counting(self, a, b, *rest):
        checked.append((tuple(a.shape), a.stride(), tuple(b.shape), b.stride()))
        return check(self, a, b, *rest)
    monkeypatch.setattr(Dispatcher, "_check", counting)
    return checked


def _error(c, a, b) -> float:
    reference = a.double() @ b.double()
    return float(torch.linalg.norm(c.double() - reference) / torch.linalg.norm(reference))


def test_a_call_like_one_before_is_launched_without_its_checks(monkeypatch):
    checked = _counted_checks(monkeypatch)
    dispatcher = Dispatcher()
    for seed in range(3):  # new matrices of the same shapes, strides and dtype each time
        generator = torch.Generator().manual_seed(seed)
        a, b = torch.randn(20, 24, generator=generator).half(), torch.randn(24, 12, generator=generator).half()
        assert _error(dispatcher.matmul(a, b), a, b) < 1e-3
    assert len(checked) == 1
    dispatcher.matmul(a, b, torch.float32)  # another output dtype
    dispatcher.matmul(a, b.t().contiguous().t())  # B column-major
    dispatcher.matmul(a[:10], b)  # fewer rows
    assert len(checked) == 4
    dispatcher.load()  # a new table: earlier choices and checked calls are forgotten
    dispatcher.matmul(a, b)
    assert len(checked) == 5


def test_calls_that_copy_or_are_refused_are_checked_each_time(monkeypatch):
    checked = _counted_checks(monkeypatch)
    dispatcher = Dispatcher()
    a, strided = torch.randn(20, 24).half(), torch.randn(24, 24).half()[:, ::2]  # B with no unit stride
    for _ in range(2):
        assert _error(dispatcher.matmul(a, strided), a, strided) < 1e-3
        with pytest.raises(ValueError, match="cannot be multiplied"):
            dispatcher.matmul(a, a)
    assert len(checked) == 4


def test_checked_calls_are_remembered_up_to_a_bound(monkeypatch):
    from tune_gemm.runtime import dispatch

    monkeypatch.setattr(dispatch, "CALLS_REMEMBERED", 2)
    checked = _counted_checks(monkeypatch)
    dispatcher = Dispatcher()
    b = torch.randn(16, 8).half()
    for rows in (1, 2, 3, 1):  # the first call's kind was dropped to keep two
        dispatcher.matmul(torch.randn(rows, 16).half(), b)
    assert len(checked) == 4


def test_a_swapped_config_returns_c_not_the_transpose_it_writes():
    swapped = Config(64, 128, 64, 1, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, SWAP_AB=1)
    entry = TunedEntry(problem(70, 64, 90), swapped, INTERPRETER_PROFILE.name, None, None, None, {})
    dispatcher = Dispatcher(Table([entry]))
    a, b = torch.randn(70, 90).half(), torch.randn(90, 64).half()
    assert dispatcher.choose(a, b).config == swapped
    c = dispatcher.matmul(a, b)
    assert c.shape == (70, 64) and c.is_contiguous() and _error(c, a, b) < 1e-3
