"""`--report DIR`: DIR/report.md with PNG plots for a results file.

- `tflops.png`: TFLOP/s per shape of the tuned winner, torch.matmul (cuBLAS/hipBLASLt) and the Triton
  tutorial's configs (best of its eight, tune_gemm/outputs/tutorial.py).
- `distribution_<size>.png`: the TFLOP/s of every config timed for a size, with the winner, torch.matmul and
  the median config marked: how much tuning mattered. Drawn from the timings a tuning run with `--report DIR`
  keeps in DIR/timings/.

Where the columns come from, per shape: when DIR/bench.csv (written by `benchmarks/bench_gemm.py RESULTS --csv
DIR/bench.csv` on the GPU) has a row for the shape, all three come from it, timed alike by triton's do_bench;
otherwise the winner and torch.matmul come from the results file (the tuner's timer, same child and inputs) and
the tutorial column stays empty. The tutorial configs are timed only by the benchmark: timing them inside every
tuning run would cost a second compile and profile pass per size for a figure the benchmark gives on demand.
"""

from __future__ import annotations

import csv
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from tune_gemm.outputs.files import write_text
from tune_gemm.outputs.plots import plot_distribution, plot_tflops
from tune_gemm.outputs.timings import load_timings
from tune_gemm.runtime.table import TunedEntry, read_tuned

BENCH_CSV = "bench.csv"
REPORT_MD = "report.md"
TFLOPS_PNG = "tflops.png"
NAN = float("nan")
_BENCH_COLUMNS = {"winner": "tune_gemm TFLOP/s", "matmul": "cuBLAS TFLOP/s", "tutorial": "triton tutorial TFLOP/s"}


@dataclass(frozen=True)
class ShapeRow:
    entry: TunedEntry
    timer: str  # what timed this row's three columns
    winner: float  # TFLOP/s; NaN where unknown
    matmul: float
    tutorial: float
    tutorial_config: str


@dataclass(frozen=True)
class Spread:
    """The TFLOP/s of every config timed for one size."""

    entry: TunedEntry
    tflops: list[float]  # fastest first
    winner: float  # the entry's config, in the same timings
    matmul: float
    plot: Path

    @property
    def median(self) -> float:
        return statistics.median(self.tflops)


def _tflops(entry: TunedEntry, time_us: float | None) -> float:
    return entry.problem.tflops(time_us) if time_us else NAN


def _number(text: str | None) -> float:
    try:
        return float(text) if text else NAN
    except ValueError:
        return NAN


def read_bench(path: Path) -> dict[str, dict[str, str]]:
    """benchmarks/bench_gemm.py's CSV rows by size label ({} when there is no such file)."""
    if not path.is_file():
        return {}
    with open(path, newline="") as handle:
        return {row["size"]: row for row in csv.DictReader(handle) if row.get("size")}


def shape_rows(entries: list[TunedEntry], bench: dict[str, dict[str, str]]) -> list[ShapeRow]:
    rows = []
    for entry in entries:
        measured = bench.get(entry.problem.label)
        if measured is not None:
            values = {key: _number(measured.get(column)) for key, column in _BENCH_COLUMNS.items()}
            rows.append(ShapeRow(entry, f"do_bench ({BENCH_CSV})", tutorial_config=measured.get("tutorial config", ""),
                                 **values))
        else:
            rows.append(ShapeRow(entry, f"{entry.profiler or 'unknown'} (results file)", _tflops(entry, entry.time_us),
                                 _tflops(entry, entry.matmul_time_us), NAN, ""))
    return rows


