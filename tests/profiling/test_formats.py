"""tune_gemm.measure.formats: each external profiler's CSV -> schema rows, and those rows through postprocess.summarize.

The fixtures (tests/profiling/fixtures, sources in its README.md) all describe one run: config A
launched 4 times, config B 3 times (one launch missing), split-K config S 4 times each followed by
its _reduce kernel, then two vendor-BLAS launches. The first launch of each is the warm-up.
"""

from __future__ import annotations

import re
from dataclasses import astuple
from pathlib import Path

import pandas as pd
import pytest

from tune_gemm.generate.naming import config_of_kernel
from tune_gemm.measure.external import PROFILERS as EXTERNAL
from tune_gemm.measure.formats import (
    normalize_kernel_name,
    parse_ncu_csv,
    parse_nsys_gpu_trace,
    parse_rocprof_stats,
    parse_rocprofv3_kernel_trace,
)
from tune_gemm.measure.postprocess import summarize
from tune_gemm.measure.schema import COLUMNS, KernelTiming

FIXTURES = Path(__file__).parent / "fixtures"

A = "matmul_kernel_BM64_BN64_BK32_GM8_SK1_nW4_nS3"
B = "matmul_kernel_BM128_BN128_BK64_GM8_SK1_nW8_nS3"
S = "matmul_kernel_BM16_BN64_BK64_GM1_SK4_nW4_nS2"
S_REDUCE = S + "_reduce"
CIJK = "Cijk_Alik_Bljk_HHS_BH_MT128x128x64_MI32x32x8x1_SN_1LDSB1_GRVW8_NLCA1_NLCB1_TT4_64_WG32_8_1_WGM8"
NVJET = "nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NTN"
XMMA = ("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off"
        "_kernel__5x_cublas")
FILL = "at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<c10::Half>, std::array<char *, 1>>"


def _rows(*launches: tuple[str, float]) -> list[KernelTiming]:
    """Expected rows: launches in order, instances counted per name."""
    seen: dict[str, int] = {}
    rows = []
    for name, duration in launches:
        rows.append(KernelTiming(name, seen.get(name, 0), duration))
        seen[name] = seen.get(name, 0) + 1
    return rows


OURS = (
    (A, 9000.0), (A, 3000.0), (A, 1000.0), (A, 2000.0),
    (B, 8000.0), (B, 5000.0), (B, 4000.0),
    (S, 7000.0), (S_REDUCE, 900.0), (S, 1500.0), (S_REDUCE, 500.0),
    (S, 1200.0), (S_REDUCE, 700.0), (S, 1100.0), (S_REDUCE, 600.0),
)

# format -> (parser, fixture, expected rows, how the fixture spells config B's kernel)
CASES = {
    "rocprof": (parse_rocprof_stats, "rocprof_results.csv",
                _rows(*OURS, (CIJK, 30000.0), (CIJK, 29000.0)), f'"{B}.kd"'),
    "rocprofv3": (parse_rocprofv3_kernel_trace, "rocprofv3_kernel_trace.csv",
                  _rows(*OURS, (CIJK, 30000.0), (CIJK, 29000.0)),
                  f'"{B}(void*, void*, void*, int, int, int, int, int, int)"'),
    "nsys": (parse_nsys_gpu_trace, "nsys_cuda_gpu_trace.csv",
             _rows(*OURS, (FILL, 2400.0), (NVJET, 30000.0), (NVJET, 29000.0)),
             f'"void {B}(float *, float *, float *, int, int, int, int, int, int)"'),
    "ncu": (parse_ncu_csv, "ncu_metrics.csv",
            _rows(*OURS, (FILL, 2400.0), (XMMA, 30000.0), (XMMA, 29000.0)),
            f'"void {B}(float *, float *, float *, int, int, int, int, int, int)"'),
}
FORMATS = list(CASES)
REQUIRED = {
    "rocprof": ["KernelName", "BeginNs", "EndNs"],
    "rocprofv3": ["Kernel_Name", "Start_Timestamp", "End_Timestamp"],
    "nsys": ["Start (ns)", "Duration (ns)", "Name"],
    "ncu": ["ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"],
}


def config(kernel: str) -> str:
    return str(config_of_kernel(kernel))


def summary(rows: list[KernelTiming], warmup: int = 1) -> list[tuple[str, float, int]]:
    frame = pd.DataFrame([astuple(row) for row in rows], columns=list(COLUMNS))
    table = summarize(frame, warmup=warmup)
    return [(row.config, row.time_us, row.instances) for row in table.itertuples()]


