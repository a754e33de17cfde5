"""tune_gemm.core.dtypes: the ROCm script's dtype names (and the e4m3/e5m2 aliases), the combinations the kernels run,
the fp8 device check, and the new names through a results file and back as a sizes file."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from helpers import problem

from tune_gemm.core.config import Config
from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.core.dtypes import (
    DTYPES,
    check_combination,
    check_device_runs,
    dtype_named,
)
from tune_gemm.core.errors import UserError
from tune_gemm.files.results import ResultEntry, read_entries, record
from tune_gemm.files.sizes import load_sizes
from tune_gemm.space.prune import prune


def test_names_and_aliases():
    assert dtype_named("fp8").torch_dtype == torch.float8_e4m3fn and dtype_named("e4m3") is DTYPES["fp8"]
    assert dtype_named("bf8").torch_dtype == torch.float8_e5m2 and dtype_named("e5m2") is DTYPES["bf8"]
    assert dtype_named("int8").torch_dtype == torch.int8 and DTYPES["int32"].bytes == 4
    assert DTYPES["fp8"].scaled and DTYPES["bf8"].scaled and not DTYPES["int8"].scaled and not DTYPES["fp16"].scaled
    with pytest.raises(UserError, match="'fp4' is not a known dtype; use one of .*bf8.*e4m3"):
        dtype_named("fp4", "-dtype_a")


@pytest.mark.parametrize("a,c", [("fp8", "fp16"), ("fp8", "bf16"), ("fp8", "fp32"), ("bf8", "fp16"), ("int8", "int32"),
                                 ("fp16", "fp32"), ("bf16", "bf16"), ("fp32", "fp32")])
def test_combinations_the_kernels_run(a, c):
    check_combination(DTYPES[a], DTYPES[a], DTYPES[c])


@pytest.mark.parametrize("a,b,c,message", [
    ("fp8", "bf8", "fp16", "same dtype"),
    ("fp8", "fp8", "fp8", "dtype_c fp8 with fp8 inputs is not supported"),
    ("fp8", "fp8", "int32", "dtype_c int32 with fp8 inputs"),
    ("int8", "int8", "fp32", "int8 inputs need dtype_c int32, not fp32"),
    ("int8", "int8", "int8", "int8 inputs need dtype_c int32"),
    ("int32", "int32", "int32", "int32 is an output type only"),
    ("fp16", "fp16", "int32", "dtype_c int32 with fp16 inputs"),
    ("fp32", "fp32", "fp16", "narrower"),
])
def test_combinations_refused_in_one_line_naming_the_entry(a, b, c, message):
    with pytest.raises(UserError, match=message) as caught:
        check_combination(DTYPES[a], DTYPES[b], DTYPES[c], "sizes.yaml entry 3")
    assert str(caught.value).startswith("sizes.yaml entry 3: ") and "\n" not in str(caught.value)


def test_fp8_needs_a_gpu_with_fp8_dots():
    check_device_runs(DTYPES["fp8"], INTERPRETER_PROFILE, "size")
    ampere = replace(INTERPRETER_PROFILE, name="NVIDIA A100", fp8=False)
    check_device_runs(DTYPES["int8"], ampere, "size")
    with pytest.raises(UserError, match="size: bf8 inputs need a GPU with fp8 matrix instructions.*NVIDIA A100"):
        check_device_runs(DTYPES["bf8"], ampere, "size")


@pytest.mark.parametrize("dtype,dtype_c", [("fp8", "fp16"), ("int8", "int32")])
def test_one_byte_inputs_get_k_tiles_of_32_and_a_masked_loop_for_k_not_a_multiple_of_32(dtype, dtype_c):
    for K, even in ((4096, True), (48, False)):
        kept = prune(problem(4096, 4096, K, dtype, dtype_c=dtype_c), INTERPRETER_PROFILE).configs
        assert kept and min(c.BLOCK_SIZE_K for c in kept) == 32
        assert all(K % (c.BLOCK_SIZE_K * c.SPLIT_K) == 0 for c in kept) == even
        # the TMA family takes 1-byte inputs in K tiles of 128 bytes or more: none fits a K of 48
        tma = [c for c in kept if c.PERSISTENT_TMA]
        assert all(c.BLOCK_SIZE_K >= 128 for c in tma) and bool(tma) == even


@pytest.mark.parametrize("dtype,dtype_c", [("fp8", "bf16"), ("bf8", "fp32"), ("int8", "int32")])
def test_results_entry_round_trips_as_a_sizes_entry(tmp_path, dtype, dtype_c):
    p = replace(problem(64, 48, 96, dtype, col_b=True, dtype_c=dtype_c), bias=True)
    config = Config(64, 32, 32, 1, 1, 4, 2)
    record(tmp_path / "out.yaml", ResultEntry(p, config, 3.0, 1.0, "gpu", "cupti", matmul_time_us=4.0))
    [entry] = read_entries(tmp_path / "out.yaml")
    assert (entry["dtype_a"], entry["dtype_b"], entry["dtype_c"]) == (dtype, dtype, dtype_c)
    [request] = load_sizes(tmp_path / "out.yaml", problem(1, 1, 1))
    assert request.problem == p and request.config == config


def test_an_alias_in_a_sizes_file_reads_as_the_rocm_name(tmp_path):
    path = tmp_path / "sizes.yaml"
    path.write_text("- {M: 32, N: 32, K: 64, dtype_a: e5m2, dtype_b: bf8, dtype_c: fp16}\n")
    [request] = load_sizes(path, problem(1, 1, 1))
    assert request.problem.dtype_a is DTYPES["bf8"] and request.problem.label == "32x32x64 bf8->fp16 TT"
