"""benchmarks/bench_gemm.py on the CPU: its argument split, its CSV, and what its max-autotune column compiles
for each baseline (the GPU part runs on the device machine)."""

from __future__ import annotations

import csv
import functools
import math

import pytest
import torch
from helpers import BENCHMARKS_DIR, load_benchmark

from tune_gemm.core.config import Config
from tune_gemm.core.dtypes import DTYPES
from tune_gemm.core.problem import GemmProblem
from tune_gemm.files.sizes import SizeRequest, load_sizes
from tune_gemm.measure.baselines import (
    FP8_DEQUANTIZED,
    INT8_AS_FP32,
    INT_MM,
    MATMUL,
    SCALED_MM,
)


def _bench():
    return load_benchmark("bench_gemm")


def test_arguments_after_dashes_go_to_the_tuner():
    split = _bench()._split_at_dashes
    assert split(["r.yaml", "--tune", "s.yaml", "--", "--search", "halving"]) == (
        ["r.yaml", "--tune", "s.yaml"], "--", ["--search", "halving"])
    assert split(["r.yaml", "--csv", "b.csv"]) == (["r.yaml", "--csv", "b.csv"], "", [])


def test_the_csv_is_rewritten_whole_after_each_size(tmp_path):
    write_csv = _bench()._write_csv
    path = tmp_path / "bench.csv"
    rows = [{"size": "16x16x16 fp16->fp16 TT", "tune_gemm us": 5.28}]
    write_csv(path, rows)
    rows.append({"size": "4096x4096x4096 fp16->fp16 TT", "tune_gemm us": 224.35})
    write_csv(path, rows)
    with open(path, newline="") as handle:
        read = list(csv.DictReader(handle))
    assert [row["size"] for row in read] == [row["size"] for row in rows]
    assert read[1]["tune_gemm us"] == "224.35"
    assert [p.name for p in tmp_path.iterdir()] == ["bench.csv"]  # no temporary file left behind


def _operands(dtype, bias: bool, fp8: bool = False):
    generator = torch.Generator().manual_seed(0)
    a = torch.randn(8, 16, generator=generator)
    b = torch.randn(16, 4, generator=generator)
    if dtype == torch.int8:
        a, b = (a * 20).to(torch.int8), (b * 20).to(torch.int8)
    c = torch.empty(8, 4, dtype=torch.int32 if dtype == torch.int8 else torch.float32)
    extra = [torch.randn(8, generator=generator) if bias else None]
    if fp8:
        extra += [torch.tensor([0.5]), torch.tensor([2.0])]  # per-tensor, shaped as quantize makes them
    return (a, b, c, *extra) if bias or fp8 else (a, b, c)


@pytest.mark.parametrize("bias", [False, True])
def test_max_autotune_compiles_the_dense_baseline_with_its_bias(bias):
    operands = _operands(torch.float32, bias)
    function, arguments = _bench().inductor_target(MATMUL, operands)
    a, b, _, *extra = operands
    expected = a @ b + (extra[0][:, None] if bias else 0)
    assert torch.allclose(function(*arguments), expected)


@pytest.mark.parametrize("bias", [False, True])
def test_max_autotune_writes_a_c_wider_than_the_inputs_in_c_s_dtype(bias):
    a, b, c, *extra = _operands(torch.float32, bias)  # C and the bias fp32, the inputs bf16
    a, b = a.to(torch.bfloat16), b.to(torch.bfloat16)
    function, arguments = _bench().inductor_target(MATMUL, (a, b, c, *extra))
    product = function(*arguments)
    expected = a.double() @ b.double() + (extra[0][:, None].double() if bias else 0)
    assert product.dtype == torch.float32
    assert ((product.double() - expected).norm() / expected.norm()) < 1e-2


