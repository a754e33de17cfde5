"""tune_gemm.files.regression: a benchmark against a reference report (ours or the ROCm script's), and its JUnit XML."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import problem

from tune_gemm.core.config import Config
from tune_gemm.core.errors import UserError
from tune_gemm.files.regression import (
    DEFAULT_THRESHOLD,
    Measured,
    ReferenceEntry,
    compare,
    junit_xml,
    load_reference,
)
from tune_gemm.files.results import ResultEntry, dump_entries

FIXTURES = Path(__file__).parent / "fixtures"
DEFAULTS = problem(1, 1, 1)
P1, P2, P3 = problem(4096, 4096, 4096), problem(16, 4096, 4096, col_b=True), problem(512, 512, 512, "bf16")
C1, C2 = Config(128, 256, 64, 8, 1, 8, 3), Config(16, 128, 64, 1, 4, 4, 3)


def reference(*pairs) -> list[ReferenceEntry]:
    return [ReferenceEntry(p, C1, tflops) for p, tflops in pairs]


# --- verdicts -------------------------------------------------------------------------------------------------------


def test_a_regression_fails_the_entry_and_the_mean():
    verdict = compare([Measured(P1, C1, 700.0), Measured(P2, C1, 200.0)], reference((P1, 720.0), (P2, 200.0)))
    assert [e.status for e in verdict.entries] == ["FAIL", "PASS"]  # 700/720 = 0.972 < 0.98
    assert verdict.geomean == pytest.approx(math.sqrt(700 / 720))
    assert verdict.failed
    lines = verdict.lines()
    assert lines[0] == "FAIL 4096x4096x4096 fp16->fp16 TT: 700 TFLOP/s vs 720 in the reference: 0.972 < 0.98"
    assert lines[1].startswith("PASS 16x4096x4096 fp16->fp16 TN: 200 TFLOP/s vs 200 in the reference: 1.000 >=")
    assert lines[2] == "PASS geometric mean of 2 ratio(s): 0.986 >= 0.98"


def test_within_the_threshold_passes():
    verdict = compare([Measured(P1, C1, 706.0), Measured(P2, C1, 260.0)], reference((P1, 720.0), (P2, 250.0)))
    assert [e.status for e in verdict.entries] == ["PASS", "PASS"] and not verdict.failed


def test_the_threshold_itself_passes_and_can_be_changed():
    assert not compare([Measured(P1, C1, 98.0)], reference((P1, 100.0))).failed  # ratio == 0.98
    assert compare([Measured(P1, C1, 98.0)], reference((P1, 100.0)), threshold=0.99).failed


def test_the_mean_summarizes_and_fails_with_its_entries():
    # ratios 1.2 and 0.8: the mean 0.980 passes, the 0.8 entry fails the run (a mean of passing ratios cannot fail)
    verdict = compare([Measured(P1, C1, 120.0), Measured(P2, C1, 80.0)], reference((P1, 100.0), (P2, 100.0)), 0.97)
    assert [e.status for e in verdict.entries] == ["PASS", "FAIL"] and verdict.failed
    assert verdict.lines()[-1] == "PASS geometric mean of 2 ratio(s): 0.980 >= 0.97"
    verdict = compare([Measured(P1, C1, 90.0), Measured(P2, C1, 80.0)], reference((P1, 100.0), (P2, 100.0)))
    assert verdict.lines()[-1] == "FAIL geometric mean of 2 ratio(s): 0.849 < 0.98"


def test_new_entries_do_not_fail_and_failed_ones_do():
    verdict = compare([Measured(P3, C1, 50.0), Measured(P1, C1, None, "wrong result: relative error 3.00e-01")],
                      reference((P1, 100.0)))
    assert [e.status for e in verdict.entries] == ["NEW", "FAIL"]
    assert verdict.geomean is None and verdict.failed
    assert verdict.lines() == ["NEW  512x512x512 bf16->bf16 TT: 50 TFLOP/s, not in the reference",
                               "FAIL 4096x4096x4096 fp16->fp16 TT: wrong result: relative error 3.00e-01"]


def test_the_same_config_is_preferred_among_several_of_a_size():
    ref = [ReferenceEntry(P1, C2, 100.0), ReferenceEntry(P1, C1, 200.0), ReferenceEntry(P1, Config(64, 64, 64), 50.0)]
    assert compare([Measured(P1, C1, 200.0)], ref).entries[0].ratio == 1.0
    assert compare([Measured(P1, Config(32, 32, 32), 50.0)], ref).entries[0].ratio == 1.0  # else the last


# --- references -----------------------------------------------------------------------------------------------------


def test_our_report_as_reference_prefers_time_us(tmp_path):
    tiny = problem(16, 16, 16)  # 8192 flop in 5 us: 0.0016 TFLOP/s, written as 0.0
    entries = [ResultEntry(tiny, C2, 5.0, tiny.tflops(5.0), "gpu", "cupti").to_mapping(),
               {**ResultEntry(P1, C1, 190.0, P1.tflops(190.0), "gpu", "cupti").to_mapping(), "correct": True},
               {**ResultEntry(P2, C1, 10.0, 1.0, "gpu", "cupti").to_mapping(), "correct": False},  # wrong: no figure
               {"M": 8, "N": 8, "K": 8, "BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 16, "failure": "x"}]
    assert entries[0]["tflops"] == 0.0
    path = tmp_path / "report.yaml"
    path.write_text(dump_entries(entries))
    loaded = load_reference(path, DEFAULTS)
    assert [(r.problem, r.config) for r in loaded] == [(tiny, C2), (P1, C1)]
    assert loaded[0].tflops == pytest.approx(tiny.tflops(5.0)) and loaded[1].tflops == pytest.approx(P1.tflops(190))


def test_the_rocm_scripts_performance_report_as_reference():
    loaded = load_reference(FIXTURES / "rocm_perf_report_reference.yaml", DEFAULTS)
    assert [(r.problem, r.tflops) for r in loaded] == [(problem(32, 32, 64, col_b=True), 0.05),
                                                       (problem(16, 48, 128), 0.04)]
    assert loaded[0].config == Config(16, 16, 32, 1, 1, 1, 0, 0, 16, 1, schedule_hint="default")


@pytest.mark.parametrize("text,message", [
    ("- {M: 16, N: 16, K: 16, tflops: fast}\n", "entry 1: tflops must be a number >= 0, got 'fast'"),
    ("- {M: 16, N: 16, K: 16, time_us: -3}\n", "entry 1: time_us must be a number >= 0, got -3"),
    ("- {M: 16, N: 16, K: 16, tflops: 0.0}\n", "entry 1: needs a positive time_us or tflops"),
    ("- {M: 16, N: 16, K: 16}\n", "holds no entry with time_us or tflops"),
    ("- {M: 16, N: 16, tflops: 3}\n", "entry 1: missing K"),
    ("- {config: {M: 16, N: 16, K: 16, rowMajorA: X}, tflops: 3}\n", "entry 1: rowMajorA must be"),
    ("{M: 16}\n", "not a list of entries"),
])
def test_bad_references_name_the_entry(tmp_path, text, message):
    path = tmp_path / "ref.yaml"
    path.write_text(text)
    with pytest.raises(UserError, match=message):
        load_reference(path, DEFAULTS)


def test_missing_reference(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_reference(tmp_path / "none.yaml", DEFAULTS)


# --- JUnit ----------------------------------------------------------------------------------------------------------


def test_junit_has_a_case_per_entry_and_the_mean():
    verdict = compare([Measured(P1, C1, 700.0), Measured(P2, C2, 250.0), Measured(P3, C1, None, "did not run: x")],
                      reference((P1, 720.0), (P2, 200.0)))
    suite = ET.fromstring(junit_xml(verdict))
    assert suite.tag == "testsuite" and suite.get("tests") == "4" and suite.get("failures") == "2"
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert list(cases) == [P1.label, P2.label, P3.label, "geometric mean"]
    assert cases[P1.label].find("failure").get("message").endswith("0.972 < 0.98")
    assert cases[P2.label].find("failure") is None
    properties = {p.get("name"): p.get("value") for p in cases[P2.label].iter("property")}
    assert properties["config"] == str(C2) and properties["ratio"] == "1.25" and properties["reference_tflops"] == "200"
    assert cases[P3.label].find("failure").get("message") == "did not run: x"
    assert cases["geometric mean"].find("failure") is None  # sqrt(700/720 * 1.25) > 0.98


def test_junit_without_reference_reports_each_entry():
    suite = ET.fromstring(junit_xml(compare([Measured(P1, C1, 700.0)], [])))
    assert suite.get("tests") == "1" and suite.get("failures") == "0"
    assert DEFAULT_THRESHOLD == 0.98
