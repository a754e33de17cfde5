"""Post-processing of the schema CSV with pandas: kernel name -> config, warm-up dropped, one time per config.

Rows of a config's reduction kernel are added to its main kernel's, launch by launch. Spikes are dropped
before the statistic, by a rule after the ROCm script v3.4's: a launch slower than the config's first
launch (the cold one, warm-up included) is a spike, unless such launches are half of the timed ones or
more; then they are how the config runs, and all of them count.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tune_gemm.generate.naming import config_of_kernel
from tune_gemm.measure.schema import BASELINE_NAME, COLUMNS

if TYPE_CHECKING:  # pandas is imported where timings are read: the command line parses without it
    import pandas as pd

STATISTICS = ("median", "last")


def _subject(kernel_name: str) -> str | None:
    if kernel_name == BASELINE_NAME:
        return BASELINE_NAME
    config = config_of_kernel(kernel_name)
    return None if config is None else str(config)


def load_timings(path: Path) -> pd.DataFrame:
    """The CSV as a DataFrame; an empty frame with the schema's columns when there is no row."""
    import pandas as pd

    if not Path(path).exists() or Path(path).stat().st_size == 0:
        return pd.DataFrame(columns=list(COLUMNS))
    frame = pd.read_csv(path)
    missing = set(COLUMNS) - set(frame.columns)
    if missing:
        raise ValueError(f"{path}: not a timing CSV, missing columns {sorted(missing)}")
    return frame


def summarize(frame: pd.DataFrame, warmup: int, statistic: str = "median") -> pd.DataFrame:
    """One row per config (and the baseline): time_us and the number of timed instances, fastest first.

    statistic: "median" of the timed launches, or "last" (the seed's choice: the last launch's time).
    """
    import pandas as pd

    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}")
    subjects = {name: _subject(name) for name in frame["kernel_name"].unique()}  # each name parsed once
    frame = frame.assign(subject=frame["kernel_name"].map(subjects)).dropna(subset=["subject"])
    per_launch = frame.groupby(["subject", "instance"], as_index=False)["duration_ns"].sum()
    timed = _without_spikes(per_launch, per_launch[per_launch["instance"] >= warmup])
    grouped = timed.sort_values("instance").groupby("subject")["duration_ns"]
    value = grouped.median() if statistic == "median" else grouped.last()
    result = pd.DataFrame({"time_us": value / 1000.0, "instances": grouped.size()})
    return result.sort_values("time_us").rename_axis("config").reset_index()


def _without_spikes(launches: pd.DataFrame, timed: pd.DataFrame) -> pd.DataFrame:
    """The timed launches that are no spikes: see the module docstring. (The ROCm script keeps launches no
    slower than the first one, whatever their number, and averages the last 100 of them.)"""
    first = launches.sort_values("instance").groupby("subject")["duration_ns"].first()
    over = timed["duration_ns"] > timed["subject"].map(first)
    by_subject = over.groupby(timed["subject"])
    spikes_are_few = 2 * by_subject.transform("sum") < by_subject.transform("size")
    return timed[~over | ~spikes_are_few]