def test_max_autotune_of_a_dequantized_fallback_runs_on_the_inputs_the_baseline_uses():
    a, b, c, bias, scale_a, scale_b = _operands(torch.float32, True, fp8=True)
    function, arguments = _bench().inductor_target(FP8_DEQUANTIZED, (a, b, c, bias, scale_a, scale_b))
    assert torch.allclose(function(*arguments), (a * scale_a) @ (b * scale_b) + bias[:, None], atol=1e-5)
    a8, b8, c8 = _operands(torch.int8, False)
    function, arguments = _bench().inductor_target(INT8_AS_FP32, (a8, b8, c8))
    product = function(*arguments)
    assert product.dtype == torch.float32 and torch.equal(product, a8.float() @ b8.float())  # as the fallback writes


def test_max_autotune_of_scaled_and_int_mm_compiles_those_calls(monkeypatch):
    calls = []
    monkeypatch.setattr(torch, "_scaled_mm", lambda a, b, **kw: calls.append(("scaled", kw)) or a.float() @ b.float())
    monkeypatch.setattr(torch, "_int_mm", lambda a, b: calls.append(("int", {})) or a.int() @ b.int())
    a, b, c, bias, scale_a, scale_b = _operands(torch.float32, True, fp8=True)
    function, arguments = _bench().inductor_target(SCALED_MM, (a, b, c, bias, scale_a, scale_b))
    assert torch.allclose(function(*arguments), a @ b + bias[:, None])
    scales = calls[-1][1]
    assert calls[-1][0] == "scaled" and scales["out_dtype"] == c.dtype
    # one scale per tensor, shaped (1, 1): the shape Inductor's _scaled_mm templates lower
    assert [scales["scale_a"].shape, scales["scale_b"].shape] == [(1, 1), (1, 1)]
    assert [scales["scale_a"].item(), scales["scale_b"].item()] == [scale_a.item(), scale_b.item()]
    a8, b8, c8 = _operands(torch.int8, False)
    function, arguments = _bench().inductor_target(INT_MM, (a8, b8, c8))
    assert torch.equal(function(*arguments), a8.int() @ b8.int()) and calls[-1][0] == "int"


def test_a_peer_that_fails_to_compile_leaves_its_column_empty_with_the_reason(monkeypatch):
    bench = _bench()
    monkeypatch.setattr(bench, "_max_autotune", lambda function: function)  # no Inductor on the CPU: the call itself

    def lowering_fails(a, b):
        raise AssertionError("LoweringException: scaled_mm layout")

    call, why = bench.compiled_peer(lowering_fails, (torch.ones(2, 2), torch.ones(2, 2)))
    assert call is None and why.startswith("AssertionError: LoweringException")
    call, why = bench.compiled_peer(torch.matmul, (torch.ones(2, 2), torch.ones(2, 2)))
    assert why is None and torch.equal(call(), torch.full((2, 2), 2.0))


def test_every_size_gets_its_own_compiled_peer_past_dynamos_recompile_limit(monkeypatch):
    bench = _bench()
    graphs = []

    def counting_backend(graph, example_inputs):
        graphs.append(tuple(example_inputs[0].shape))
        return graph.forward

    # no Inductor on the CPU: a backend that counts the graphs Dynamo hands it, one per compiled size
    monkeypatch.setattr(bench, "_max_autotune",
                        lambda function: torch.compile(function, backend=counting_backend, dynamic=False))
    rows = range(1, torch._dynamo.config.recompile_limit + 3)
    for m in rows:
        a, b = torch.randn(m, 16), torch.randn(16, 4)
        function, arguments = bench.inductor_target(MATMUL, (a, b, torch.empty(m, 4)))
        call, why = bench.compiled_peer(function, arguments)
        assert why is None and torch.allclose(call(), a @ b)
    assert [shape[0] for shape in graphs] == list(rows)


def test_ratios_and_their_geometric_mean_skip_a_peer_without_a_time():
    bench = _bench()
    assert bench._ratio(float("inf"), 10.0) == "" and bench._ratio(12.0, 10.0) == 1.2
    assert bench.geometric_mean([2.0, 0.5]) == "1.000"
    assert bench.geometric_mean([2.0, "", 2.0]) == "2.000 (over 2 of 3 entries)"
    assert bench.geometric_mean(["", ""]) == "n/a"


