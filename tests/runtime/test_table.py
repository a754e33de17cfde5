"""tune_gemm.runtime.table: results files into the tuned table, filtered by GPU, dtypes and layouts; later files win."""

from __future__ import annotations

import json

import pytest

from tune_gemm.core.config import Config
from tune_gemm.core.errors import UserError
from tune_gemm.runtime.table import Table, Variant, read_tuned

CONFIG = "BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 32, BLOCK_SIZE_K: 16"
FP16_TT = Variant("fp16", "fp16", False, False)


def _write(path, *entries: str):
    path.write_text("".join(f"- {{{entry}}}\n" for entry in entries))
    return path


def test_entries_apply_to_their_gpu_and_unnamed_ones_to_every_gpu(tmp_path):
    results = _write(tmp_path / "r.yaml",
                     f"M: 16, N: 16, K: 16, {CONFIG}, gpu: GPU A",
                     f"M: 32, N: 16, K: 16, {CONFIG}, gpu: GPU B",
                     f"M: 64, N: 16, K: 16, {CONFIG}",
                     f"M: 16, N: 16, K: 16, {CONFIG}, SPLIT_K: 2")  # unnamed, same shape as GPU A's
    table = Table(read_tuned(results))
    assert sorted(table.shapes("GPU A", FP16_TT)) == [(16, 16, 16), (64, 16, 16)]
    assert sorted(table.shapes("GPU B", FP16_TT)) == [(16, 16, 16), (32, 16, 16), (64, 16, 16)]
    assert table.shapes("GPU A", FP16_TT)[(16, 16, 16)].SPLIT_K == 1  # the GPU's own entry beats the unnamed one
    assert table.shapes("GPU B", FP16_TT)[(16, 16, 16)].SPLIT_K == 2


def test_dtypes_and_layouts_are_separate_variants_and_bias_entries_are_left_out(tmp_path):
    results = _write(tmp_path / "r.yaml",
                     f"M: 16, N: 16, K: 16, {CONFIG}, rowMajorA: N",
                     f"M: 16, N: 16, K: 16, {CONFIG}, dtype_a: bf16, dtype_b: bf16, dtype_c: fp32",
                     f"M: 16, N: 16, K: 16, {CONFIG}, bias_vector: true")
    table = Table(read_tuned(results))
    assert table.shapes("x", FP16_TT) == {}
    assert list(table.shapes("x", Variant("fp16", "fp16", True, False))) == [(16, 16, 16)]
    assert list(table.shapes("x", Variant("bf16", "fp32", False, False))) == [(16, 16, 16)]
    assert len(table) == 2


def test_later_files_override_earlier_ones(tmp_path):
    first = _write(tmp_path / "a.yaml", f"M: 16, N: 16, K: 16, {CONFIG}", f"M: 32, N: 16, K: 16, {CONFIG}")
    second = _write(tmp_path / "b.yaml", f"M: 16, N: 16, K: 16, {CONFIG}, num_warps: 8")
    table = Table()
    table.load(first, second)
    assert table.shapes("x", FP16_TT)[(16, 16, 16)].num_warps == 8
    assert table.shapes("x", FP16_TT)[(32, 16, 16)].num_warps == 4


def test_measurements_are_read_and_the_mapping_kept(tmp_path):
    results = _write(tmp_path / "r.yaml", f"M: 16, N: 16, K: 16, {CONFIG}, gpu: G, time_us: 12, matmul_time_us: 9.5, "
                                          "profiler: cupti, tflops: 0.01")
    [entry] = read_tuned(results)
    assert (entry.time_us, entry.matmul_time_us, entry.profiler, entry.gpu) == (12.0, 9.5, "cupti", "G")
    assert entry.config == Config(16, 32, 16) and entry.mapping["tflops"] == 0.01


@pytest.mark.parametrize("text,message", [
    ("- {M: 16, N: 16, K: 16}\n", "entry 1: no config fields"),
    (f"- {{M: 16, N: 16, K: 16, {CONFIG}, gpu: 7}}\n", "entry 1: gpu must be a string"),
    (f"- {{M: 16, N: 16, K: 16, {CONFIG}, time_us: fast}}\n", "entry 1: time_us must be a number"),
    ("- {M: 16, N: 16, K: [\n", "not valid YAML"),
])
def test_bad_results_files_name_the_file_and_entry(tmp_path, text, message):
    path = tmp_path / "r.yaml"
    path.write_text(text)
    with pytest.raises(UserError, match=message):
        read_tuned(path)


def test_missing_file_and_json_without_entries_are_refused(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        read_tuned(tmp_path / "none.yaml")
    (tmp_path / "x.json").write_text(json.dumps({"configs": {}}))
    with pytest.raises(UserError, match="'entries' list"):
        read_tuned(tmp_path / "x.json")
    (tmp_path / "y.json").write_text("{")
    with pytest.raises(UserError, match="not valid JSON"):
        read_tuned(tmp_path / "y.json")
