"""`--reference`: a benchmark's TFLOP/s against an earlier report's, entry by entry and by geometric mean.

The rules follow the ROCm script's test_regression.py: an entry's ratio is its TFLOP/s now over its
TFLOP/s in the reference, and the run fails when any ratio, or the geometric mean of all of them, is
below the threshold (0.98 by default; a ratio equal to it passes). An entry the reference lacks is new,
not a failure; one that did not run or computed a wrong result fails. `--junit` writes the same verdicts
as JUnit XML, one test case per entry plus one for the geometric mean.

A reference is a report of ours (or any results file: entries with M, N, K and `time_us` or `tflops`), or the ROCm
script's `gemm-performance-report.yaml` (entries `{config: {M, N, K, ...}, tflops: ...}`).
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from tune_gemm.core.config import Config
from tune_gemm.core.errors import UserError
from tune_gemm.core.problem import GemmProblem
from tune_gemm.files.results import read_entries, replace_file
from tune_gemm.files.sizes import parse_entry

DEFAULT_THRESHOLD = 0.98


@dataclass(frozen=True)
class Measured:
    """One entry of the run being checked."""

    problem: GemmProblem
    config: Config
    tflops: float | None  # None when it did not run or its result was wrong
    why_not: str = ""  # why there is no figure


@dataclass(frozen=True)
class ReferenceEntry:
    problem: GemmProblem
    config: Config | None
    tflops: float


@dataclass(frozen=True)
class EntryVerdict:
    measured: Measured
    reference: ReferenceEntry | None  # None: the reference does not hold this size
    threshold: float

    @property
    def ratio(self) -> float | None:
        if self.reference is None or self.measured.tflops is None:
            return None
        return self.measured.tflops / self.reference.tflops

    @property
    def status(self) -> str:
        if self.measured.tflops is None:
            return "FAIL"
        if self.ratio is None:
            return "NEW"
        return "FAIL" if self.ratio < self.threshold else "PASS"

    @property
    def detail(self) -> str:
        measured = self.measured
        if measured.tflops is None:
            return measured.why_not
        if self.reference is None:
            return f"{measured.tflops:.4g} TFLOP/s, not in the reference"
        relation = "<" if self.ratio < self.threshold else ">="
        return (f"{measured.tflops:.4g} TFLOP/s vs {self.reference.tflops:.4g} in the reference: "
                f"{self.ratio:.3f} {relation} {self.threshold}")


@dataclass(frozen=True)
class Verdict:
    entries: list[EntryVerdict]
    threshold: float

    @property
    def geomean(self) -> float | None:
        ratios = [entry.ratio for entry in self.entries if entry.ratio is not None]
        return math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else None

    @property
    def failed(self) -> bool:
        # With one threshold the mean of passing ratios passes too; it is checked (and printed) as the
        # ROCm script does, as the run's summary.
        mean = self.geomean
        return any(entry.status == "FAIL" for entry in self.entries) or (mean is not None and mean < self.threshold)

    def lines(self) -> list[str]:
        lines = [f"{entry.status:4} {entry.measured.problem.label}: {entry.detail}" for entry in self.entries]
        mean = self.geomean
        if mean is not None:
            compared = sum(entry.ratio is not None for entry in self.entries)
            status = "FAIL" if mean < self.threshold else "PASS"
            lines.append(f"{status:4} geometric mean of {compared} ratio(s): {mean:.3f} "
                         f"{'<' if mean < self.threshold else '>='} {self.threshold}")
        return lines


def _entry_of(raw: object) -> object:
    """Our entries as they are; the ROCm report's {config: {...}, tflops} flattened into one mapping."""
    if isinstance(raw, dict) and isinstance(raw.get("config"), dict) and "tflops" in raw:
        return {**raw["config"], "tflops": raw["tflops"]}
    return raw


def load_reference(path: Path, defaults: GemmProblem) -> list[ReferenceEntry]:
    """The entries of a reference report that carry a TFLOP/s figure; UserError naming the file and entry."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"reference {path} does not exist")
    found = []
    for index, raw in enumerate(read_entries(path)):
        entry, where = _entry_of(raw), f"reference {path} entry {index + 1}"
        time_us, tflops = _number(entry, "time_us", where), _number(entry, "tflops", where)
        if (time_us is None and tflops is None) or entry.get("correct") is False:  # it failed, or was wrong
            continue
        request = parse_entry(entry, where, defaults)
        # time_us keeps more digits than tflops, which a tiny GEMM rounds to 0.0
        if time_us:
            tflops = request.problem.tflops(time_us)
        if not tflops:
            raise UserError(f"{where}: needs a positive time_us or tflops")
        found.append(ReferenceEntry(request.problem, request.config, tflops))
    if not found:
        raise UserError(f"reference {path} holds no entry with time_us or tflops")
    return found


def _number(entry: dict, key: str, where: str) -> float | None:
    if key not in entry:
        return None
    value = entry[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise UserError(f"{where}: {key} must be a number >= 0, got {value!r}")
    return float(value)


def _reference_for(measured: Measured, reference: list[ReferenceEntry]) -> ReferenceEntry | None:
    """The reference's entry of the same size: the one with the same config if several, else the last."""
    same_size = [entry for entry in reference if entry.problem == measured.problem]
    same_config = [entry for entry in same_size if entry.config == measured.config]
    return (same_config or same_size or [None])[-1]


def compare(measured: list[Measured], reference: list[ReferenceEntry], threshold: float = DEFAULT_THRESHOLD) -> Verdict:
    return Verdict([EntryVerdict(m, _reference_for(m, reference), threshold) for m in measured], threshold)


def _property(parent: ET.Element, name: str, value: object) -> None:
    ET.SubElement(parent, "property", name=name, value=str(value))


def junit_xml(verdict: Verdict) -> str:
    """The verdicts as JUnit XML: a test case per entry (NEW entries pass) and one for the geometric mean."""
    suite = ET.Element("testsuite", name="tune_gemm.benchmark")
    cases = [(entry.measured.problem.label, entry.status, entry.detail, entry) for entry in verdict.entries]
    mean = verdict.geomean
    if mean is not None:
        below = mean < verdict.threshold
        cases.append(("geometric mean", "FAIL" if below else "PASS",
                      f"{mean:.3f} {'<' if below else '>='} {verdict.threshold}", None))
    for name, status, detail, entry in cases:
        case = ET.SubElement(suite, "testcase", classname="tune_gemm.benchmark", name=name)
        properties = ET.SubElement(case, "properties")
        if entry is not None:
            _property(properties, "config", entry.measured.config)
            for key, value in (("tflops", entry.measured.tflops), ("ratio", entry.ratio),
                               ("reference_tflops", entry.reference and entry.reference.tflops)):
                if value is not None:
                    _property(properties, key, f"{value:.4g}")
        _property(properties, "detail", detail)
        if status == "FAIL":
            ET.SubElement(case, "failure", message=detail)
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(status == "FAIL" for _, status, _, _ in cases)))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"


def write_junit(path: Path, verdict: Verdict) -> None:
    """Write junit_xml(verdict) to `path` atomically."""
    replace_file(path, junit_xml(verdict), "JUnit file")