@pytest.mark.parametrize("name, dtype, dtype_c, every_shape", [
    ("h100_fp16", "fp16", "fp16", True), ("h100_bf16", "bf16", "bf16", True), ("h100_fp8", "fp8", "fp16", True),
    ("h100_fp8_bf16", "fp8", "bf16", False), ("h100_int8", "int8", "int32", False),  # five and four of the shapes
    ("h100_fp32", "fp32", "fp32", False),  # eight
    ("h200_fp16", "fp16", "fp16", True), ("h200_bf16", "bf16", "bf16", True), ("h200_fp8", "fp8", "fp16", True),
])
def test_the_recorded_winners_cover_the_public_shapes_in_their_dtypes(name, dtype, dtype_c, every_shape):
    public = BENCHMARKS_DIR / "sizes.yaml"
    defaults = GemmProblem(1, 1, 1, DTYPES["fp16"], DTYPES["fp16"], DTYPES["fp16"])
    winners = load_sizes(BENCHMARKS_DIR / "results" / f"{name}.yaml", defaults)
    shapes = [(r.problem.M, r.problem.N, r.problem.K) for r in load_sizes(public, defaults)]
    recorded = [(r.problem.M, r.problem.N, r.problem.K) for r in winners]
    if every_shape:
        assert recorded == shapes
    else:
        assert len(set(recorded)) == len(recorded) >= 4 and set(recorded) <= set(shapes)
    assert all(r.config is not None and r.problem.dtype_a is DTYPES[dtype] and r.problem.dtype_c is DTYPES[dtype_c]
               for r in winners)
    # 8-bit inputs are recorded with B column-major, the layout torch._scaled_mm and torch._int_mm take
    assert all(r.problem.col_b == (dtype in ("fp8", "int8")) for r in winners)


def test_a_size_starts_only_where_it_would_end_within_the_budget_at_the_slowest_pace():
    starts = _bench().starts_another
    assert starts(0.0, None, None) and starts(1e6, 500.0, None)  # no budget
    assert starts(99.0, None, 10.0)  # the first size always starts
    assert starts(20.0, 15.0, 35.0) and not starts(20.5, 15.0, 35.0)


