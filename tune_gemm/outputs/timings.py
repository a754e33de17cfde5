"""Every config's time for a size, kept in the report directory while tuning (`timings/<size tag>.csv`), so that
the report shows how much tuning mattered, also when it is written later from the results file alone."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tune_gemm.core.errors import UserError
from tune_gemm.core.problem import GemmProblem
from tune_gemm.outputs.files import write_text
from tune_gemm.runtime.table import TunedEntry

if TYPE_CHECKING:  # pandas is imported where timings are read: the command line parses without it
    import pandas as pd

TIMINGS_DIR = "timings"


def timings_path(directory: Path, problem: GemmProblem) -> Path:
    return Path(directory) / TIMINGS_DIR / f"{problem.file_tag}.csv"


def save_timings(directory: Path, problem: GemmProblem, timings: pd.DataFrame) -> Path:
    """Keep one size's timings (columns config, time_us: one row per config timed)."""
    path = timings_path(directory, problem)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text(path, timings[["config", "time_us"]].to_csv(index=False), "timings file")


def load_timings(directory: Path, entry: TunedEntry) -> pd.DataFrame | None:
    """The timings kept for this entry's size, fastest first; None when there are none, or when they come from
    another run than the entry's (its winner is not among them: the size was tuned again elsewhere)."""
    import pandas as pd

    path = timings_path(directory, entry.problem)
    if not path.is_file():
        return None
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError):
        frame = pd.DataFrame()
    if not {"config", "time_us"} <= set(frame.columns):
        raise UserError(f"timings file {path} is not a timings CSV (columns config, time_us); remove it")
    if str(entry.config) not in set(frame["config"]):
        return None
    return frame.sort_values("time_us").reset_index(drop=True)