def _spreads(entries: list[TunedEntry], directory: Path) -> list[Spread]:
    spreads = []
    for entry in entries:
        timings = load_timings(directory, entry)
        if timings is None:
            continue
        winner_time = timings.loc[timings["config"] == str(entry.config), "time_us"].iloc[0]
        spread = Spread(entry, [_tflops(entry, t) for t in timings["time_us"]], _tflops(entry, winner_time),
                        _tflops(entry, entry.matmul_time_us), directory / f"distribution_{entry.problem.file_tag}.png")
        marks = {"winner": spread.winner, "median config": spread.median}
        if not math.isnan(spread.matmul):
            marks["torch.matmul"] = spread.matmul
        plot_distribution(spread.tflops, marks, f"{entry.problem.label}: {len(spread.tflops)} configs timed",
                          spread.plot)
        spreads.append(spread)
    return spreads


def _cell(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.4g}"  # 4 digits: H100 TFLOP/s and interpreter ones alike


def _ratio(numerator: float, denominator: float) -> str:
    return "–" if math.isnan(numerator) or math.isnan(denominator) or not denominator else f"{numerator / denominator:.2f}x"


def render_markdown(results: Path, rows: list[ShapeRow], spreads: list[Spread]) -> str:
    lines = [f"# tune_gemm report: `{results}`", ""]
    if any(row.entry.profiler == "host" for row in rows):
        lines += ["**Times of the Triton interpreter (host clock): not meaningful, correctness runs only.**", ""]
    lines += ["## TFLOP/s per shape", "", f"![TFLOP/s per shape]({TFLOPS_PNG})", "",
              ("| size | GPU | winner config | tune_gemm | torch.matmul | winner vs torch.matmul | Triton tutorial "
               "(best of 8) | winner vs tutorial | timer |"),
              "|---|---|---|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        tutorial = _cell(row.tutorial) + (f" ({row.tutorial_config})" if row.tutorial_config else "")
        lines.append(f"| {row.entry.problem.label} | {row.entry.gpu or '–'} | {row.entry.config} | {_cell(row.winner)} "
                     f"| {_cell(row.matmul)} | {_ratio(row.winner, row.matmul)} | {tutorial} "
                     f"| {_ratio(row.winner, row.tutorial)} | {row.timer} |")
    if all(math.isnan(row.tutorial) for row in rows):
        lines += ["", (f"The Triton tutorial column comes from the benchmark: on the GPU, run `python "
                       f"benchmarks/bench_gemm.py {results} --csv <this directory>/{BENCH_CSV}`, then the report again.")]
    lines += ["", "## How much tuning mattered", ""]
    if not spreads:
        lines.append("No per-config timings here: they are kept by a tuning run given `--report` with this directory.")
    else:
        lines += ["| size | configs timed | winner | median config | slowest | winner vs median | winner vs slowest |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for spread in spreads:
            lines.append(f"| {spread.entry.problem.label} | {len(spread.tflops)} | {_cell(spread.winner)} "
                         f"| {_cell(spread.median)} | {_cell(spread.tflops[-1])} "
                         f"| {_ratio(spread.winner, spread.median)} | {_ratio(spread.winner, spread.tflops[-1])} |")
        lines.append("")
        lines += [f"![{spread.entry.problem.label}]({spread.plot.name})" for spread in spreads]
    return "\n".join(lines) + "\n"


def write_report(results: Path, directory: Path) -> list[Path]:
    """Write the report for a results file into `directory` (which exists); returns the files written."""
    entries = read_tuned(results)
    rows = shape_rows(entries, read_bench(directory / BENCH_CSV))
    series = {"tune_gemm winner": [row.winner for row in rows], "torch.matmul": [row.matmul for row in rows]}
    if not all(math.isnan(row.tutorial) for row in rows):
        series["Triton tutorial configs (best of 8)"] = [row.tutorial for row in rows]
    chart = plot_tflops([row.entry.problem.label for row in rows], series, f"TFLOP/s per shape ({results.name})",
                        directory / TFLOPS_PNG)
    spreads = _spreads(entries, directory)
    report = write_text(directory / REPORT_MD, render_markdown(results, rows, spreads), "report")
    return [report, chart, *(spread.plot for spread in spreads)]
