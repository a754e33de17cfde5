"""gen/matmul_family.grouped_tile under the interpreter: the tile order both families walk, and why pruning keeps
one GROUP_SIZE_M of those that group every row of tiles (prune.rules.repeats_group_order)."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from gen import matmul_family
from prune.config import Config
from runtime import kernels


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
