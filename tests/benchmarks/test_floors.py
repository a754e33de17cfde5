"""benchmarks/floors.py under the interpreter: the streaming kernel reads every element of A and B once (its block
sums say so) and writes all of C; the launch floor runs; and bench_gemm's floor fields (the GPU timing runs on
the device machine)."""

from __future__ import annotations

import math

import pytest
import torch
from helpers import load_benchmark


@pytest.fixture(scope="module")
def floors():
    return load_benchmark("floors")


def _block_sums(flat: torch.Tensor, block: int) -> torch.Tensor:
    padded = torch.zeros(-(-flat.numel() // block) * block, dtype=torch.float64)
    padded[:flat.numel()] = flat.double()
    return padded.reshape(-1, block).sum(dim=1)


def _matrix(rows: int, cols: int, dtype: torch.dtype, column_major: bool, generator) -> torch.Tensor:
    values = torch.randn((cols, rows) if column_major else (rows, cols), generator=generator)
    if not dtype.is_floating_point:
        values = (values * 20).round().clamp(-127, 127)
    values = values.to(dtype)
    return values.t() if column_major else values


@pytest.mark.parametrize("dtype", [torch.float16, torch.int8])
@pytest.mark.parametrize("col_a", [False, True])
def test_the_stream_reads_a_and_b_once_and_writes_all_of_c(floors, dtype, col_a):
    generator = torch.Generator().manual_seed(0)
    M, N, K, block = 37, 29, 51, 64  # odd sizes: every last block is partial
    a, b = _matrix(M, K, dtype, col_a, generator), _matrix(K, N, dtype, False, generator)
    c = torch.full((M, N), float("nan"), dtype=torch.float16)
    call, sums = floors.stream_call(a, b, c, block=block)
    call()
    expected = torch.cat([_block_sums(floors.storage(a), block), _block_sums(b.reshape(-1), block)])
    assert sums.shape == expected.shape
    assert torch.allclose(sums.double(), expected, rtol=1e-3, atol=1e-2)
    assert torch.equal(c, torch.zeros_like(c))


def test_storage_is_the_dense_order_and_refuses_strided_views(floors):
    matrix = torch.arange(6.0).reshape(2, 3)
    assert floors.storage(matrix).tolist() == [0, 1, 2, 3, 4, 5]
    assert floors.storage(matrix.t()).tolist() == [0, 1, 2, 3, 4, 5]  # column-major: its own storage order
    with pytest.raises(ValueError, match="not dense"):
        floors.storage(torch.arange(12.0).reshape(3, 4)[:, ::2])


def test_floor_calls_launch_an_empty_kernel_and_the_stream(floors):
    a, b = torch.randn(16, 32).half(), torch.randn(32, 24).half()
    c = torch.full((16, 24), float("nan"), dtype=torch.float16)
    calls = floors.floor_calls(a, b, c)
    assert list(calls) == [floors.LAUNCH_FLOOR, floors.MEMORY_FLOOR]
    calls[floors.LAUNCH_FLOOR]()
    assert c.isnan().all()  # the empty kernel touches nothing
    calls[floors.MEMORY_FLOOR]()
    assert torch.equal(c, torch.zeros_like(c))


def test_floor_fields_take_the_higher_floor_and_the_ceiling_over_the_best_peer():
    bench = load_benchmark("bench_gemm")
    times = {"tune_gemm": 21.0, "cuBLAS": 22.7, "max-autotune": 27.1, "launch floor": 3.9, "memory floor": 20.0}
    fields = bench.floor_fields(times)
    assert fields["floor"] == "memory floor" and fields["floor us"] == 20.0
    assert fields["tune_gemm / floor"] == 1.05 and fields["cuBLAS / floor"] == 1.135
    assert fields["ceiling vs best peer"] == 1.135  # cuBLAS, the faster peer, over the floor
    launch_bound = bench.floor_fields({**times, "memory floor": 1.0, "max-autotune": math.inf})
    assert launch_bound["floor"] == "launch floor" and launch_bound["max-autotune / floor"] == ""
    assert launch_bound["ceiling vs best peer"] == round(22.7 / 3.9, 3)


def test_small_matrices_get_one_block_of_their_own_size(floors):
    assert floors.block_for(256) == 256  # 16x16: one program of one warp per matrix
    assert floors.block_for(1000) == 1024 and floors.block_for(3) == 128
    assert floors.block_for(4096 * 4096) == floors.STREAM_BLOCK
