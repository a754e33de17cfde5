"""On a GPU (`pytest -m gpu`, device machine): the streaming kernel of benchmarks/floors.py reads every element
compiled as under the interpreter, and `bench_gemm.py --floors` times both floors beside the columns (the launch
floor below every column: an empty kernel)."""

from __future__ import annotations

import csv
import sys

import pytest
import torch
import yaml
from helpers import load_benchmark

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

ENTRY = {"rowMajorA": "T", "rowMajorB": "T", "GROUP_SIZE_M": 1, "SPLIT_K": 1, "num_stages": 4}
RESULTS = [  # a launch-bound and a memory-bound shape, each with the config refine picked on the H100
    {"M": 16, "N": 16, "K": 16, **ENTRY, "BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 16, "num_warps": 2,
     "num_stages": 2},
    {"M": 16, "N": 4096, "K": 4096, **ENTRY, "BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 256,
     "num_warps": 2},
]


def test_the_stream_reads_every_block_on_the_gpu():
    floors = load_benchmark("floors")
    a = torch.randn(4096, 16, device="cuda").half().t()  # column-major A
    b = torch.randn(4096, 4096 + 8, device="cuda").half()
    c = torch.full((16, 4104), float("nan"), device="cuda", dtype=torch.half)
    call, sums = floors.stream_call(a, b, c)
    call()
    expected = torch.cat([block.double().sum().reshape(1) for flat in (floors.storage(a), b.reshape(-1))
                          for block in flat.split(floors.block_for(b.numel()))])
    assert torch.allclose(sums.double(), expected, rtol=1e-3, atol=0.5)
    assert torch.equal(c, torch.zeros_like(c))


def test_bench_gemm_times_the_floors_below_every_column(tmp_path, monkeypatch, capsys):
    bench = load_benchmark("bench_gemm")
    results, table = tmp_path / "results.yaml", tmp_path / "bench.csv"
    results.write_text(yaml.safe_dump(RESULTS))
    monkeypatch.setattr(sys, "argv", ["bench_gemm.py", str(results), "--floors", "--csv", str(table)])
    assert bench.main() == 0
    print(capsys.readouterr().out)
    with open(table, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["size"].split()[0] for row in rows] == ["16x16x16", "16x4096x4096"]
    for row in rows:
        columns = [float(row[f"{name} us"]) for name in ("tune_gemm", "cuBLAS", "max-autotune")]
        assert 0 < float(row["launch floor us"]) < min(columns), row
        assert float(row["floor us"]) == max(float(row["launch floor us"]), float(row["memory floor us"]))
        assert float(row["ceiling vs best peer"]) >= float(row["vs best peer"]) * 0.9, row  # 10% for noise
    assert rows[1]["floor"] == "memory floor"  # B's 32 MiB from memory outlast a launch
