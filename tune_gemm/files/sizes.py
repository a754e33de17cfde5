"""Reads sizes files: a YAML list of {M, N, K} entries, optional layouts, dtypes and config fields
(the ROCm script's spellings too: see tune_gemm.files.rocm_files).

A results file is a sizes file too (its `bias_vector: true` brings the bias back). Every error names the
file, the entry and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tune_gemm.core.config import Config
from tune_gemm.core.dtypes import DType, check_combination, dtype_named
from tune_gemm.core.errors import UserError
from tune_gemm.core.problem import GemmProblem
from tune_gemm.files.rocm_files import config_fields

# Operands beyond 2**31 elements would overflow the kernel's 32-bit offsets.
MAX_ELEMENTS = 2**31 - 1
_LAYOUT_VALUES = {"T": False, "N": True, True: False, False: True}  # value -> column-major


@dataclass(frozen=True)
class SizeRequest:
    problem: GemmProblem
    config: Config | None  # present when the entry carries a full config (a results file)


def _positive_int(entry: dict, key: str, where: str) -> int:
    if key not in entry:
        raise UserError(f"{where}: missing {key}")
    value = entry[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise UserError(f"{where}: {key} must be an integer, got {value!r}")
    if value < 1:
        raise UserError(f"{where}: {key} must be positive, got {value}")
    return value


def _column_major(entry: dict, key: str, default: bool, where: str) -> bool:
    if key not in entry:
        return default
    value = entry[key]
    if not isinstance(value, (str, bool)) or value not in _LAYOUT_VALUES:
        raise UserError(f"{where}: {key} must be 'T' (row-major) or 'N' (column-major), got {value!r}")
    return _LAYOUT_VALUES[value]


def _flag(entry: dict, key: str, default: bool, where: str) -> bool:
    if key not in entry:
        return default
    if not isinstance(entry[key], bool):
        raise UserError(f"{where}: {key} must be true or false, got {entry[key]!r}")
    return entry[key]


def _dtype(entry: dict, key: str, default: DType, where: str) -> DType:
    if key not in entry:
        return default
    if not isinstance(entry[key], str):
        raise UserError(f"{where}: {key} must be a dtype name, got {entry[key]!r}")
    return dtype_named(entry[key], f"{where}: {key}")


def _config(entry: dict, where: str) -> Config | None:
    present = config_fields(entry, where)  # the ROCm script's spellings included
    if not present:
        return None
    required = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K")
    missing = [name for name in required if name not in present]
    if missing:
        raise UserError(f"{where}: config fields incomplete, missing {', '.join(missing)}")
    for name, value in present.items():
        if name != "schedule_hint" and (isinstance(value, bool) or not isinstance(value, int)):
            raise UserError(f"{where}: {name} must be an integer, got {value!r}")
    try:
        return Config(**present)
    except ValueError as error:
        raise UserError(f"{where}: {error}") from None


def check_size(M: int, N: int, K: int, where: str) -> None:
    for name, rows, cols in (("A", M, K), ("B", K, N), ("C", M, N)):
        if rows * cols > MAX_ELEMENTS:
            raise UserError(f"{where}: {name} would hold {rows * cols} elements, over the kernel's limit of 2**31")


def check_fits(problem: GemmProblem, memory_bytes: int, where: str) -> None:
    """Refuse, before anything is allocated, a size whose A, B and C alone exceed the GPU's memory."""
    needed = (problem.M * problem.K * problem.dtype_a.bytes + problem.K * problem.N * problem.dtype_b.bytes
              + problem.M * problem.N * problem.dtype_c.bytes)
    if needed > memory_bytes:
        raise UserError(f"{where}: {problem.label} needs {needed / 2**30:.1f} GiB for A, B and C, more than the "
                        f"GPU's {memory_bytes / 2**30:.1f} GiB")


def parse_entry(entry: object, where: str, defaults: GemmProblem) -> SizeRequest:
    """One YAML entry as a SizeRequest; `defaults` gives dtypes and layouts the entry leaves out."""
    if not isinstance(entry, dict):
        raise UserError(f"{where}: must be a mapping like {{M: 16, N: 16, K: 16}}, got {type(entry).__name__}")
    M, N, K = (_positive_int(entry, key, where) for key in ("M", "N", "K"))
    check_size(M, N, K, where)
    dtype_a = _dtype(entry, "dtype_a", defaults.dtype_a, where)
    dtype_b = _dtype(entry, "dtype_b", defaults.dtype_b, where)
    dtype_c = _dtype(entry, "dtype_c", defaults.dtype_c, where)
    check_combination(dtype_a, dtype_b, dtype_c, where)
    problem = GemmProblem(
        M, N, K, dtype_a, dtype_b, dtype_c,
        col_a=_column_major(entry, "rowMajorA", defaults.col_a, where),
        col_b=_column_major(entry, "rowMajorB", defaults.col_b, where),
        bias=_flag(entry, "bias_vector", defaults.bias, where),
    )
    return SizeRequest(problem, _config(entry, where))


def load_sizes(path: Path, defaults: GemmProblem) -> list[SizeRequest]:
    """All entries of a sizes file. UserError for a missing, unreadable, malformed or empty file."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise UserError(f"sizes file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"sizes file {path} cannot be read: {error.__class__.__name__}") from None
    import yaml  # here, not at the top: a missing file is reported before any parser loads

    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark else ""
        raise UserError(f"sizes file {path} is not valid YAML{line}") from None
    if not isinstance(document, list) or not document:
        raise UserError(f"sizes file {path} must be a non-empty YAML list of {{M, N, K}} entries")
    return [parse_entry(entry, f"{path} entry {index + 1}", defaults) for index, entry in enumerate(document)]
