"""tune_gemm.kernels.bound.launcher_for under the interpreter (tests/conftest.py): a config's launch options, num_ctas among
them, reach the family kernel's launch, on the grid the family gives it; a STATIC_SHAPE config launches the
constant-shape kernel, right on every shape; a FUSED_REDUCE config sums its split-K partials in its one kernel
launch, in either family; a SWAP_AB config launches the TMA kernel on C^T; an ALIGN_ROWS config
copies operands whose rows start off 128-byte lines; a NARROW_EDGE config computes the columns past its whole tiles
in narrow tiles, on whatever N it meets; a config whose tile side is two powers of two launches its parts."""

from __future__ import annotations

import pytest
import torch
from helpers import KernelSpy

from tune_gemm.core.config import ATOMIC_REDUCE, FUSED_EDGE, Config
from tune_gemm.core.dtypes import DTYPES
from tune_gemm.kernels import bound as kernels
from tune_gemm.kernels import matmul_family, tma_family

M, N, K = 70, 130, 90


@pytest.fixture
def spy_on(monkeypatch):
    """Replace a family kernel by a KernelSpy; launchers are built afresh so that they bind the spy."""
    kernels.launcher_for.cache_clear()

    def install(module, name: str) -> KernelSpy:
        spy = KernelSpy(getattr(module, name))
        monkeypatch.setattr(module, name, spy)
        return spy
    yield install
    kernels.launcher_for.cache_clear()  # no launcher bound to a spy outlives the test


def _error(config: Config) -> float:
    """Relative error of the config's launcher against float64, C poisoned with NaN first."""
    generator = torch.Generator().manual_seed(1)
    a = torch.randn(M, K, generator=generator).half()
    b = torch.randn(K, N, generator=generator).half()
    c = torch.full((M, N), float("nan"), dtype=torch.float16)
    kernels.launcher_for(config)(a, b, c)
    return matmul_family.relative_error(c, a, b)


def test_num_ctas_reaches_the_plain_launch_with_one_program_per_tile(spy_on):
    spy = spy_on(matmul_family, "matmul_tile")
    assert _error(Config(32, 64, 32, 2, 1, 4, 2, num_ctas=2)) <= DTYPES["fp16"].tolerance
    [(_, kwargs)] = spy.launches
    assert kwargs["num_ctas"] == 2
    assert spy.grids == [(3 * 3, 1)]  # ceil(70 / 32) x ceil(130 / 64) tiles


def test_num_ctas_reaches_the_tma_launch_with_one_program_per_cluster(spy_on, monkeypatch):
    spy = spy_on(tma_family, "tma_persistent_tile")
    monkeypatch.setattr(tma_family.slicing, "INTERPRETER_PROGRAMS", 6)  # 6 stand-in SMs: 3 clusters of 2, fewer than 6 tiles
    assert _error(Config(64, 64, 64, 2, 1, 4, 2, PERSISTENT_TMA=1, num_ctas=2)) <= DTYPES["fp16"].tolerance
    [(_, kwargs)] = spy.launches
    assert kwargs["num_ctas"] == 2
    assert spy.grids == [(3,)]


def test_a_config_without_launch_options_passes_none(spy_on):
    spy = spy_on(matmul_family, "matmul_tile")
    assert _error(Config(32, 64, 32, 2, 1, 4, 2)) <= DTYPES["fp16"].tolerance
    [(_, kwargs)] = spy.launches
    assert "num_ctas" not in kwargs


def test_a_static_shape_config_launches_the_constant_shape_kernel_right_on_each_shape(spy_on):
    spy = spy_on(matmul_family, "matmul_tile_static_shape")
    config = Config(32, 64, 32, 1, 2, 4, 1, STATIC_SHAPE=1)  # split K too: the partials' strides are constants
    assert _error(config) <= DTYPES["fp16"].tolerance
    generator = torch.Generator().manual_seed(2)
    a, b = torch.randn(33, 64, generator=generator).half(), torch.randn(64, 17, generator=generator).half()
    c = torch.full((33, 17), float("nan"), dtype=torch.float16)
    kernels.launcher_for(config)(a, b, c)  # the same launcher on another shape: Triton compiles another binary
    assert matmul_family.relative_error(c, a, b) <= DTYPES["fp16"].tolerance
    assert [args[8:11] for args, _ in spy.launches] == [(M, N, K), (33, 17, 64)]  # the sizes, as constants