class _ManualClock:
    """Seconds that pass only where a test says so (the fake bench_entry)."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _requests(count: int) -> list[SizeRequest]:
    fp16 = DTYPES["fp16"]
    config = Config.parse("BM64_BN64_BK32_GM1_SK1_nW4_nS2")
    return [SizeRequest(GemmProblem(64 * (i + 1), 64, 64, fp16, fp16, fp16), config) for i in range(count)]


def _fake_entry(bench, clock, seconds, interrupt_at=None):
    calls = []

    def bench_entry(problem, config, workdir, floors, before=None):
        calls.append(problem.M)
        if len(calls) == interrupt_at:
            raise KeyboardInterrupt
        clock.now += seconds
        times = {"tune_gemm": 10.0, "cuBLAS": 12.0, "max-autotune": 11.0, "triton tutorial": math.inf}
        return bench.Measured(times, {"tune_gemm": 30.0}, [], "", MATMUL, {})

    return bench_entry, calls


def test_the_time_budget_leaves_the_sizes_that_would_end_past_it(tmp_path, monkeypatch):
    bench, clock = _bench(), _ManualClock()
    entry, calls = _fake_entry(bench, clock, seconds=10.0)
    monkeypatch.setattr(bench, "bench_entry", entry)
    requests = _requests(4)
    run = bench.bench_sizes(requests, False, 35.0, tmp_path / "b.csv", clock=clock)
    assert calls == [64, 128, 192]  # the fourth would start at 30 s and, taking 10 like the others, end past 35
    assert [row["size"] for row in run.rows] == [r.problem.label for r in requests[:3]]
    assert run.left == requests[3:] and run.why_left == "time budget of 35 s"
    assert run.rows[0]["vs cuBLAS"] == 1.2 and run.rows[0]["vs best peer"] == 1.1
    with open(tmp_path / "b.csv", newline="") as handle:
        assert len(list(csv.DictReader(handle))) == 3


def test_a_first_size_whose_peer_failed_and_a_second_where_it_ran_share_the_csv_header(tmp_path, monkeypatch):
    # the ninth fp8 run on an H200: max-autotune has no template at 16x16x16, runs at 1024^3, and the CSV's header,
    # taken from the first row, lacked the second row's "max-autotune host us"
    bench = _bench()
    entries = iter([
        bench.Measured({"tune_gemm": 4.2, "cuBLAS": 5.3, "max-autotune": math.inf, "triton tutorial": 4.8},
                       {"tune_gemm": 24.8, "cuBLAS": 22.4, "triton tutorial": 25.9}, [], "BM128", SCALED_MM,
                       {"max-autotune": "failed to compile torch._scaled_mm: NoValidChoicesError"}),
        bench.Measured({"tune_gemm": 8.0, "cuBLAS": 8.8, "max-autotune": 9.5, "triton tutorial": 12.6},
                       {"tune_gemm": 29.3, "cuBLAS": 21.2, "max-autotune": 72.9, "triton tutorial": 25.5}, [],
                       "BM128", SCALED_MM, {}),
    ])
    monkeypatch.setattr(bench, "bench_entry", lambda problem, config, workdir, floors, before=None: next(entries))
    run = bench.bench_sizes(_requests(2), False, None, tmp_path / "b.csv")
    assert list(run.rows[0]) == list(run.rows[1])
    with open(tmp_path / "b.csv", newline="") as handle:
        first, second = csv.DictReader(handle)
    assert first["max-autotune host us"] == "" and first["max-autotune us"] == ""
    assert second["max-autotune host us"] == "72.9" and second["vs max-autotune"] == "1.188"


def test_ctrl_c_keeps_the_sizes_measured(tmp_path, monkeypatch):
    bench, clock = _bench(), _ManualClock()
    entry, calls = _fake_entry(bench, clock, seconds=1.0, interrupt_at=2)
    monkeypatch.setattr(bench, "bench_entry", entry)
    requests = _requests(3)
    run = bench.bench_sizes(requests, False, None, tmp_path / "b.csv", clock=clock)
    assert len(run.rows) == 1 and run.left == requests[1:] and run.why_left == "interrupted"
    with open(tmp_path / "b.csv", newline="") as handle:
        assert [row["size"] for row in csv.DictReader(handle)] == [requests[0].problem.label]


def test_every_size_runs_without_a_budget(tmp_path, monkeypatch):
    bench, clock = _bench(), _ManualClock()
    entry, calls = _fake_entry(bench, clock, seconds=1000.0)
    monkeypatch.setattr(bench, "bench_entry", entry)
    run = bench.bench_sizes(_requests(3), False, None, None, clock=clock)
    assert len(run.rows) == 3 and run.left == [] and run.why_left == ""


def _results_file(tmp_path, sizes: int):
    path = tmp_path / "results.yaml"
    path.write_text("".join(
        f"- {{M: {64 * (i + 1)}, N: 64, K: 64, rowMajorA: T, rowMajorB: T, BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 64, "
        "BLOCK_SIZE_K: 32, GROUP_SIZE_M: 1, SPLIT_K: 1, num_warps: 4, num_stages: 2, dtype_a: fp16, dtype_b: fp16, "
        "dtype_c: fp16}\n" for i in range(sizes)))
    return path


@pytest.mark.parametrize("interrupt_at, code", [(None, 0), (2, 130)])
def test_main_prints_the_table_of_the_sizes_measured_and_names_those_left(tmp_path, monkeypatch, capsys,
                                                                           interrupt_at, code):
    bench, clock = _bench(), _ManualClock()
    entry, calls = _fake_entry(bench, clock, seconds=5.0, interrupt_at=interrupt_at)
    monkeypatch.setattr(bench, "bench_entry", entry)
    monkeypatch.setattr(bench, "bench_sizes", functools.partial(bench.bench_sizes, clock=clock))
    monkeypatch.setattr(bench.torch.cuda, "get_device_name", lambda *device: "a CPU standing in")
    monkeypatch.setattr(bench, "require_gpu", lambda: None)
    budget = [] if interrupt_at else ["--time_budget", "12"]
    monkeypatch.setattr(bench.sys, "argv", ["bench_gemm.py", str(_results_file(tmp_path, 3)), *budget])
    assert bench.main() == code
    out = capsys.readouterr().out
    if interrupt_at:  # during the second size
        assert ("bench_gemm: interrupted: 1 of 3 sizes benchmarked; not benchmarked: 128x64x64 fp16->fp16 TT, "
                "192x64x64 fp16->fp16 TT") in out
    else:  # 5 s a size: the third would start at 10 s and end past 12
        assert "bench_gemm: time budget of 12 s: 2 of 3 sizes benchmarked; not benchmarked: 192x64x64" in out
    assert "| 64x64x64 fp16->fp16 TT | BM64_BN64_BK32_GM1_SK1_nW4_nS2 |" in out
    assert "| 192x64x64 fp16->fp16 TT |" not in out and "geometric mean vs cuBLAS: 1.200" in out


def test_a_budget_that_is_not_positive_is_refused(tmp_path, monkeypatch, capsys):
    bench = _bench()
    monkeypatch.setattr(bench.sys, "argv", ["bench_gemm.py", str(_results_file(tmp_path, 1)), "--time_budget", "0"])
    with pytest.raises(SystemExit) as exit_info:
        bench.main()
    assert exit_info.value.code == 2 and "--time_budget must be a positive number of seconds, got 0" in \
        capsys.readouterr().err


def test_before_pairs_each_entry_with_the_earlier_tuning_s_config_for_the_same_problem():
    bench = _bench()
    requests = _requests(3)
    other = Config.parse("BM32_BN64_BK32_GM1_SK1_nW4_nS3")
    bf16 = DTYPES["bf16"]
    earlier = [SizeRequest(requests[0].problem, other),  # same problem: paired
               SizeRequest(GemmProblem(128, 64, 64, bf16, bf16, bf16), other),  # 128x64x64 in another dtype: not
               SizeRequest(requests[2].problem, requests[2].config)]  # same problem, same config: paired too
    assert bench.before_configs(requests, earlier) == {requests[0].problem: other,
                                                       requests[2].problem: requests[2].config}


def test_before_times_reach_the_entry_and_give_a_ratio_column_in_rows_that_have_one(tmp_path, monkeypatch, capsys):
    bench = _bench()
    seen = []

    def bench_entry(problem, config, workdir, floors, before=None):
        seen.append(before)
        times = {"tune_gemm": 10.0, "cuBLAS": 12.0, "max-autotune": 11.0, "triton tutorial": math.inf}
        if before is not None:
            times["before"] = 12.5
        return bench.Measured(times, {}, [], "", MATMUL, {}, "" if before is None else str(before))
    monkeypatch.setattr(bench, "bench_entry", bench_entry)
    requests = _requests(2)
    other = Config.parse("BM32_BN64_BK32_GM1_SK1_nW4_nS3")
    run = bench.bench_sizes(requests, False, None, tmp_path / "b.csv", before={requests[1].problem: other})
    assert seen == [None, other]
    assert "vs before" not in run.rows[0] and run.rows[1]["vs before"] == 1.25
    assert run.rows[1]["before config"] == str(other)
    with open(tmp_path / "b.csv", newline="") as handle:
        first, second = csv.DictReader(handle)  # the second row's extra fields are in the header, empty in the first
    assert first["vs before"] == "" and second["vs before"] == "1.25" and second["before us"] == "12.5"


def test_the_shipped_public_shapes_are_the_nine_of_the_benchmark_tables():
    defaults = GemmProblem(1, 1, 1, DTYPES["fp16"], DTYPES["fp16"], DTYPES["fp16"])
    shapes = [(r.problem.M, r.problem.N, r.problem.K) for r in load_sizes(BENCHMARKS_DIR / "sizes.yaml", defaults)]
    assert len(shapes) == len(set(shapes)) == 9 and (4095, 4097, 1023) in shapes and (16, 16, 16) in shapes