def parse(fmt: str) -> list[KernelTiming]:
    parser, fixture, _, _ = CASES[fmt]
    return parser(FIXTURES / fixture)


def write(tmp_path: Path, text: str, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- the fixtures ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_fixture_parses_to_exact_rows(fmt):
    assert parse(fmt) == CASES[fmt][2]


@pytest.mark.parametrize("fmt", FORMATS)
def test_fixture_summarized_per_config(fmt):
    # warm-up dropped; split-K: (1500+500, 1200+700, 1100+600) -> median 1900 ns; B has one timed launch fewer
    assert summary(parse(fmt)) == [(config(S), 1.9, 3), (config(A), 2.0, 3), (config(B), 4.5, 2)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_fixture_without_warmup_dropped(fmt):
    # every launch kept: split-K sums 7900, 2000, 1900, 1700 -> median 1950 ns
    assert summary(parse(fmt), warmup=0) == [(config(S), 1.95, 4), (config(A), 2.5, 4), (config(B), 5.0, 3)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_decorated_name_maps_to_its_config(fmt):
    _, fixture, _, decorated = CASES[fmt]
    assert decorated in (FIXTURES / fixture).read_text()
    assert config_of_kernel(decorated.strip('"')) is None  # the tool's spelling alone maps to nothing
    b_rows = [row for row in parse(fmt) if config_of_kernel(row.kernel_name) == config_of_kernel(B)]
    assert [(row.kernel_name, row.instance) for row in b_rows] == [(B, 0), (B, 1), (B, 2)]


@pytest.mark.parametrize("fmt", FORMATS)
def test_missing_instance_gives_one_instance_fewer(fmt):
    instances = {name: [row.instance for row in parse(fmt) if row.kernel_name == name] for name in (A, B)}
    assert instances == {A: [0, 1, 2, 3], B: [0, 1, 2]}
    counts = {row[0]: row[2] for row in summary(parse(fmt))}
    assert counts[config(B)] == counts[config(A)] - 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_other_kernels_pass_through_but_are_not_summarized(fmt):
    others = [row.kernel_name for row in parse(fmt) if config_of_kernel(row.kernel_name) is None]
    assert others == {"rocprof": [CIJK, CIJK], "rocprofv3": [CIJK, CIJK], "nsys": [FILL, NVJET, NVJET],
                      "ncu": [FILL, XMMA, XMMA]}[fmt]
    assert {row[0] for row in summary(parse(fmt))} == {config(A), config(B), config(S)}


# --- empty files and files of another format -----------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("text", ["", "\n  \n"])
def test_empty_file_gives_nothing(tmp_path, fmt, text):
    assert CASES[fmt][0](write(tmp_path, text)) == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_header_only_gives_nothing(tmp_path, fmt):
    lines = (FIXTURES / CASES[fmt][1]).read_text().splitlines()
    header_at = next(index for index, line in enumerate(lines) if not line.startswith("=="))
    assert CASES[fmt][0](write(tmp_path, "\n".join(lines[: header_at + 1]) + "\n")) == []


def test_ncu_with_nothing_profiled_gives_nothing(tmp_path):
    text = "==PROF== Connected to process 1 (/usr/bin/python3)\n==WARNING== No kernels were profiled.\n"
    assert parse_ncu_csv(write(tmp_path, text)) == []


@pytest.mark.parametrize("fmt,other", [(fmt, other) for fmt in FORMATS for other in FORMATS if other != fmt])
def test_file_of_another_format_names_missing_columns(fmt, other):
    path = FIXTURES / CASES[other][1]
    with pytest.raises(ValueError) as error:
        CASES[fmt][0](path)
    # no two layouts share a required column, so every one of them is missing
    assert str(error.value).startswith(f"{path}: not ")
    assert f"missing columns {REQUIRED[fmt]}" in str(error.value)


@pytest.mark.parametrize("fmt", FORMATS)
def test_schema_csv_is_not_a_profiler_file(tmp_path, fmt):
    path = write(tmp_path, "kernel_name,instance,duration_ns\nmatmul_kernel_BM16_BN16_BK16_GM1_SK1_nW1_nS1,0,10\n")
    with pytest.raises(ValueError, match=re.escape(f"missing columns {REQUIRED[fmt]}")):
        CASES[fmt][0](path)


# --- format details ---------------------------------------------------------------------------------------------


NCU_HEADER = '"ID","Process ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'


def ncu_row(launch: int, name: str, unit: str, value: str, metric: str = "gpu__time_duration.sum") -> str:
    return f'"{launch}","7","{name}","{metric}","{unit}","{value}"\n'


def test_ncu_units_and_thousands_separators(tmp_path):
    text = NCU_HEADER + "".join([
        ncu_row(0, "k", "nsecond", "1,234"),
        ncu_row(1, "k", "usecond", "1.5"),
        ncu_row(2, "k", "msecond", "2"),
        ncu_row(3, "k", "usecond", "1,234.5"),
        ncu_row(4, "k", "ns", "250"),
        ncu_row(5, "k", "second", "0.5"),
    ])
    assert [row.duration_ns for row in parse_ncu_csv(write(tmp_path, text))] == [
        1234.0, 1500.0, 2_000_000.0, 1_234_500.0, 250.0, 500_000_000.0]


def test_ncu_orders_by_numeric_id(tmp_path):
    # as strings "10" < "2" < "9": the order only comes out right if IDs are compared as numbers
    text = (NCU_HEADER + ncu_row(10, "k", "nsecond", "3") + ncu_row(9, "k", "nsecond", "2")
            + ncu_row(2, "k", "nsecond", "1"))
    assert parse_ncu_csv(write(tmp_path, text)) == _rows(("k", 1.0), ("k", 2.0), ("k", 3.0))


def test_ncu_reads_only_the_duration_metric(tmp_path):
    text = NCU_HEADER + ncu_row(0, "k", "byte", "4,096", metric="dram__bytes_read.sum")
    text += ncu_row(0, "k", "nsecond", "7")
    assert parse_ncu_csv(write(tmp_path, text)) == [KernelTiming("k", 0, 7.0)]


def test_ncu_without_duration_metric_is_refused(tmp_path):
    text = NCU_HEADER + ncu_row(0, "k", "byte", "4,096", metric="dram__bytes_read.sum")
    with pytest.raises(ValueError, match="gpu__time_duration.sum"):
        parse_ncu_csv(write(tmp_path, text))


@pytest.mark.parametrize("unit,value,message", [
    ("cycle", "12", "unknown unit 'cycle'"), ("nsecond", "n/a", "not a number")])
def test_ncu_bad_values_are_refused(tmp_path, unit, value, message):
    with pytest.raises(ValueError, match=message):
        parse_ncu_csv(write(tmp_path, NCU_HEADER + ncu_row(0, "k", unit, value)))


def test_nsys_old_column_names_without_units(tmp_path):
    # the columns as the report documentation names them, times in nanoseconds
    text = ("Start,Duration,CorrId,Name\n"
            "100,40,1,[CUDA memcpy HtoD]\n"
            "200,30,2,matmul_kernel_BM16_BN16_BK16_GM1_SK1_nW1_nS1\n"
            "300,20,3,matmul_kernel_BM16_BN16_BK16_GM1_SK1_nW1_nS1\n")
    assert parse_nsys_gpu_trace(write(tmp_path, text)) == _rows(
        ("matmul_kernel_BM16_BN16_BK16_GM1_SK1_nW1_nS1", 30.0), ("matmul_kernel_BM16_BN16_BK16_GM1_SK1_nW1_nS1", 20.0))


def test_nsys_other_timeunit_and_stdout_preamble(tmp_path):
    # `nsys stats --timeunit usec` with the report printed to stdout after nsys's own messages
    text = ("\nNOTICE: Existing SQLite export found: report1.sqlite\n\n"
            "Processing [report1.sqlite] with [/opt/nvidia/nsight-systems/reports/cuda_gpu_trace.py]... \n"
            "Start (us),Duration (us),CorrId,Strm,Name\n"
            "2.5,1.5,7,7,k2\n"
            "1.0,0.5,8,7,k1\n")
    assert parse_nsys_gpu_trace(write(tmp_path, text)) == [KernelTiming("k1", 0, 500.0), KernelTiming("k2", 0, 1500.0)]


def test_nsys_drops_every_memory_operation(tmp_path):
    text = ("Start (ns),Duration (ns),Name\n"
            "1,5,[CUDA memset]\n2,5,[CUDA memcpy Peer-to-Peer]\n3,5,[CUDA Unified Memory memcpy HtoD]\n4,6,k\n")
    assert parse_nsys_gpu_trace(write(tmp_path, text)) == [KernelTiming("k", 0, 6.0)]


def test_rocprof_documented_example_row(tmp_path):
    # the `--timestamp on` example of "Using rocprof" (older vgpr/sgpr/fbar layout, counters before the times)
    text = ("Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,vgpr,sgpr,fbar,sig,obj,"
            "MemUnitStalled,TCC_MISS[0],DispatchNs,BeginNs,EndNs,CompleteNs\n"
            '0,"matrixTranspose(float*, float*, int) [clone .kd]",0,0,0,2837,2837,1048576,16,0,0,8,24,0,0x0,'
            "0x7fcd75984580,5.9792124305,4096,87851328156768,87851334047658,87851334141098,87851334732528\n")
    assert parse_rocprof_stats(write(tmp_path, text)) == [KernelTiming("matrixTranspose", 0, 93440.0)]


def test_rocprof_orders_by_begin_time(tmp_path):
    text = ("Index,KernelName,BeginNs,EndNs\n"
            '0,"k.kd",300,310\n'
            '1,"k.kd",100,130\n'
            '2,"k.kd",200,220\n')
    assert parse_rocprof_stats(write(tmp_path, text)) == _rows(("k", 30.0), ("k", 20.0), ("k", 10.0))


def test_rocprofv3_documented_example_rows(tmp_path):
    # rows of the kernel-naming page's kernel_trace.csv example (default, demangled names)
    header = (FIXTURES / "rocprofv3_kernel_trace.csv").read_text().splitlines()[0]
    text = (header + "\n"
            '"KERNEL_DISPATCH","Agent 4",1,1,852831,1,10,"void addition_kernel<float>(float*, float const*, '
            'float const*, int, int)",1,1551874061244694,1551874061255734,0,0,8,0,16,64,1,1,1024,1024,1\n'
            '"KERNEL_DISPATCH","Agent 4",1,1,852831,2,13,"subtract_kernel(float*, float const*, float const*, '
            'int, int)",2,1551874061259214,1551874061270254,0,0,8,0,16,64,1,1,1024,1024,1\n')
    assert parse_rocprofv3_kernel_trace(write(tmp_path, text)) == [
        KernelTiming("addition_kernel<float>", 0, 11040.0), KernelTiming("subtract_kernel", 0, 11040.0)]


def test_non_numeric_timestamp_is_refused(tmp_path):
    text = 'Index,KernelName,BeginNs,EndNs\n0,"k.kd",soon,310\n'
    with pytest.raises(ValueError, match="BeginNs.*'soon'"):
        parse_rocprof_stats(write(tmp_path, text))


def test_kernel_named_like_a_missing_value_stays_a_name(tmp_path):
    text = "Start (ns),Duration (ns),Name\n1,5,NA\n2,6,None\n"
    assert [row.kernel_name for row in parse_nsys_gpu_trace(write(tmp_path, text))] == ["NA", "None"]


def test_each_external_profiler_has_its_parser():
    assert {name: tool.parse for name, tool in EXTERNAL.items()} == {
        "rocprof": parse_rocprof_stats, "rocprofv3": parse_rocprofv3_kernel_trace, "nsys": parse_nsys_gpu_trace,
        "ncu": parse_ncu_csv}


# --- normalize_kernel_name --------------------------------------------------------------------------------------


@pytest.mark.parametrize("raw,expected", [
    (A, A),
    (f"{A}.kd", A),
    (f"{S_REDUCE}.kd", S_REDUCE),
    (f"void {A}(float*, int)", A),
    (f"{A}(...)", A),
    (f'"{A}"', A),
    (f"'{A}.kd'", A),
    (f"  {A}\t", A),
    (f'" void {A}(float *) "', A),
    ("matrixTranspose(float*, float*, int) [clone .kd]", "matrixTranspose"),
    (f"void {FILL}(int, at::native::FillFunctor<c10::Half>, std::array<char *, 1>)", FILL),
    ("void rms_norm_f32<(int)1024, (bool)0>(const float *, float *)", "rms_norm_f32<(int)1024, (bool)0>"),
    (f"{CIJK}.kd", CIJK),
    (NVJET, NVJET),
    (XMMA, XMMA),
    ("void_kernel.kdx", "void_kernel.kdx"),
    ("voidkernel", "voidkernel"),
    ("k(int", "k(int"),
])
def test_normalize_kernel_name(raw, expected):
    assert normalize_kernel_name(raw) == expected


def test_normalized_names_map_to_configs():
    assert config_of_kernel(normalize_kernel_name(f"void {S_REDUCE}(float*)")) == config_of_kernel(S)
    assert config_of_kernel(normalize_kernel_name(f'"{B}.kd"')) == config_of_kernel(B)


@pytest.mark.parametrize("raw", [f"void {A}(float*).kd", f'"{B}(int) [clone .kd]"', A])
def test_normalize_is_idempotent(raw):
    once = normalize_kernel_name(raw)
    assert normalize_kernel_name(once) == once