def test_a_fused_reduction_config_sums_its_partials_in_its_one_launch_on_each_shape(spy_on):
    tile, reduction = spy_on(matmul_family, "matmul_tile"), spy_on(matmul_family, "splitk_reduce_tile")
    config = Config(32, 64, 32, 1, 2, 4, 1, FUSED_REDUCE=1)
    assert _error(config) <= DTYPES["fp16"].tolerance
    generator = torch.Generator().manual_seed(3)
    a, b = torch.randn(100, 64, generator=generator).half(), torch.randn(64, 200, generator=generator).half()
    c = torch.full((100, 200), float("nan"), dtype=torch.float16)
    kernels.launcher_for(config)(a, b, c)  # more tiles than the first shape: more arrival counters
    assert matmul_family.relative_error(c, a, b) <= DTYPES["fp16"].tolerance
    assert tile.grids == [(3 * 3, 2), (4 * 4, 2)] and reduction.launches == []
    assert all(kwargs["FUSED_REDUCE"] == 1 for _, kwargs in tile.launches)
    assert tile.named(1)["c_ptr"] is c and tile.named(1)["arrivals_ptr"].numel() >= 4 * 4  # C itself, one launch


def test_a_tma_split_k_config_walks_its_slices_on_one_grid_of_persistent_programs_on_each_shape(spy_on):
    spy = spy_on(tma_family, "tma_persistent_tile")
    config = Config(64, 64, 32, 1, 2, 4, 2, PERSISTENT_TMA=1, FUSED_REDUCE=1)
    assert _error(config) <= DTYPES["fp16"].tolerance
    generator = torch.Generator().manual_seed(4)
    a, b = torch.randn(100, 64, generator=generator).half(), torch.randn(64, 200, generator=generator).half()
    c = torch.full((100, 200), float("nan"), dtype=torch.float16)
    kernels.launcher_for(config)(a, b, c)  # 8 tiles: more arrival counters than the first shape's 6
    assert matmul_family.relative_error(c, a, b) <= DTYPES["fp16"].tolerance
    assert [kwargs["SPLIT_K"] for _, kwargs in spy.launches] == [2, 2]
    assert spy.named(1)["arrivals"].numel() >= 8 and not spy.named(1)["arrivals"].any()
    assert spy.named(1)["workspace"].numel() == 8 * 2 * 64 * 64  # a slot per tile and slice


def test_an_atomic_tma_split_adds_into_running_sums_it_leaves_zero(spy_on):
    spy = spy_on(tma_family, "tma_persistent_tile")
    config = Config(64, 64, 32, 1, 4, 4, 2, PERSISTENT_TMA=1, FUSED_REDUCE=ATOMIC_REDUCE)
    for _ in range(2):
        assert _error(config) <= DTYPES["fp16"].tolerance
    assert [kwargs["FUSED_REDUCE"] for _, kwargs in spy.launches] == [ATOMIC_REDUCE, ATOMIC_REDUCE]
    sums = spy.named(1)["workspace"]
    assert sums is spy.named(0)["workspace"] and sums.numel() >= 6 * 64 * 64 and not sums.any()  # a sum per tile


def test_a_swapped_config_launches_the_tma_kernel_on_c_transposed(spy_on):
    spy = spy_on(tma_family, "tma_persistent_tile")
    config = Config(64, 128, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, SWAP_AB=1)
    assert _error(config) <= DTYPES["fp16"].tolerance
    [(_, kwargs)] = spy.launches
    named = spy.named()
    # C^T, written in place through C's storage
    assert (named["M"], named["N"], named["K"], named["stride_cm"], named["stride_cn"]) == (N, M, K, 1, N)
    assert "SWAP_AB" not in kwargs  # a host-side knob: the kernel binds none of it
    assert (kwargs["A_COL"], kwargs["B_COL"]) == (True, True)  # B^T and A^T of row-major B and A


def test_an_align_rows_config_copies_rows_that_start_off_128_byte_lines(spy_on):
    spy = spy_on(tma_family, "tma_persistent_tile")
    generator = torch.Generator().manual_seed(3)
    a, b = torch.randn(64, 48, generator=generator).half(), torch.randn(48, 72, generator=generator).half()
    for align_rows in (0, 1):  # rows of 96 and 144 bytes: 16-byte aligned, off 128-byte lines
        c = torch.full((64, 72), float("nan"), dtype=torch.float16)
        kernels.launcher_for(Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, ALIGN_ROWS=align_rows))(a, b, c)
        assert matmul_family.relative_error(c, a, b) <= DTYPES["fp16"].tolerance
    (plain, _), (aligned, kwargs) = spy.launches
    assert [desc.strides[0] for desc in plain[:2]] == [48, 72]  # A and B as they are
    assert [desc.strides[0] for desc in aligned[:2]] == [64, 128]  # copies with rows of whole lines
    assert "ALIGN_ROWS" not in kwargs  # a host-side knob: the kernel binds none of it


