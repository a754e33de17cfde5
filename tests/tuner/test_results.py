"""tune_gemm.files.results: the ROCm-layout results file, its atomic rewrite, and reading it back as a sizes file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from helpers import problem

from tune_gemm.core.config import Config
from tune_gemm.core.errors import UserError
from tune_gemm.files.results import (
    ResultEntry,
    check_writable,
    dump_entries,
    read_entries,
    record,
)
from tune_gemm.files.sizes import load_sizes

ROCM_KEYS = ["M", "N", "K", "rowMajorA", "rowMajorB", "BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M",
             "SPLIT_K", "num_warps", "num_stages"]
OUR_KEYS = ["dtype_a", "dtype_b", "dtype_c", "gpu", "time_us", "tflops", "profiler"]
DEFAULTS = problem(1, 1, 1)


def entry(M=4096, N=4096, K=4096, config=Config(128, 256, 64, 8, 1, 8, 3), time_us=140.123456, dtype="fp16",
          col_a=False, col_b=True, matmul=None, gpu="NVIDIA H100 80GB HBM3", dtype_c=None) -> ResultEntry:
    p = problem(M, N, K, dtype, col_a=col_a, col_b=col_b, dtype_c=dtype_c)
    return ResultEntry(p, config, time_us, p.tflops(time_us), gpu, "events", matmul)


def test_to_mapping_keys_in_order():
    mapping = entry().to_mapping()
    assert list(mapping) == ROCM_KEYS + OUR_KEYS


def test_to_mapping_values():
    mapping = entry(M=16, N=4096, K=4096, config=Config(16, 128, 64, 1, 4, 4, 3), time_us=12.3456789,
                    col_a=True, col_b=False, dtype="bf16", dtype_c="fp32").to_mapping()
    assert mapping == {
        "M": 16, "N": 4096, "K": 4096, "rowMajorA": "N", "rowMajorB": "T",
        "BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "SPLIT_K": 4,
        "num_warps": 4, "num_stages": 3,
        "dtype_a": "bf16", "dtype_b": "bf16", "dtype_c": "fp32", "gpu": "NVIDIA H100 80GB HBM3",
        "time_us": 12.346, "tflops": round(2 * 16 * 4096 * 4096 / 12.3456789e-6 / 1e12, 2), "profiler": "events",
    }
    assert mapping["tflops"] == 43.49


def test_to_mapping_with_matmul_time():
    mapping = entry(matmul=150.98765).to_mapping()
    assert list(mapping) == ROCM_KEYS + OUR_KEYS + ["matmul_time_us"]
    assert mapping["matmul_time_us"] == 150.988


def test_record_then_load_sizes_round_trip(tmp_path):
    path = tmp_path / "results.yaml"
    e = entry()
    record(path, e)
    [request] = load_sizes(path, DEFAULTS)
    assert request.problem == e.problem
    assert request.config == e.config


@pytest.mark.parametrize("e", [
    entry(M=33, N=17, K=40, config=Config(32, 32, 32, 1, 1, 1, 2), dtype="fp32", col_a=True, col_b=True),
    entry(M=16, N=4096, K=4096, config=Config(16, 64, 128, 1, 8, 2, 4), dtype="bf16", col_b=False),
    entry(gpu="CPU (Triton interpreter)", matmul=1.0, dtype="fp16", dtype_c="fp32"),
    entry(gpu="AMD Instinct MI300X: gfx942 # odd 'name'"),
])
def test_round_trip_variety(tmp_path, e):
    path = tmp_path / "results.yaml"
    record(path, e)
    [request] = load_sizes(path, problem(1, 1, 1, "fp32", col_a=not e.problem.col_a, col_b=not e.problem.col_b))
    assert request.problem == e.problem
    assert request.config == e.config
    assert read_entries(path) == [e.to_mapping()]


def test_record_same_size_replaces(tmp_path):
    path = tmp_path / "results.yaml"
    record(path, entry(time_us=200.0))
    record(path, entry(time_us=100.0, config=Config(128, 128, 64, 8, 1, 4, 4)))
    entries = read_entries(path)
    assert len(entries) == 1
    assert entries[0]["time_us"] == 100.0
    assert Config.from_mapping(entries[0]) == Config(128, 128, 64, 8, 1, 4, 4)


def test_record_different_size_appends(tmp_path):
    path = tmp_path / "results.yaml"
    record(path, entry(M=4096))
    record(path, entry(M=16))
    record(path, entry(M=4096, col_a=True))  # other layout: another entry
    record(path, entry(M=4096, dtype="bf16"))  # other dtype: another entry
    assert [(e["M"], e["rowMajorA"], e["dtype_a"]) for e in read_entries(path)] == [
        (4096, "T", "fp16"), (16, "T", "fp16"), (4096, "N", "fp16"), (4096, "T", "bf16")]
    assert [r.problem.M for r in load_sizes(path, DEFAULTS)] == [4096, 16, 4096, 4096]


def test_record_replacing_keeps_other_entries(tmp_path):
    path = tmp_path / "results.yaml"
    for M in (16, 32, 64):
        record(path, entry(M=M, time_us=float(M)))
    record(path, entry(M=32, time_us=1.5))
    assert [(e["M"], e["time_us"]) for e in read_entries(path)] == [(16, 16.0), (64, 64.0), (32, 1.5)]


def test_file_is_one_flow_line_per_entry(tmp_path):
    path = tmp_path / "results.yaml"
    record(path, entry(M=4096))
    record(path, entry(M=16, matmul=3.0))
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    for line in lines:
        assert line.startswith("- {M: ") and line.endswith("}")
    assert lines[0].startswith("- {M: 4096, N: 4096, K: 4096, rowMajorA: T, rowMajorB: N, BLOCK_SIZE_M: 128, ")
    assert "matmul_time_us: 3.0}" in lines[1]


def test_dump_entries_matches_rocm_layout():
    text = dump_entries([{"M": 16, "N": 16, "K": 16, "rowMajorA": "T", "rowMajorB": "N"}])
    assert text == "- {M: 16, N: 16, K: 16, rowMajorA: T, rowMajorB: N}\n"
    assert dump_entries([]) == ""


def test_record_leaves_no_temp_files(tmp_path):
    path = tmp_path / "results.yaml"
    record(path, entry(M=16))
    record(path, entry(M=32))
    record(path, entry(M=16))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.yaml"]


def test_record_failure_raises_user_error_and_cleans_up(tmp_path, monkeypatch):
    path = tmp_path / "results.yaml"
    record(path, entry(M=16))
    before = path.read_text()

    def full_disk(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("tune_gemm.files.results.os.replace", full_disk)
    with pytest.raises(UserError) as info:
        record(path, entry(M=32))
    assert str(info.value) == f"cannot write results file {path}: No space left on device"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.yaml"]
    assert path.read_text() == before


def test_read_entries_on_a_directory_is_a_user_error(tmp_path):
    with pytest.raises(UserError):
        read_entries(tmp_path)


def test_check_writable_on_a_directory_is_a_user_error(tmp_path):
    directory = tmp_path / "results.yaml"
    directory.mkdir()
    with pytest.raises(UserError):
        check_writable(directory)


def test_read_entries_binary_file_is_a_user_error(tmp_path):
    path = tmp_path / "results.yaml"
    path.write_bytes(b"- {M: \xff\xfe}\n")
    with pytest.raises(UserError):
        read_entries(path)


def test_record_into_existing_rocm_file(tmp_path):
    path = tmp_path / "results.yaml"
    path.write_text("- {'M': 16, 'N': 16, 'K': 16, 'rowMajorA': 'T', 'rowMajorB': 'N', 'BLOCK_SIZE_M': 16, "
                    "'BLOCK_SIZE_N': 16, 'BLOCK_SIZE_K': 16, 'GROUP_SIZE_M': 1, 'SPLIT_K': 1, 'num_warps': 4, "
                    "'num_stages': 0, 'waves_per_eu': 0}\n")
    record(path, entry())
    entries = read_entries(path)
    assert len(entries) == 2
    assert entries[0]["waves_per_eu"] == 0 and entries[1]["M"] == 4096


def test_read_entries_missing_and_empty(tmp_path):
    assert read_entries(tmp_path / "none.yaml") == []
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert read_entries(empty) == []


@pytest.mark.parametrize("text, expected", [
    ("- {M: 16, N: 16\n", "not valid YAML"),
    ("\tfoo: [\n", "not valid YAML"),
    ("M: 16\n", "not a list of entries"),
    ("- 16\n- 32\n", "not a list of entries"),
    ("- {M: 16}\n- just text\n", "not a list of entries"),
])
def test_read_entries_corrupt_file(tmp_path, text, expected):
    path = tmp_path / "results.yaml"
    path.write_text(text)
    with pytest.raises(UserError) as info:
        read_entries(path)
    assert str(path) in str(info.value) and expected in str(info.value)


def test_record_refuses_to_overwrite_corrupt_file(tmp_path):
    path = tmp_path / "results.yaml"
    path.write_text("- {M: 16, N: 16\n")
    with pytest.raises(UserError):
        record(path, entry())
    assert path.read_text() == "- {M: 16, N: 16\n"


def test_check_writable_missing_directory(tmp_path):
    path = tmp_path / "no" / "such" / "dir" / "results.yaml"
    with pytest.raises(UserError) as info:
        check_writable(path)
    assert str(info.value) == f"results file {path}: directory {path.parent} does not exist"


def test_check_writable_ok(tmp_path):
    check_writable(tmp_path / "results.yaml")
    record(tmp_path / "results.yaml", entry())
    check_writable(tmp_path / "results.yaml")
    assert not (tmp_path / "results.yaml").read_text() == ""


def test_check_writable_relative_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    check_writable(Path("results.yaml"))
    with pytest.raises(UserError, match="does not exist"):
        check_writable(Path("missing_dir/results.yaml"))


def test_check_writable_corrupt_file(tmp_path):
    path = tmp_path / "results.yaml"
    path.write_text("{not: [valid\n")
    with pytest.raises(UserError, match="not valid YAML"):
        check_writable(path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_check_writable_read_only_directory(tmp_path):
    directory = tmp_path / "ro"
    directory.mkdir()
    directory.chmod(0o500)
    try:
        with pytest.raises(UserError, match="is not writable"):
            check_writable(directory / "results.yaml")
    finally:
        directory.chmod(0o700)


def test_written_file_is_valid_yaml_list(tmp_path):
    path = tmp_path / "results.yaml"
    record(path, entry(gpu="weird: {name} [x] - 'q' \"dq\""))
    document = yaml.safe_load(path.read_text())
    assert isinstance(document, list) and document[0]["gpu"] == "weird: {name} [x] - 'q' \"dq\""
