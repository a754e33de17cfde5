"""--export and --report on the command line: alone on an existing results file, after an interpreter tuning run,
and refused with one line when given wrong."""

from __future__ import annotations

import pytest

from tune_gemm.cli import main
from tune_gemm.outputs.export_json import file_name
from tune_gemm.outputs.export_triton import module_name

RESULTS = """\
- {M: 32, N: 32, K: 32, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16, gpu: GPU A, time_us: 3.0, profiler: cupti, matmul_time_us: 2.5}
- {M: 64, N: 32, K: 32, BLOCK_SIZE_M: 32, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16, gpu: GPU A, time_us: 4.0, profiler: cupti}
"""


def test_exports_and_report_alone_need_no_size_and_no_gpu(tmp_path, capsys):
    results = tmp_path / "out.yaml"
    results.write_text(RESULTS)
    code = main(["--tuning_results_file", str(results), "--export", "triton", "--export", "json,triton",
                 "--report", str(tmp_path / "report")])
    out = capsys.readouterr().out
    assert code == 0, out
    written = [tmp_path / f"{module_name('GPU A')}.py", tmp_path / file_name("GPU A"),
               tmp_path / "report" / "report.md", tmp_path / "report" / "tflops.png"]
    for path in written:
        assert path.is_file() and str(path) in out
    assert out.count("exported (triton)") == 1  # named twice, written once
    assert "device:" not in out and "tuned" not in out  # no tuning happened


def test_a_tuning_run_keeps_timings_and_reports_them(tmp_path, space_file, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["-m", "33", "-n", "17", "-k", "40", "--interpret", "--space", str(space_file), "--iters", "2",
                 "--warmup", "1", "--search", "exhaustive", "--tuning_results_file", "out.yaml", "--report", "report",
                 "--export", "json"])
    out = capsys.readouterr().out
    assert code == 0, out
    timings = (tmp_path / "report" / "timings" / "33x17x40.csv").read_text().splitlines()
    assert timings[0] == "config,time_us" and len(timings) > 10  # every config the small space times
    distribution = tmp_path / "report" / "distribution_33x17x40.png"
    assert distribution.stat().st_size > 10_000 and f"report: {distribution.relative_to(tmp_path)}" in out
    assert "not meaningful" in (tmp_path / "report" / "report.md").read_text()
    assert (tmp_path / file_name("CPU (Triton interpreter)")).is_file()


@pytest.mark.parametrize("args,message", [
    (["--export", "csv"], "--export 'csv' is not known"),
    (["--export", "json"], "does not exist: nothing to export"),
    (["--report", "report.md"], "is a file, not a directory"),
    (["--gemm_size_file", "out.yaml", "--compare_wo_tuning", "--export", "json"], "not with --compare_wo_tuning"),
])
def test_bad_output_flags_are_one_line_and_exit_2(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "report.md").write_text("a file")
    assert main([*args, "--tuning_results_file", "missing.yaml", "--interpret"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_an_empty_results_file_is_refused(tmp_path, capsys):
    (tmp_path / "out.yaml").write_text("")
    assert main(["--tuning_results_file", str(tmp_path / "out.yaml"), "--export", "json"]) == 2
    assert "holds no entries" in capsys.readouterr().err
