"""tune_gemm.measure.external: commands under each profiler, attribution of kernel records, and a whole tuning
run through a stand-in `ncu` on PATH (the real one runs in the GPU tests)."""

from __future__ import annotations

import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import problem

from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.measure import ProfilerChoice
from tune_gemm.measure.child import _marker_kernels
from tune_gemm.measure.external import MARKER_BEGIN, MARKER_END, PROFILERS, attribute
from tune_gemm.measure.schema import BASELINE_NAME, KernelTiming
from tune_gemm.run.pipeline import tune_size
from tune_gemm.search.settings import TuneSettings
from tune_gemm.space.ranges import RangeSpace

A = "matmul_kernel_BM16_BN16_BK16_GM1_SK1_nW1_nS1"
B = "matmul_kernel_BM32_BN16_BK16_GM1_SK2_nW1_nS1"


def test_marker_kernel_names_match():
    assert [k.__name__ for k in _marker_kernels()] == [MARKER_BEGIN, MARKER_END]


def test_attribute_keeps_ours_and_collects_the_baseline_between_markers():
    rows = [KernelTiming("at::native::normal_kernel", 0, 9.0), KernelTiming(A, 0, 10.0), KernelTiming(A, 1, 11.0),
            KernelTiming(B, 0, 20.0), KernelTiming(B + "_reduce", 0, 2.0),
            KernelTiming(MARKER_BEGIN, 0, 1.0),
            KernelTiming("nvjet_gemm", 0, 30.0), KernelTiming("splitk_reduce", 0, 3.0),
            KernelTiming("nvjet_gemm", 1, 31.0), KernelTiming("splitk_reduce", 1, 4.0),
            KernelTiming(MARKER_END, 0, 1.0), KernelTiming("at::native::fill", 0, 5.0)]
    assert attribute(rows) == [KernelTiming(A, 0, 10.0), KernelTiming(A, 1, 11.0), KernelTiming(B, 0, 20.0),
                               KernelTiming(B + "_reduce", 0, 2.0), KernelTiming(BASELINE_NAME, 0, 33.0),
                               KernelTiming(BASELINE_NAME, 1, 35.0)]


@pytest.mark.parametrize("name,expected", [
    ("ncu", ["ncu", "--csv", "--log-file", "/w/ncu_0.csv", "--clock-control", "none", "--metrics",
             "gpu__time_duration.sum", "--target-processes", "all", "python", "-m", "x"]),
    ("nsys", ["nsys", "profile", "--trace", "cuda", "--force-overwrite", "true", "--output", "/w/ncu_0", "python",
              "-m", "x"]),
    ("rocprof", ["rocprof", "--timestamp", "on", "-o", "/w/ncu_0.csv", "python", "-m", "x"]),
    ("rocprofv3", ["rocprofv3", "--kernel-trace", "--output-format", "csv", "--output-directory", "/w",
                   "--output-file", "ncu_0", "--", "python", "-m", "x"]),
])
def test_commands(name, expected):
    assert PROFILERS[name].wrap(["python", "-m", "x"], Path("/w/ncu_0.out")) == expected


def test_traces_are_found_where_each_tool_writes_them(tmp_path):
    output = tmp_path / "run_0.out"
    assert all(tool.trace_csv(output) is None and tool.kernel_rows(output) is None for tool in PROFILERS.values())
    beside = output.with_suffix(".csv")
    beside.write_text("KernelName,BeginNs,EndNs\n" f"{A},100,110\n")
    assert PROFILERS["ncu"].trace_csv(output) == beside and PROFILERS["rocprof"].trace_csv(output) == beside
    assert PROFILERS["rocprof"].kernel_rows(output) == [KernelTiming(A, 0, 10.0)]
    nested = tmp_path / "host" / "1234" / "run_0_kernel_trace.csv"  # rocprofv3 adds folders of its own
    nested.parent.mkdir(parents=True)
    nested.write_text("Kernel_Name,Start_Timestamp,End_Timestamp\n" f"{B},5,25\n")
    assert PROFILERS["rocprofv3"].trace_csv(output) == nested
    assert PROFILERS["rocprofv3"].kernel_rows(output) == [KernelTiming(B, 0, 20.0)]


# Stands in for ncu: runs the command, then writes the CSV ncu would, with made-up durations (ns):
# BLOCK_SIZE_M * 100 + BLOCK_SIZE_N per launch of each config the child finished, and 5000 for the BLAS.
FAKE_NCU = textwrap.dedent('''\
    #!{python}
    import json, re, subprocess, sys
    args = sys.argv[1:]
    log = args[args.index("--log-file") + 1]
    command = args[args.index("all") + 1:]
    code = subprocess.call(command)
    job = json.load(open(command[-1]))
    done = [line.split()[1] for line in open(job["progress_path"]) if line.startswith("done ")]
    rows, launch = [], 0
    def row(name, ns):
        global launch
        rows.append(f'"{{launch}}","1","python","dev","0","(1,1,1)","(1,1,1)","0","9.0","{{name}}",'
                    f'"gpu__time_duration.sum","nsecond","{{ns:,}}"')
        launch += 1
    row("at::native::normal_kernel_cuda", 777)
    for name in job["time_configs"]:
        if name in done:
            bm, bn = map(int, re.match(r"BM(\\d+)_BN(\\d+)", name).groups())
            for _ in range(job["warmup"] + job["iters"]):
                row(f"matmul_kernel_{{name}}", bm * 100 + bn)
    if job["baseline"] and "torch.matmul" in done:
        row("tune_gemm_baseline_begin", 1)
        for _ in range(job["warmup"] + job["iters"]):
            row("nvjet_hsh_64x8_gemm", 5000)
        row("tune_gemm_baseline_end", 1)
    header = '"ID","Process ID","Process Name","Host Name","Context","Grid Size","Block Size","Stream","CC",'
    header += '"Kernel Name","Metric Name","Metric Unit","Metric Value"'
    open(log, "w").write("==PROF== Disconnected\\n" + header + "\\n" + "\\n".join(rows) + "\\n")
    sys.exit(code)
''')


def test_tuning_through_an_external_profiler(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ncu"
    fake.write_text(FAKE_NCU.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert PROFILERS["ncu"].installed()
    space = RangeSpace(block_m=(16, 32), block_n=(16, 32), block_k=(16,), group_m=(1,), split_k=(1,), num_warps=(1,),
                       num_stages=(1,))
    settings = TuneSettings(profiler=ProfilerChoice("ncu", "launch", PROFILERS["ncu"]), warmup=1, iters=3,
                            interpret=True, workdir=tmp_path, space=space, config_timeout=60)
    outcome = tune_size(problem(32, 32, 32), INTERPRETER_PROFILE, settings, compare=False)
    assert str(outcome.winner) == "BM16_BN16_BK16_GM1_SK1_nW1_nS1"
    assert outcome.winner_time_us == pytest.approx(1.616)
    assert list(outcome.timings["time_us"]) == pytest.approx([1.616, 1.632, 3.216, 3.232])
    assert (outcome.timings["instances"] == 3).all()
    assert outcome.matmul_time_us == pytest.approx(5.0)
