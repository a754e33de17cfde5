"""Files the exports and the report write: atomically, named by GPU."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from tune_gemm.files.results import replace_file
from tune_gemm.runtime.table import TunedEntry


def write_text(path: Path, text: str, what: str) -> Path:
    """Replace `path` atomically (a reader sees the old file or the new one); returns it."""
    replace_file(path, text, what)
    return path


def device_tag(gpu: str | None) -> str:
    """A GPU's name as a file-name part: letters, digits and '_' ('any_gpu' for entries that name none)."""
    if gpu is None:
        return "any_gpu"
    return re.sub(r"[^A-Za-z0-9]+", "_", gpu).strip("_") or "unnamed_gpu"


def by_device(entries: Iterable[TunedEntry]) -> dict[str | None, list[TunedEntry]]:
    """Entries grouped by the GPU they were tuned on, in file order."""
    groups: dict[str | None, list[TunedEntry]] = {}
    for entry in entries:
        groups.setdefault(entry.gpu, []).append(entry)
    return groups
