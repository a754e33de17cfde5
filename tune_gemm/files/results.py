"""The tuning results YAML: one entry per size, in the ROCm script's output_tuning.yaml layout.

An entry holds M N K rowMajorA rowMajorB and the config fields (readable by the ROCm script and
usable as a sizes-file entry), then what we measured: dtypes (and `bias_vector: true` for a size tuned with
the bias), GPU, time, TFLOP/s, profiler, whether the times were taken right after L2 flushes (`l2_flushed`), the
baseline's time (and, when it is not torch.matmul, which baseline: `matmul_baseline`, see tune_gemm.measure.baselines).
The file is rewritten atomically after each size, so it is valid YAML at every moment.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tune_gemm.core.config import Config
from tune_gemm.core.errors import UserError
from tune_gemm.core.problem import GemmProblem
from tune_gemm.measure.baselines import MATMUL, baseline_label


@dataclass(frozen=True)
class ResultEntry:
    problem: GemmProblem
    config: Config
    time_us: float
    tflops: float
    gpu: str
    profiler: str
    matmul_time_us: float | None = None  # torch.matmul on the same inputs, same timer
    l2_flushed: bool | None = None  # whether both were timed right after an L2 flush (--flush); None: not known

    def to_mapping(self) -> dict:
        size, dtypes = problem_fields(self.problem)
        mapping = {
            **size,
            **self.config.as_dict(),
            **dtypes,
            "gpu": self.gpu,
            "time_us": round(self.time_us, 3),
            "tflops": round(self.tflops, 2),
            "profiler": self.profiler,
        }
        if self.l2_flushed is not None:
            mapping["l2_flushed"] = self.l2_flushed
        if self.matmul_time_us is not None:
            mapping["matmul_time_us"] = round(self.matmul_time_us, 3)
            label = baseline_label(self.problem)
            if label != MATMUL:  # absent: torch.matmul, as in entries of 16/32-bit inputs
                mapping["matmul_baseline"] = label
        return mapping


def problem_fields(problem: GemmProblem) -> tuple[dict, dict]:
    """The size/layout fields (first in an entry) and the dtype fields (after the config) of a problem."""
    layout_a, layout_b = problem.layouts
    size = {"M": problem.M, "N": problem.N, "K": problem.K, "rowMajorA": layout_a, "rowMajorB": layout_b}
    dtypes = {"dtype_a": problem.dtype_a.name, "dtype_b": problem.dtype_b.name, "dtype_c": problem.dtype_c.name}
    if problem.bias:  # only then, so that entries without a bias keep the ROCm layout
        dtypes["bias_vector"] = True
    return size, dtypes


def _key(mapping: dict) -> tuple:
    fields = ("M", "N", "K", "rowMajorA", "rowMajorB", "dtype_a", "dtype_b", "dtype_c")
    return (*(mapping.get(k) for k in fields), mapping.get("bias_vector", False) is True)


def recorded(entries: list[dict], problem: GemmProblem) -> bool:
    """Whether `entries` already hold a result for this size, layout and dtypes."""
    size, dtypes = problem_fields(problem)
    key = _key({**size, **dtypes})
    return any(_key(entry) == key for entry in entries)


@contextmanager
def exclusive(path: Path):
    """Hold the results file for this run: a second tuner on the same file is refused, not interleaved.

    The lock (flock on a sibling file) dies with its process, so a kill -9 leaves nothing to clean."""
    path = Path(path)
    lock_path = path.with_name(f".{path.name}.lock")
    with open(lock_path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"results file {path} is in use by another tune_gemm run (lock {lock_path})") from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_entries(path: Path) -> list[dict]:
    """Raw entries of an existing results file ([] when there is none)."""
    path = Path(path)
    if not path.exists():
        return []
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise UserError(f"results file {path} cannot be read: {error.__class__.__name__}") from None
    import yaml

    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        raise UserError(f"results file {path} exists but is not valid YAML; move it away or choose another file") from None
    if document is None:
        return []
    if not isinstance(document, list) or not all(isinstance(entry, dict) for entry in document):
        raise UserError(f"results file {path} exists but is not a list of entries; move it away or choose another")
    return document


def dump_entries(entries: list[dict]) -> str:
    """One flow-style line per entry, as the ROCm script writes them."""
    import yaml

    return "".join(yaml.safe_dump([entry], default_flow_style=None, sort_keys=False, width=10_000)
                   for entry in entries)


def record(path: Path, entry: ResultEntry) -> None:
    """Add (or replace, for the same size, layout and dtypes) one entry; atomic rewrite of the file."""
    path = Path(path)
    new = entry.to_mapping()
    write_entries(path, [old for old in read_entries(path) if _key(old) != _key(new)] + [new])


def write_entries(path: Path, entries: list[dict]) -> None:
    """Replace the file's content with `entries`, atomically: a reader sees the old file or the new one."""
    replace_file(path, dump_entries(entries))


def replace_file(path: Path, text: str, what: str = "results file") -> None:
    """Write `text` to a temporary file beside `path` that then replaces it; UserError naming `what` if it fails."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(text)
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise UserError(f"cannot write {what} {path}: {error.strerror}") from None


def check_writable(path: Path) -> None:
    """Fail before any tuning when the results file could not be written."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise UserError(f"results file {path}: directory {directory} does not exist")
    try:  # a real write: permission bits say nothing to root, and some file systems are read-only
        with tempfile.NamedTemporaryFile(dir=directory, prefix=f".{path.name}.", suffix=".probe"):
            pass
    except OSError as error:
        raise UserError(f"results file {path}: directory {directory} is not writable ({error.strerror})") from None
    if path.exists() and not os.access(path, os.W_OK):
        raise UserError(f"results file {path} is not writable")
    read_entries(path)