def _launch_on_each_n(config: Config, ns: tuple[int, ...], seed: int) -> None:
    """The config's launcher on one A (70 x 40) and a B of each width in ns, each C poisoned first and checked."""
    generator = torch.Generator().manual_seed(seed)
    a = torch.randn(70, 40, generator=generator).half()
    for n in ns:
        b = torch.randn(40, n, generator=generator).half()
        c = torch.full((70, n), float("nan"), dtype=torch.float16)
        kernels.launcher_for(config)(a, b, c)
        assert matmul_family.relative_error(c, a, b) <= DTYPES["fp16"].tolerance, n


def test_a_narrow_edge_config_sizes_its_edge_tiles_to_each_n_it_meets(spy_on):
    spy = spy_on(tma_family, "tma_persistent_tile")
    # 8 columns past one whole tile of 64; 36 (edges of 32 and 16); 56 (edges of 32 and 32, as wide as a whole tile);
    # none
    _launch_on_each_n(Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, NARROW_EDGE=1), (72, 100, 120, 128), seed=5)
    assert [(kwargs.get("EDGE_N", 0), kwargs.get("EDGE_N2", 0)) for _, kwargs in spy.launches] == [
        (16, 0), (32, 16), (0, 0), (0, 0)]
    assert [(spy.named(launch)["b_edge"] is not None, spy.named(launch)["b_edge2"] is not None)
            for launch in range(4)] == [(True, False), (True, True), (False, False), (False, False)]
    assert "NARROW_EDGE" not in spy.launches[0][1]  # a host-side knob: the kernel binds its width, not the knob


def test_a_fused_edge_config_fuses_where_n_has_a_whole_tile_and_computes_the_edge_apart_where_not(spy_on):
    spy = spy_on(tma_family, "tma_persistent_tile")
    # 8 columns past one whole tile of 64; 24 columns and no whole tile; 40 past two whole tiles (edges of 32 and 16,
    # each beside one); 36 past one (edges of 32 and 16, one whole tile for two)
    _launch_on_each_n(Config(64, 64, 32, 1, 1, 4, 2, PERSISTENT_TMA=1, NARROW_EDGE=FUSED_EDGE), (72, 24, 168, 100),
                      seed=6)
    assert [(kwargs["EDGE_N"], kwargs.get("EDGE_N2", 0), kwargs.get("EDGE_FUSED", False))
            for _, kwargs in spy.launches] == [(16, 0, True), (32, 0, False), (32, 16, True), (32, 16, False)]


def test_a_compound_tile_config_launches_its_parts_on_any_shape(spy_on):
    # BM96 = 64 + 32 rows, BN48 = 32 + 16 columns: the launch gives the kernel the parts' sizes and descriptors
    spy = spy_on(tma_family, "tma_persistent_tile")
    config = Config(96, 48, 32, 2, 1, 4, 2, PERSISTENT_TMA=1)
    assert _error(config) <= DTYPES["fp16"].tolerance
    [(_, kwargs)] = spy.launches
    assert (kwargs["BLOCK_SIZE_M"], kwargs["BLOCK_SIZE_N"], kwargs["EXTRA_M"], kwargs["EXTRA_N"]) == (96, 48, 32, 16)
    named = spy.named()
    assert list(named["a_lower"].block_shape) == [32, 32] and list(named["b_right"].block_shape) == [32, 16]
    assert isinstance(named["c_corner"], torch.Tensor)  # C's rows of 130 halves: stored through pointers


@pytest.mark.parametrize("knobs", [{"SPLIT_K": 2, "FUSED_REDUCE": 1}, {"SPLIT_K": 2, "FUSED_REDUCE": ATOMIC_REDUCE},
                                   {"PERSISTENT_TMA": 1, "SPLIT_K": 2, "FUSED_REDUCE": ATOMIC_REDUCE},
                                   {"PERSISTENT_TMA": 1, "STREAM_K": 2}, {"PERSISTENT_TMA": 1, "NARROW_EDGE": FUSED_EDGE}])
def test_the_constants_a_launcher_binds_are_plain_ints_and_bools(spy_on, knobs):
    # compiled Triton takes only int, bool and None in a constexpr `if`: a mode enum (FusedReduce) there fails to
    # compile on a GPU, though the interpreter runs it
    name = "tma_persistent_tile" if knobs.get("PERSISTENT_TMA") else "matmul_tile"
    spy_on(tma_family if knobs.get("PERSISTENT_TMA") else matmul_family, name)
    launcher = kernels.launcher_for(Config(64, 64, 32, 1, num_warps=4, num_stages=2, **knobs))
    bound = launcher.run.args[0]
    assert bound._constants and all(type(value) in (int, bool) for value in bound._constants.values()), \
        bound._constants
