"""The report's PNG plots (matplotlib, imported when a plot is drawn: only `--report` needs it).

Figures are drawn on `matplotlib.figure.Figure` directly, not through pyplot: no global state, no display.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

_MARK_STYLES = (("tab:red", "-"), ("tab:blue", "--"), ("tab:green", ":"), ("tab:orange", "-."))  # color, line


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _save(figure, path: Path) -> Path:
    """Save as PNG through a temporary sibling, so that a reader never sees half a plot."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        figure.savefig(temporary, format="png")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
    return path


def plot_tflops(labels: Sequence[str], series: dict[str, Sequence[float]], title: str, path: Path) -> Path:
    """Horizontal grouped bars: one group per shape, one bar per series (NaN: no bar)."""
    figure = _figure(10, 1.5 + 0.35 * len(labels) * len(series))
    axes = figure.add_subplot()
    height = 0.8 / len(series)
    for index, (name, values) in enumerate(series.items()):
        axes.barh([row + index * height for row in range(len(labels))], values, height=height, label=name)
    axes.set_yticks([row + 0.4 - height / 2 for row in range(len(labels))], labels)
    axes.invert_yaxis()  # first shape on top, as in the table
    axes.set_xlabel("TFLOP/s")
    axes.set_title(title)
    axes.legend(loc="best")
    axes.grid(axis="x", alpha=0.3)
    return _save(figure, path)


def plot_distribution(tflops: Sequence[float], marks: dict[str, float], title: str, path: Path) -> Path:
    """Histogram of every timed config's TFLOP/s, with vertical lines at the marked values (winner, baselines)."""
    figure = _figure(9, 4.5)
    axes = figure.add_subplot()
    axes.hist(tflops, bins=max(10, min(60, len(tflops) // 4)), color="tab:gray", alpha=0.7, label="configs")
    for (name, value), (color, style) in zip(marks.items(), _MARK_STYLES):
        axes.axvline(value, linestyle=style, color=color, linewidth=2, label=f"{name}: {value:.3g}")
    axes.set_xlabel("TFLOP/s")
    axes.set_ylabel("configs")
    axes.set_title(title)
    axes.legend(loc="best")
    return _save(figure, path)
