"""The tuned table: results files (YAML, or JSON written by `--export json`) read into entries, grouped by GPU,
dtypes and layouts so that a lookup sees only the shapes that apply to a call.

Which entries apply to a device: those recorded on a GPU of that name (the `gpu` field), and those with no
`gpu` field at all (hand-written files, the ROCm script's files), the named ones taking precedence. When
several files (or entries) hold the same shape for the same GPU, dtypes and layouts, the one read last wins,
so later files override earlier ones. Entries tuned with a bias vector are left out: the run-time matmul adds
none. Errors are `UserError`s naming the file, the entry and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tune_gemm.core.config import Config
from tune_gemm.core.dtypes import DTYPES
from tune_gemm.core.errors import UserError
from tune_gemm.core.problem import GemmProblem
from tune_gemm.files.results import read_entries
from tune_gemm.files.sizes import parse_entry
from tune_gemm.runtime.lookup import Shape

_DEFAULTS = GemmProblem(1, 1, 1, DTYPES["fp16"], DTYPES["fp16"], DTYPES["fp16"])


@dataclass(frozen=True)
class Variant:
    """What must match exactly between a call and a tuned entry, besides the GPU: dtypes and layouts."""

    dtype_a: str
    dtype_c: str
    col_a: bool
    col_b: bool

    @classmethod
    def of(cls, problem: GemmProblem) -> Variant:
        return cls(problem.dtype_a.name, problem.dtype_c.name, problem.col_a, problem.col_b)

    @property
    def label(self) -> str:
        return f"{self.dtype_a}->{self.dtype_c} {'N' if self.col_a else 'T'}{'N' if self.col_b else 'T'}"


@dataclass(frozen=True)
class TunedEntry:
    problem: GemmProblem
    config: Config
    gpu: str | None  # the device it was tuned on; None: the file does not say
    time_us: float | None
    matmul_time_us: float | None
    profiler: str | None
    mapping: dict = field(compare=False, hash=False)  # the entry as the file holds it: exports write it back as is

    @property
    def shape(self) -> Shape:
        return (self.problem.M, self.problem.N, self.problem.K)


def _optional(entry: dict, key: str, kinds: tuple[type, ...], what: str, where: str):
    """The value of an optional field, None when absent; UserError when it is not of `kinds`."""
    value = entry.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise UserError(f"{where}: {key} must be {what}, got {value!r}")
    return value


def _number(entry: dict, key: str, where: str) -> float | None:
    value = _optional(entry, key, (int, float), "a number", where)
    return None if value is None else float(value)


def _text(entry: dict, key: str, where: str) -> str | None:
    return _optional(entry, key, (str,), "a string", where)


def parse_tuned(entry: object, where: str) -> TunedEntry:
    """One results entry; it must carry a config (a plain sizes file has none)."""
    request = parse_entry(entry, where, _DEFAULTS)
    if request.config is None:
        raise UserError(f"{where}: no config fields (BLOCK_SIZE_M ...): not a tuning results entry")
    return TunedEntry(problem=request.problem, config=request.config, gpu=_text(entry, "gpu", where),
                      time_us=_number(entry, "time_us", where), matmul_time_us=_number(entry, "matmul_time_us", where),
                      profiler=_text(entry, "profiler", where), mapping=dict(entry))


def _json_entries(path: Path) -> list:
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"results file {path} cannot be read: {error.__class__.__name__}") from None
    except json.JSONDecodeError as error:
        raise UserError(f"results file {path} is not valid JSON (line {error.lineno})") from None
    if not isinstance(document, dict) or not isinstance(document.get("entries"), list):
        raise UserError(f"results file {path}: a JSON results file needs an 'entries' list (tune_gemm --export json)")
    return document["entries"]


def read_tuned(path: Path) -> list[TunedEntry]:
    """Every entry of a results file: a tune_gemm YAML file, or the JSON that `--export json` writes."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"results file {path} does not exist")
    entries = _json_entries(path) if path.suffix == ".json" else read_entries(path)
    return [parse_tuned(entry, f"{path} entry {index + 1}") for index, entry in enumerate(entries)]


class Table:
    """Tuned configs by (GPU, variant) and shape, filled from results files in order (later ones win)."""

    def __init__(self, entries: Iterable[TunedEntry] = ()):
        self._shapes: dict[tuple[str | None, Variant], dict[Shape, Config]] = {}
        self.add(entries)

    def add(self, entries: Iterable[TunedEntry]) -> None:
        for entry in entries:
            if entry.problem.bias:
                continue
            self._shapes.setdefault((entry.gpu, Variant.of(entry.problem)), {})[entry.shape] = entry.config

    def load(self, *paths: Path) -> None:
        for path in paths:
            self.add(read_tuned(path))

    def shapes(self, gpu: str, variant: Variant) -> dict[Shape, Config]:
        """The shapes tuned for this variant that apply on a GPU named `gpu` (entries naming no GPU included)."""
        return {**self._shapes.get((None, variant), {}), **self._shapes.get((gpu, variant), {})}

    def __len__(self) -> int:
        return sum(len(shapes) for shapes in self._shapes.values())
