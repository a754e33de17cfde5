"""tune_gemm.files.sizes.load_sizes: valid sizes files (ours, ROCm's, results files) and every way one can be wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import problem

from tune_gemm.core.config import Config
from tune_gemm.core.dtypes import DTYPES
from tune_gemm.core.errors import UserError
from tune_gemm.files.sizes import MAX_ELEMENTS, SizeRequest, load_sizes

DEFAULTS = problem(1, 1, 1)  # fp16 -> fp16, row-major A and B
FP16, BF16, FP32 = DTYPES["fp16"], DTYPES["bf16"], DTYPES["fp32"]


def write(tmp_path: Path, text: str, name: str = "sizes.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def load_error(path: Path, defaults=DEFAULTS) -> str:
    with pytest.raises(UserError) as info:
        load_sizes(path, defaults)
    return str(info.value)


# --- valid files ----------------------------------------------------------------------------------------------------


def test_plain_list(tmp_path):
    path = write(tmp_path, "- {M: 4096, N: 4096, K: 4096}\n- {M: 16, N: 4096, K: 4096}\n- {M: 33, N: 17, K: 40}\n")
    requests = load_sizes(path, DEFAULTS)
    assert [(r.problem.M, r.problem.N, r.problem.K) for r in requests] == [(4096, 4096, 4096), (16, 4096, 4096),
                                                                            (33, 17, 40)]
    for r in requests:
        assert isinstance(r, SizeRequest)
        assert r.config is None
        assert (r.problem.dtype_a, r.problem.dtype_b, r.problem.dtype_c) == (FP16, FP16, FP16)
        assert (r.problem.col_a, r.problem.col_b) == (False, False)


def test_block_style_list(tmp_path):
    path = write(tmp_path, "- M: 64\n  N: 128\n  K: 256\n")
    [request] = load_sizes(path, DEFAULTS)
    assert request.problem == problem(64, 128, 256)


def test_defaults_give_dtypes_and_layouts(tmp_path):
    path = write(tmp_path, "- {M: 32, N: 64, K: 128}\n")
    defaults = problem(1, 1, 1, "bf16", col_a=True, col_b=False, dtype_c="fp32")
    [request] = load_sizes(path, defaults)
    assert request.problem == problem(32, 64, 128, "bf16", col_a=True, col_b=False, dtype_c="fp32")


@pytest.mark.parametrize("a, b, col_a, col_b", [("T", "T", False, False), ("T", "N", False, True),
                                                 ("N", "T", True, False), ("N", "N", True, True)])
def test_layouts(tmp_path, a, b, col_a, col_b):
    path = write(tmp_path, f"- {{M: 16, N: 32, K: 64, rowMajorA: {a}, rowMajorB: {b}}}\n")
    [request] = load_sizes(path, problem(1, 1, 1, col_a=not col_a, col_b=not col_b))
    assert (request.problem.col_a, request.problem.col_b) == (col_a, col_b)


def test_layout_booleans(tmp_path):
    path = write(tmp_path, "- {M: 16, N: 32, K: 64, rowMajorA: true, rowMajorB: false}\n")
    [request] = load_sizes(path, DEFAULTS)
    assert (request.problem.col_a, request.problem.col_b) == (False, True)


def test_rocm_flow_entries(tmp_path):
    path = write(tmp_path, "- {'M': 16, 'N': 16, 'K': 16, 'rowMajorA': 'T', 'rowMajorB': 'N'}\n"
                           "- {'M': 4096, 'N': 4096, 'K': 4096, 'rowMajorA': 'N', 'rowMajorB': 'T'}\n")
    first, second = load_sizes(path, DEFAULTS)
    assert first.problem == problem(16, 16, 16, col_b=True)
    assert second.problem == problem(4096, 4096, 4096, col_a=True)
    assert first.config is None and second.config is None


@pytest.mark.parametrize("dtype_a, dtype_c", [("fp16", "fp16"), ("bf16", "bf16"), ("fp32", "fp32"),
                                              ("fp16", "fp32"), ("bf16", "fp32")])
def test_dtype_fields(tmp_path, dtype_a, dtype_c):
    path = write(tmp_path, f"- {{M: 16, N: 16, K: 16, dtype_a: {dtype_a}, dtype_b: {dtype_a}, dtype_c: {dtype_c}}}\n")
    [request] = load_sizes(path, DEFAULTS)
    assert request.problem.dtype_a is DTYPES[dtype_a]
    assert request.problem.dtype_b is DTYPES[dtype_a]
    assert request.problem.dtype_c is DTYPES[dtype_c]


def test_results_style_entry_yields_config(tmp_path):
    path = write(tmp_path, "- {M: 4096, N: 4096, K: 4096, rowMajorA: T, rowMajorB: N, BLOCK_SIZE_M: 128, "
                           "BLOCK_SIZE_N: 256, BLOCK_SIZE_K: 64, GROUP_SIZE_M: 8, SPLIT_K: 1, num_warps: 8, "
                           "num_stages: 3, dtype_a: fp16, dtype_b: fp16, dtype_c: fp16, gpu: NVIDIA H100 80GB HBM3, "
                           "time_us: 140.123, tflops: 980.5, profiler: events}\n")
    [request] = load_sizes(path, DEFAULTS)
    assert request.problem == problem(4096, 4096, 4096, col_b=True)
    assert request.config == Config(128, 256, 64, 8, 1, 8, 3)


def test_config_with_only_block_sizes_gets_defaults(tmp_path):
    path = write(tmp_path, "- {M: 16, N: 16, K: 16, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 32, BLOCK_SIZE_K: 64}\n")
    [request] = load_sizes(path, DEFAULTS)
    assert request.config == Config(16, 32, 64)


def test_largest_allowed_size(tmp_path):
    # A is 65536 x 32767 = 2**31 - 65536 elements: allowed.
    path = write(tmp_path, "- {M: 65536, N: 16, K: 32767}\n")
    [request] = load_sizes(path, DEFAULTS)
    assert request.problem.M * request.problem.K <= MAX_ELEMENTS


def test_accepts_str_path(tmp_path):
    path = write(tmp_path, "- {M: 16, N: 16, K: 16}\n")
    assert load_sizes(str(path), DEFAULTS)[0].problem == problem(16, 16, 16)


# --- errors ---------------------------------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    path = tmp_path / "nope.yaml"
    message = load_error(path)
    assert str(path) in message and "does not exist" in message


def test_directory_instead_of_file(tmp_path):
    message = load_error(tmp_path)
    assert str(tmp_path) in message and "cannot be read" in message


def test_not_utf8(tmp_path):
    path = tmp_path / "sizes.yaml"
    path.write_bytes(b"- {M: \xff\xfe}\n")
    message = load_error(path)
    assert str(path) in message and "cannot be read" in message


@pytest.mark.parametrize("text", ["- {M: 16, N: 16\n", "M: [1, 2\n", "- {M: 16}\n  - x: : y\n\t- z"])
def test_not_yaml(tmp_path, text):
    path = write(tmp_path, text)
    message = load_error(path)
    assert str(path) in message and "not valid YAML" in message


def test_not_yaml_names_the_line(tmp_path):
    path = write(tmp_path, "- {M: 16, N: 16, K: 16}\n- {M: 16, N: 16, K: 16\n")
    assert "at line 3" in load_error(path)


# YAML that is not a list, and empty files
@pytest.mark.parametrize("text", ["M: 16\nN: 16\nK: 16\n", "hello\n", "42\n", "[]\n", "", "\n\n", "# only a comment\n"])
def test_yaml_but_not_a_non_empty_list(tmp_path, text):
    path = write(tmp_path, text)
    message = load_error(path)
    assert str(path) in message and "non-empty YAML list" in message


@pytest.mark.parametrize("text, kind", [("- 16\n", "int"), ("- [16, 16, 16]\n", "list"), ("- M16N16K16\n", "str"),
                                        ("- {M: 16, N: 16, K: 16}\n- null\n", "NoneType")])
def test_entry_not_a_mapping(tmp_path, text, kind):
    path = write(tmp_path, text)
    message = load_error(path)
    assert f"{path} entry {text.count('-')}" in message
    assert "must be a mapping" in message and kind in message


@pytest.mark.parametrize("text, field", [("- {N: 16, K: 16}\n", "M"), ("- {M: 16, K: 16}\n", "N"),
                                         ("- {M: 16, N: 16}\n", "K")])
def test_missing_dimension(tmp_path, text, field):
    path = write(tmp_path, text)
    assert load_error(path) == f"{path} entry 1: missing {field}"


def test_missing_dimension_in_second_entry(tmp_path):
    path = write(tmp_path, "- {M: 16, N: 16, K: 16}\n- {N: 16, K: 16}\n")
    assert load_error(path) == f"{path} entry 2: missing M"


@pytest.mark.parametrize("text, expected", [
    ("- {M: 0, N: 16, K: 16}\n", "M must be positive, got 0"),
    ("- {M: 16, N: -5, K: 16}\n", "N must be positive, got -5"),
    ("- {M: 16, N: 16, K: -1}\n", "K must be positive, got -1"),
])
def test_non_positive_dimension(tmp_path, text, expected):
    path = write(tmp_path, text)
    assert load_error(path) == f"{path} entry 1: {expected}"


@pytest.mark.parametrize("value, shown", [("abc", "'abc'"), ("1.5", "1.5"), ("true", "True"), ("'16'", "'16'"),
                                          ("[16]", "[16]"), ("null", "None")])
def test_non_integer_dimension(tmp_path, value, shown):
    path = write(tmp_path, f"- {{M: 16, N: 16, K: {value}}}\n")
    assert load_error(path) == f"{path} entry 1: K must be an integer, got {shown}"


@pytest.mark.parametrize("value", ["X", "t", "row", "1", "0", "'true'"])
def test_bad_layout_value(tmp_path, value):
    path = write(tmp_path, f"- {{M: 16, N: 16, K: 16, rowMajorA: {value}}}\n")
    message = load_error(path)
    assert message.startswith(f"{path} entry 1: rowMajorA must be 'T' (row-major) or 'N' (column-major)")


def test_bad_layout_value_b(tmp_path):
    path = write(tmp_path, "- {M: 16, N: 16, K: 16, rowMajorB: 2}\n")
    assert load_error(path).startswith(f"{path} entry 1: rowMajorB must be 'T'")


@pytest.mark.parametrize("field, value, expected", [
    ("dtype_a", "fp64", "not a known dtype"),
    ("dtype_b", "float16", "not a known dtype"),
    ("dtype_c", "half", "not a known dtype"),
    ("dtype_a", "fp4", "not a known dtype"),
    ("dtype_c", "e4m3fnuz", "not a known dtype"),
])
def test_unknown_dtype(tmp_path, field, value, expected):
    path = write(tmp_path, f"- {{M: 16, N: 16, K: 16, {field}: {value}}}\n")
    message = load_error(path)
    assert message.startswith(f"{path} entry 1: {field} {value!r}")
    assert expected in message


def test_dtype_not_a_string(tmp_path):
    path = write(tmp_path, "- {M: 16, N: 16, K: 16, dtype_a: 16}\n")
    assert load_error(path) == f"{path} entry 1: dtype_a must be a dtype name, got 16"


def test_mixed_input_dtypes_refused(tmp_path):
    path = write(tmp_path, "- {M: 16, N: 16, K: 16, dtype_a: fp16, dtype_b: bf16}\n")
    message = load_error(path)
    assert "fp16" in message and "bf16" in message and "same dtype" in message


@pytest.mark.parametrize("fields", ["dtype_a: fp16, dtype_b: bf16", "dtype_a: fp32, dtype_b: fp32, dtype_c: fp16"])
def test_dtype_combination_error_names_file_and_entry(tmp_path, fields):
    path = write(tmp_path, "- {M: 16, N: 16, K: 16}\n" f"- {{M: 16, N: 16, K: 16, {fields}}}\n")
    assert f"{path} entry 2" in load_error(path)


def test_mixed_dtype_from_defaults(tmp_path):
    path = write(tmp_path, "- {M: 16, N: 16, K: 16, dtype_b: bf16}\n")
    message = load_error(path)
    assert "fp16" in message and "bf16" in message and "same dtype" in message


@pytest.mark.parametrize("fields, missing", [
    ("BLOCK_SIZE_M: 64", "BLOCK_SIZE_N, BLOCK_SIZE_K"),
    ("BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 64", "BLOCK_SIZE_K"),
    ("num_warps: 4, num_stages: 2", "BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K"),
    ("SPLIT_K: 2, BLOCK_SIZE_K: 32", "BLOCK_SIZE_M, BLOCK_SIZE_N"),
])
def test_incomplete_config_fields(tmp_path, fields, missing):
    path = write(tmp_path, f"- {{M: 16, N: 16, K: 16, {fields}}}\n")
    assert load_error(path) == f"{path} entry 1: config fields incomplete, missing {missing}"


@pytest.mark.parametrize("field, value, expected", [
    ("num_warps", "0", "num_warps must be an integer >= 1, got 0"),
    ("waves_per_eu", "-1", "waves_per_eu must be an integer >= 0, got -1"),
    ("BLOCK_SIZE_K", "'64'", "BLOCK_SIZE_K must be an integer, got '64'"),
    ("num_stages", "true", "num_stages must be an integer, got True"),
])
def test_bad_config_field(tmp_path, field, value, expected):
    base = {"BLOCK_SIZE_M": "64", "BLOCK_SIZE_N": "64", "BLOCK_SIZE_K": "64"}
    base[field] = value
    body = ", ".join(f"{k}: {v}" for k, v in base.items())
    path = write(tmp_path, f"- {{M: 16, N: 16, K: 16, {body}}}\n")
    assert load_error(path) == f"{path} entry 1: {expected}"


@pytest.mark.parametrize("M, N, K, operand", [
    (65536, 16, 32768, "A"),  # exactly 2**31 elements
    (16, 2**31, 16, "B"),
    (2**20, 2**20, 16, "C"),
    (10**12, 10**12, 10**12, "A"),
])
def test_size_too_large(tmp_path, M, N, K, operand):
    path = write(tmp_path, f"- {{M: {M}, N: {N}, K: {K}}}\n")
    message = load_error(path)
    assert message.startswith(f"{path} entry 1: {operand} would hold ")
    assert "2**31" in message


@pytest.mark.parametrize("field", ["M", "K", "rowMajorA", "dtype_a"])
def test_python_code_in_a_field_is_not_run(tmp_path, field):
    marker = tmp_path / "pwned"
    code = f"__import__('os').system('touch {marker}')"
    entry = {"M": "16", "N": "16", "K": "16"}
    entry[field] = f'"{code}"'
    path = write(tmp_path, "- {" + ", ".join(f"{k}: {v}" for k, v in entry.items()) + "}\n")
    message = load_error(path)
    assert f"{path} entry 1: {field}" in message
    assert not marker.exists()


def test_python_yaml_tag_is_not_constructed(tmp_path):
    marker = tmp_path / "pwned"
    path = write(tmp_path, f"- {{M: !!python/object/apply:os.system ['touch {marker}'], N: 16, K: 16}}\n")
    message = load_error(path)
    assert str(path) in message and "not valid YAML" in message
    assert not marker.exists()


def test_check_fits_refuses_sizes_larger_than_the_gpu_memory():
    from tune_gemm.files.sizes import check_fits

    big = problem(40000, 40000, 40000, "fp32")  # 3 x 6.0 GiB
    check_fits(big, 80 * 2**30, "size")
    with pytest.raises(UserError, match=r"size: 40000x40000x40000 .* needs 17.9 GiB .* GPU's 16.0 GiB"):
        check_fits(big, 16 * 2**30, "size")
