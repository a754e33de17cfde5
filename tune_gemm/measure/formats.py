"""Parsers for external GPU profilers' kernel traces: each reads one tool's CSV into schema rows.

Every parser returns `list[KernelTiming]` in launch order (by start time where the file has one, by
the tool's launch ID otherwise), with kernel names normalized by `normalize_kernel_name` and
`instance` counting the earlier launches of the same normalized name. Names that are none of ours
(vendor BLAS, elementwise kernels, markers) pass through: tune_gemm.measure.postprocess ignores the names
it cannot map to a config. Non-kernel records (nsys memcpy/memset rows) are dropped.

Layouts (see tests/profiling/fixtures/README.md for the documentation each follows):
  rocprof    legacy `rocprof --timestamp on` / `--stats` results.csv: KernelName, BeginNs, EndNs
  rocprofv3  `rocprofv3 --kernel-trace --output-format csv` *_kernel_trace.csv:
             Kernel_Name, Start_Timestamp, End_Timestamp
  nsys       `nsys stats --report cuda_gpu_trace --format csv` (`gputrace` in older nsys):
             Start (ns), Duration (ns), Name (plain Start/Duration, or another --timeunit, accepted)
  ncu        `ncu --csv --metrics gpu__time_duration.sum`: one row per (launch, metric) with
             ID, Kernel Name, Metric Name, Metric Unit, Metric Value
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tune_gemm.measure.schema import KernelTiming

if TYPE_CHECKING:  # pandas is imported where a trace is parsed: the command line starts without it
    import pandas as pd

NCU_DURATION_METRIC = "gpu__time_duration.sum"
ROCPROF_COLUMNS = ("KernelName", "BeginNs", "EndNs")  # name, begin, end: _parse_begin_end order
ROCPROFV3_COLUMNS = ("Kernel_Name", "Start_Timestamp", "End_Timestamp")
NCU_COLUMNS = ["ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"]

# Nanoseconds per unit. ncu scales each value to its own unit ("nsecond", "usecond", ...; recent
# versions also print the short forms), and nsys --timeunit changes its column headers' suffix.
_NS_PER_UNIT = {
    "nsecond": 1.0, "ns": 1.0, "nsec": 1.0,
    "usecond": 1e3, "us": 1e3, "µs": 1e3, "usec": 1e3,
    "msecond": 1e6, "ms": 1e6, "msec": 1e6,
    "second": 1e9, "s": 1e9, "sec": 1e9,
}

_QUOTES = "\"'"
# Legacy rocprof prints a demangled name as "name(args) [clone .kd]"; the code object symbol ends in .kd.
_CLONE_KD = re.compile(r"\s*\[clone \.kd\]$")
_KD_SUFFIX = ".kd"
_VOID_PREFIX = "void "
# --timeunit changes the suffix; older nsys printed the bare names the documentation lists.
_NSYS_TIME_COLUMN = re.compile(r"^(Start|Duration)(?: \((\w+)\))?$")


def normalize_kernel_name(name: str) -> str:
    """`name` without the decorations profilers add: surrounding quotes and whitespace, a `void `
    return type, a trailing `(...)` signature, a `.kd` (or ` [clone .kd]`) code-object suffix."""
    text = str(name)
    previous = None
    # Decorations nest in any order (e.g. `"void k(int) [clone .kd]"`), so strip until nothing changes.
    while text != previous:
        previous = text
        text = text.strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in _QUOTES:
            text = text[1:-1]
        text = _CLONE_KD.sub("", text)
        if text.endswith(_KD_SUFFIX):
            text = text[: -len(_KD_SUFFIX)]
        if text.startswith(_VOID_PREFIX):
            text = text[len(_VOID_PREFIX):]
        text = _without_signature(text)
    return text


def _without_signature(text: str) -> str:
    # Template arguments may hold parentheses ("k<(int)4>(float*)"), so the signature is the
    # balanced group that closes the name, found from the right.
    if not text.endswith(")"):
        return text
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        if text[index] == ")":
            depth += 1
        elif text[index] == "(":
            depth -= 1
            if depth == 0:
                # A name that is nothing but a parenthesized group has no signature to drop.
                return text[:index].rstrip() if text[:index].strip() else text
    return text  # unbalanced: leave it alone rather than guess


def _parse_begin_end(path: Path | str, columns: tuple[str, str, str], label: str) -> list[KernelTiming]:
    """A table with (kernel name, begin ns, end ns) columns, named by `columns` in that order."""
    frame = _read_table(path, _has_columns(columns))
    if frame is None:
        return []
    _require(frame, path, label, columns)
    name, begin_column, end_column = columns
    begin = _numbers(frame[begin_column], path, begin_column)
    end = _numbers(frame[end_column], path, end_column)
    return _timings(frame[name], begin, end - begin)


def parse_rocprof_stats(path: Path | str) -> list[KernelTiming]:
    """Legacy `rocprof --timestamp on` (or `--stats`) results.csv: one row per dispatch."""
    return _parse_begin_end(path, ROCPROF_COLUMNS, "rocprof results.csv")


def parse_rocprofv3_kernel_trace(path: Path | str) -> list[KernelTiming]:
    """rocprofv3 `--kernel-trace --output-format csv` *_kernel_trace.csv: one row per dispatch.

    Rows are sorted by Start_Timestamp: the documentation does not promise the file is in dispatch
    order (records come out of per-agent buffers).
    """
    return _parse_begin_end(path, ROCPROFV3_COLUMNS, "rocprofv3 kernel trace")


def parse_nsys_gpu_trace(path: Path | str) -> list[KernelTiming]:
    """`nsys stats --report cuda_gpu_trace --format csv` (`gputrace` before the report was renamed).

    The report mixes kernels with memory operations; those are named in brackets
    ("[CUDA memcpy Host-to-Device]", "[CUDA memset]") and are dropped. Lines that nsys prints
    before the table when its stdout is redirected ("Processing [...] with [...]...", NOTICEs)
    are skipped.
    """
    frame = _read_table(path, lambda fields: "Name" in fields and _nsys_time_columns(fields)[0] is not None)
    if frame is None:
        return []
    start_column, duration_column = _nsys_time_columns(list(frame.columns))
    missing = [label for label, column in (("Start (ns)", start_column), ("Duration (ns)", duration_column))
               if column is None]
    missing += [] if "Name" in frame.columns else ["Name"]
    if missing:
        raise ValueError(f"{path}: not an nsys cuda_gpu_trace CSV, missing columns {missing}"
                         " (plain 'Start'/'Duration' are accepted too)")
    # astype: on a header-only file map() gives an empty object Series, which pandas would take as column labels
    frame = frame[~frame["Name"].map(_is_memory_operation).astype(bool)]
    start = _numbers(frame[start_column], path, start_column) * _nsys_ns_per_unit(start_column, path)
    duration = _numbers(frame[duration_column], path, duration_column) * _nsys_ns_per_unit(duration_column, path)
    return _timings(frame["Name"], start, duration)


def parse_ncu_csv(path: Path | str) -> list[KernelTiming]:
    """`ncu --csv --metrics gpu__time_duration.sum` output: one row per (launch, metric).

    ncu's own `==PROF==` lines (and, without --log-file, the application's stdout) come before the
    table, so lines before the header and every `==` line are skipped. Launch order is "ID": ncu
    serializes and replays each kernel, so the file has no start times worth ordering by.
    """
    import pandas as pd

    frame = _read_table(path, _has_columns(NCU_COLUMNS))
    if frame is None:
        return []
    _require(frame, path, "ncu CSV", NCU_COLUMNS)
    if frame.empty:
        return []
    durations = frame[frame["Metric Name"] == NCU_DURATION_METRIC]
    if durations.empty:
        raise ValueError(f"{path}: ncu CSV without any {NCU_DURATION_METRIC} row (run ncu with --metrics "
                         f"{NCU_DURATION_METRIC})")
    ids = _numbers(durations["ID"], path, "ID")
    values = [_ncu_nanoseconds(value, unit, path, launch)
              for value, unit, launch in zip(durations["Metric Value"], durations["Metric Unit"], durations["ID"])]
    return _timings(durations["Kernel Name"], ids, pd.Series(values, index=durations.index))


# --- helpers ------------------------------------------------------------------------------------------------------


def _read_table(path: Path | str, is_header: Callable[[list[str]], bool]) -> pd.DataFrame | None:
    """The CSV table that starts at the first line `is_header` accepts, every cell as text.

    Lines before it (nsys/ncu messages on a captured stdout), blank lines and `==` tool messages
    (ncu's `==PROF==`) are dropped. Without a header line the first remaining line is taken, so a
    file of another format fails the caller's column check with the columns it lacks named. None
    when nothing is left. Cells stay text so that kernel names like "NA" are not read as missing.
    """
    import pandas as pd

    lines = [line for line in Path(path).read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("==")]
    if not lines:
        return None
    start = next((index for index, line in enumerate(lines) if is_header(_fields(line))), 0)
    try:
        return pd.read_csv(io.StringIO("\n".join(lines[start:]) + "\n"), dtype=str, keep_default_na=False)
    except pd.errors.ParserError as error:
        raise ValueError(f"{path}: not a CSV table in the expected layout ({error})") from None


def _has_columns(columns: Sequence[str]) -> Callable[[list[str]], bool]:
    return lambda fields: set(columns) <= set(fields)


def _fields(line: str) -> list[str]:
    return next(csv.reader([line]), [])


def _require(frame: pd.DataFrame, path: Path | str, what: str, columns: Iterable[str]) -> None:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise ValueError(f"{path}: not a {what}, missing columns {missing}")


def _numbers(column: pd.Series, path: Path | str, name: str) -> pd.Series:
    import pandas as pd

    cleaned = column.astype(str).str.strip()
    numbers = pd.to_numeric(cleaned, errors="coerce")
    bad = cleaned[numbers.isna()]
    if not bad.empty:
        raise ValueError(f"{path}: column {name!r} has non-numeric value {bad.iloc[0]!r}")
    return numbers


def _timings(names: pd.Series, start: pd.Series, duration: pd.Series) -> list[KernelTiming]:
    """Rows in start order (ties keep file order), each numbered among launches of its normalized name."""
    import pandas as pd

    frame = pd.DataFrame({"name": names.map(normalize_kernel_name).to_numpy(),
                          "start": start.to_numpy(), "duration": duration.to_numpy()})
    frame = frame.sort_values("start", kind="stable")
    frame["instance"] = frame.groupby("name").cumcount()
    return [KernelTiming(name, int(instance), float(duration))
            for name, instance, duration in zip(frame["name"], frame["instance"], frame["duration"])]


def _is_memory_operation(name: str) -> bool:
    # nsys names every memcpy/memset "[CUDA ...]"; no kernel name is bracketed as a whole.
    text = name.strip()
    return text.startswith("[") and text.endswith("]")


def _nsys_time_columns(columns: list[str]) -> tuple[str | None, str | None]:
    found: dict[str, str] = {}
    for column in columns:
        match = _NSYS_TIME_COLUMN.match(column.strip())
        if match:
            found.setdefault(match.group(1), column)
    return found.get("Start"), found.get("Duration")


def _nsys_ns_per_unit(column: str, path: Path | str) -> float:
    unit = _NSYS_TIME_COLUMN.match(column.strip()).group(2)
    if unit is None:
        return 1.0  # the report's columns are documented as nanoseconds by default
    if unit not in _NS_PER_UNIT:
        raise ValueError(f"{path}: column {column!r} has unknown time unit {unit!r}")
    return _NS_PER_UNIT[unit]


def _ncu_nanoseconds(value: str, unit: str, path: Path | str, launch: str) -> float:
    factor = _NS_PER_UNIT.get(str(unit).strip())
    if factor is None:
        raise ValueError(f"{path}: launch ID {launch}: {NCU_DURATION_METRIC} in unknown unit {unit!r}")
    text = str(value).replace(",", "").strip()
    try:
        return float(text) * factor
    except ValueError:
        raise ValueError(f"{path}: launch ID {launch}: {NCU_DURATION_METRIC} value {value!r} is not a number") from None
