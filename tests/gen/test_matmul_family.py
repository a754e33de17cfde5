"""gen/matmul_family under the interpreter: grouped_tile, the tile order both families walk, and why pruning keeps
one GROUP_SIZE_M of those that group every row of tiles, and one where there is one column of tiles
(tune_gemm.space.rules.repeats_group_order); tiles of fewer rows than a
matrix instruction (row_products), right for every input type."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch
import triton
import triton.language as tl
from helpers import problem

from tune_gemm.core.config import Config
from tune_gemm.generate import write_module
from tune_gemm.generate.loader import load_module
from tune_gemm.kernels import bound as kernels
from tune_gemm.kernels import matmul_family
from tune_gemm.kernels import matmul_family as family


@triton.jit
def _tile_order(rows_out, columns_out, num_pid_m, num_pid_n, GROUP_SIZE_M: tl.constexpr):
    tile_id = tl.program_id(axis=0)
    pid_m, pid_n = matmul_family.grouped_tile(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M)
    tl.store(rows_out + tile_id, pid_m)
    tl.store(columns_out + tile_id, pid_n)


def _order(rows: int, columns: int, group: int) -> list[tuple[int, int]]:
    rows_out = torch.full((rows * columns,), -1, dtype=torch.int32)
    columns_out = torch.full((rows * columns,), -1, dtype=torch.int32)
    _tile_order[(rows * columns,)](rows_out, columns_out, rows, columns, GROUP_SIZE_M=group)
    return list(zip(rows_out.tolist(), columns_out.tolist()))


@pytest.mark.parametrize("rows, columns", [(3, 5), (4, 4), (1, 6)])
def test_every_group_of_all_rows_walks_the_tiles_column_by_column(rows, columns):
    column_by_column = [(row, column) for column in range(columns) for row in range(rows)]
    for group in (rows, rows + 1, 2 * rows, 32):
        assert _order(rows, columns, group) == column_by_column


@pytest.mark.parametrize("rows", [1, 5, 16])
def test_one_column_of_tiles_is_walked_row_by_row_by_every_group(rows):
    # why pruning keeps one GROUP_SIZE_M where there is one column of tiles (tune_gemm.space.rules.repeats_group_order)
    for group in (1, 2, 4, 8, 32):
        assert _order(rows, 1, group) == [(row, 0) for row in range(rows)]


def test_smaller_groups_walk_other_orders_each_tile_once():
    rows, columns = 5, 3
    orders = {group: _order(rows, columns, group) for group in (1, 2, 4, 5)}
    every_tile = sorted((row, column) for row in range(rows) for column in range(columns))
    assert all(sorted(order) == every_tile for order in orders.values())
    assert orders[1] == [(row, column) for row in range(rows) for column in range(columns)]  # row by row
    assert orders[2][:4] == [(0, 0), (1, 0), (0, 1), (1, 1)]  # two rows at a time
    assert len({tuple(order) for order in orders.values()}) == 4  # GROUP_SIZE_M below the rows changes the order


@pytest.mark.parametrize("name", ["BM16_BN32_BK16_GM4_SK1_nW1_nS2", "BM16_BN32_BK16_GM32_SK1_nW1_nS2",
                                  "BM16_BN16_BK16_GM8_SK2_nW1_nS2_FR1", "BM64_BN64_BK32_GM4_SK1_nW4_nS2_TMA1"])
def test_a_group_of_every_row_computes_c(name):
    # 40 rows: three rows of 16-row tiles (GROUP_SIZE_M 4 and up group them all), one of 64-row tiles
    generator = torch.Generator().manual_seed(3)
    a = torch.randn(40, 96, generator=generator).half()
    b = torch.randn(96, 72, generator=generator).half()
    c = torch.full((40, 72), float("nan"), dtype=torch.float16)
    kernels.launcher_for(Config.parse(name))(a, b, c)
    assert matmul_family.relative_error(c, a, b) <= 1e-2


# Tiles of fewer rows than a matrix instruction (row_products): few columns and long rows, wide and short, split K in
# all three ways, STATIC_SHAPE, a row longer than K.
SHORT_TILES = [Config.parse(name) for name in (
    "BM1_BN4_BK512_GM1_SK1_nW4_nS1", "BM1_BN1_BK2048_GM1_SK1_nW8_nS2", "BM2_BN64_BK32_GM1_SK4_nW1_nS3_FR2",
    "BM4_BN8_BK128_GM4_SK2_nW4_nS2_FR1", "BM8_BN16_BK64_GM1_SK2_nW2_nS2", "BM1_BN32_BK128_GM1_SK1_nW2_nS2_SS1",
    "BM1_BN1_BK4096_GM1_SK1_nW32_nS1_SS1")]


@pytest.mark.parametrize("dtype,dtype_c", [("fp16", "fp16"), ("bf16", "bf16"), ("fp32", "fp32"), ("fp16", "fp32"),
                                           ("fp8", "fp16"), ("int8", "int32")])
@pytest.mark.parametrize("M,N,K,col_b,bias", [(1, 37, 1000, True, False), (3, 20, 520, False, True),
                                              (7, 9, 256, True, True)])
def test_tiles_shorter_than_an_instruction_match_float64(tmp_path, interpreter_env, dtype, dtype_c, M, N, K, col_b,
                                                          bias):
    # K = 1000 and 520: a masked K loop for every tile (none divides them); K = 256: the split ones run unmasked
    p = replace(problem(M, N, K, dtype, col_b=col_b, dtype_c=dtype_c), bias=bias and dtype != "int8")
    module = load_module(write_module(p, SHORT_TILES, tmp_path))
    for name, launcher in module.LAUNCHERS.items():
        error = family.check_config(launcher, module.PROBLEM, "cpu", seed=5)
        assert error <= p.dtype_a.tolerance, (name, error)


def test_a_short_tile_sums_every_product_once():
    # integers small enough to be exact in fp32: any product left out or counted twice shows
    a = torch.arange(3 * 40, dtype=torch.float32).reshape(3, 40).remainder(7).half()
    b = torch.arange(40 * 5, dtype=torch.float32).reshape(40, 5).remainder(5).half()
    for name in ("BM1_BN4_BK16_GM1_SK1_nW1_nS1", "BM4_BN1_BK64_GM1_SK2_nW1_nS1_FR1"):
        c = torch.full((3, 5), float("nan"), dtype=torch.float16)
        kernels.launcher_for(Config.parse(name))(a, b, c)
        assert torch.equal(c.float(), a.float() @ b.float()), name


class _Param:
    def __init__(self, is_constexpr: bool):
        self.is_constexpr = is_constexpr


class _Compiled:
    """A compiled kernel as Triton returns it from kernel[grid](...), its launcher recording each launch."""

    def __init__(self, constexpr_flags):
        self.src = type("Source", (), {"fn": type("Fn", (), {"params": [_Param(f) for f in constexpr_flags]})})
        self.launches = []

    def __getitem__(self, grid):
        return lambda *args: self.launches.append(((grid[0], grid[1], grid[2]), args))  # as Triton's launcher reads


def test_a_replay_passes_new_leading_arguments_and_the_captured_rest():
    compiled = _Compiled([False, False, False, False, True, True])  # a, b, M, N, then two constants
    replay = matmul_family.capture(compiled, (132,), ("a", "b", 64, 32), 2, owners=("config",))
    replay("x", "y")
    assert compiled.launches == [((132, 1, 1), ("x", "y", 64, 32, None, None))]  # the launcher skips the constants


def test_no_replay_where_a_later_parameter_would_come_from_the_call_or_nothing_was_compiled():
    assert matmul_family.capture(_Compiled([False, False, False]), (1,), ("a", "b"), 2, ()) is None
    assert matmul_family.capture(None, (1,), ("a", "b"), 2, ()) is None  # the interpreter returns no kernel
    unsubscriptable = SimpleNamespace(src=_Compiled([False, False]).src)  # a compiled kernel without compiled[grid]
    assert matmul_family.capture(unsubscriptable, (1,), ("a", "b"), 2, ()) is None


def test_each_kernel_remembers_its_replays_up_to_a_bound(monkeypatch):
    monkeypatch.setattr(matmul_family.replay, "REPLAYS_PER_KERNEL", 2)
    kernel, other = SimpleNamespace(), SimpleNamespace()
    replays = matmul_family.replays_of(kernel)
    assert matmul_family.replays_of(kernel) is replays and matmul_family.replays_of(other) is not replays
    for key in ("first", "second", "third"):
        matmul_family.remember(kernel, key, f"replay of {key}")
    matmul_family.remember(kernel, "fourth", None)  # nothing captured: nothing kept
    assert replays == {"second": "replay of second", "third": "replay of third"}


# a split K summed by the reduction kernel (both launches replayed), or inside the GEMM (its partials and counters
# taken again at each call), and no split; fp8 with its scales, a bias, B column-major
@pytest.mark.parametrize("config", [Config(32, 32, 32, 1, 2, 4, 2), Config(32, 32, 32, 1, 3, 4, 2, FUSED_REDUCE=1),
                                    Config(32, 64, 32, 2, 1, 4, 2)])
@pytest.mark.parametrize("dtype", ["fp16", "fp8"])
def test_replayed_plain_launches_match_float64(tmp_path, interpreter_env, monkeypatch, config, dtype):
    from helpers import replaying

    from tune_gemm.generate.naming import kernel_name, reduce_kernel_name

    p = replace(problem(70, 90, 200, dtype, col_b=True, dtype_c="fp16"), bias=True)
    module = load_module(write_module(p, [config], tmp_path))
    names = [kernel_name(config), *([reduce_kernel_name(config)] if config.reduction_kernel else [])]
    kernels = replaying(monkeypatch, module, *names)
    for seed in range(3):  # new matrices each call, C poisoned
        error = family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cpu", seed=seed)
        assert error <= module.PROBLEM.tolerance, (str(config), seed, error)
    assert [(kernel.launched, kernel.replayed) for kernel in kernels.values()] == [(1, 2)] * len(names)


def test_launches_are_keyed_by_their_configs_and_signature_where_they_are_replayed(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    config, variant, a = SimpleNamespace(), SimpleNamespace(), torch.randn(8, 8)
    monkeypatch.setattr(matmul_family.replay, "REPLAY_LAUNCHES", True)
    key = matmul_family.replay_key((config, variant), a, None)
    assert key == (id(config), id(variant), matmul_family.call_signature(a, None))
    kernel = SimpleNamespace()
    assert matmul_family.replay_of(kernel, key) is None
    matmul_family.remember(kernel, key, "replay")
    assert matmul_family.replay_of(kernel, key) == "replay"
    monkeypatch.setattr(matmul_family.replay, "REPLAY_LAUNCHES", False)
    assert matmul_family.replay_key((config, variant), a, None) is None
    assert matmul_family.replay_of(kernel, None) is None


def test_the_call_signature_tells_apart_what_specializes_a_launch(monkeypatch):
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    a = torch.randn(64, 40)
    signature = matmul_family.call_signature(a, None)
    assert signature == matmul_family.call_signature(torch.randn(64, 40), None)  # other values, same launch
    misaligned = torch.randn(64 * 40 + 1)[1:].view(64, 40)  # 4 bytes past an aligned address
    for other in (a.t().contiguous().t(), a[:, :32], a.half(), misaligned):
        assert matmul_family.call_signature(other, None) != signature
    assert matmul_family.call_signature(a, a) != signature  # a bias where there was none
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 1)
    assert matmul_family.call_signature(a, None) != signature
