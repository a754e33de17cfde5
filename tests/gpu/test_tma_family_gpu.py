"""On a Hopper GPU (`pytest -m gpu`): the persistent TMA family compiles ahead of launch the very binary the launch
uses, runs right (fp16/bf16; fp32 as tf32; fp8/bf8 with scales and int8 into int32; C stored through its descriptor
or, unaligned, through pointers in place; SWAP_AB configs through C^T), and times whole."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from helpers import check_compiled_ahead, problem, spied

from tune_gemm.core.config import (
    ATOMIC_REDUCE,
    FUSED_EDGE,
    SPLIT_EDGE,
    SPLIT_TAIL,
    Config,
)
from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.generate import write_module
from tune_gemm.generate.loader import load_module
from tune_gemm.kernels import matmul_family as family
from tune_gemm.kernels.matmul_family import host as family_host
from tune_gemm.space.rules import RULES_BY_NAME

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0),
                       reason="needs a Hopper (or newer) NVIDIA GPU"),
]

CONFIGS = [
    Config(128, 128, 64, 8, 1, 4, 4, PERSISTENT_TMA=1),
    Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1),
    Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, WARP_SPECIALIZE=1),
    # stream-K shares out the last tiles where they overrun whole waves: at 4095x4097 and 4096x4097 (544 tiles of
    # 128x256 on 132 SMs); elsewhere here it runs as its twin without
    Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, STREAM_K=1),
    Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, WARP_SPECIALIZE=1, STREAM_K=1),
]
# 8-bit inputs: K tiles of 128 (prune rule tma_tile); all three fit shared memory with an int32 output tile.
CONFIGS_8BIT = [
    Config(128, 128, 128, 8, 1, 4, 4, PERSISTENT_TMA=1),
    Config(128, 256, 128, 8, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1),
    Config(128, 128, 128, 8, 1, 8, 3, PERSISTENT_TMA=1, WARP_SPECIALIZE=1),
]
# num_ctas=2, each program a cluster of two CTAs: a plain config and a TMA one, as the prune rules keep them (the TMA
# family in clusters failed to compile with EPILOGUE_SUBTILE or STREAM_K, and computed C wrong with a column-major A).
CLUSTER_CONFIGS = [
    Config(128, 128, 64, 8, 1, 4, 3, num_ctas=2),
    Config(128, 128, 64, 8, 1, 4, 4, PERSISTENT_TMA=1, num_ctas=2),
]
SIZES = [  # M, N, K, col_a, col_b
    (1024, 1024, 1024, False, False),
    (4095, 4097, 1023, False, False),  # odd leading dimensions: A and B padded copies, C stored through pointers
    (1000, 1000, 1000, True, True),
    (777, 2048, 512, False, True),
    (4096, 4097, 4096, False, True),  # only C unaligned: no copy at all
]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K,col_a,col_b", SIZES)
def test_compiled_ahead_and_correct(tmp_path, dtype, M, N, K, col_a, col_b):
    check_compiled_ahead(tmp_path, problem(M, N, K, dtype, col_a, col_b), CONFIGS)


# fp32 runs as tf32: K tiles of 32 (128 bytes); its stages and output tile take twice fp16's shared memory
CONFIGS_FP32 = [
    Config(128, 128, 32, 8, 1, 8, 4, PERSISTENT_TMA=1),
    Config(128, 256, 32, 8, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1),
    Config(128, 256, 32, 8, 1, 8, 3, PERSISTENT_TMA=1, WARP_SPECIALIZE=1, EPILOGUE_SUBTILE=1),
    Config(128, 256, 32, 8, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, STREAM_K=1),
    Config(128, 128, 32, 8, 2, 8, 4, PERSISTENT_TMA=1, FUSED_REDUCE=1),
]


# B row-major is read from its K-major copy (k_major_copy), B column-major as it is; a column-major A is re-laid out
# by Triton inside the kernel
@pytest.mark.parametrize("M,N,K,col_a,col_b", SIZES)
def test_fp32_runs_as_tf32_compiled_ahead_and_correct(tmp_path, M, N, K, col_a, col_b):
    ahead = check_compiled_ahead(tmp_path, problem(M, N, K, "fp32", col_a, col_b), CONFIGS_FP32)
    assert set(ahead.values()) == {"ok"}, ahead


# C^T = B^T A^T: B^T and A^T are column-major operands, C^T is stored through pointers
SWAPPED_CONFIGS = [
    Config(128, 256, 64, 16, 1, 8, 4, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, SWAP_AB=1),
    Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, WARP_SPECIALIZE=1, EPILOGUE_SUBTILE=1, SWAP_AB=1),
    Config(128, 128, 64, 8, 1, 8, 4, PERSISTENT_TMA=1, SWAP_AB=1),
]


# K split in slices that sum their partials themselves, at sizes where the rule tma_split_k keeps them (fewer tiles
# than SMs), odd ones among them (padded A, C through pointers), and launched twice (check_config poisons C each time:
# the second launch finds the arrival counters the first left)
SPLIT_CONFIGS = [
    Config(128, 128, 64, 8, 2, 8, 4, PERSISTENT_TMA=1, FUSED_REDUCE=1),
    Config(128, 256, 64, 8, 4, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, FUSED_REDUCE=1),
    Config(64, 128, 128, 4, 2, 4, 4, PERSISTENT_TMA=1, FUSED_REDUCE=1),
    Config(64, 64, 128, 1, 16, 4, 4, PERSISTENT_TMA=1, FUSED_REDUCE=ATOMIC_REDUCE),
    Config(128, 128, 64, 8, 2, 8, 4, PERSISTENT_TMA=1, FUSED_REDUCE=ATOMIC_REDUCE),
]
SPLIT_SIZES = [
    (1024, 1024, 16384, False, False),
    (1000, 1000, 5000, True, True),
    (128, 256, 65536, False, True),
    (777, 1000, 4097, False, False),
]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K,col_a,col_b", SPLIT_SIZES)
def test_split_k_configs_compiled_ahead_and_correct(tmp_path, dtype, M, N, K, col_a, col_b):
    p = problem(M, N, K, dtype, col_a, col_b)
    ahead = check_compiled_ahead(tmp_path, p, SPLIT_CONFIGS)
    assert set(ahead.values()) == {"ok"}, ahead
    again = tmp_path / "again"
    again.mkdir()
    module = load_module(write_module(p, [SPLIT_CONFIGS[0], SPLIT_CONFIGS[-1]], again))
    for config in (SPLIT_CONFIGS[0], SPLIT_CONFIGS[-1]):
        for seed in (8, 9):  # the second launch finds the arrival counters (and running sums) the first left
            assert family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cuda", seed=seed) <= (
                p.dtype_a.tolerance)
            assert all(not buffer.any() for buffer in family_host._kept_zero.values())


@pytest.mark.parametrize("dtype, dtype_c", [("fp8", "fp16"), ("int8", "int32")])
def test_split_k_8_bit_inputs_with_the_bias_compiled_ahead_and_correct(tmp_path, dtype, dtype_c):
    p = replace(problem(1000, 1000, 8192, dtype, col_b=True, dtype_c=dtype_c), bias=dtype != "int8")
    check_compiled_ahead(tmp_path, p, [Config(128, 128, 128, 8, 2, 8, 3, PERSISTENT_TMA=1, FUSED_REDUCE=1),
                                       Config(128, 128, 128, 8, 2, 8, 3, PERSISTENT_TMA=1,
                                              FUSED_REDUCE=ATOMIC_REDUCE)])


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K,col_a,col_b", SIZES)
def test_swapped_configs_compiled_ahead_and_correct(tmp_path, dtype, M, N, K, col_a, col_b):
    ahead = check_compiled_ahead(tmp_path, problem(M, N, K, dtype, col_a, col_b), SWAPPED_CONFIGS)
    assert set(ahead.values()) == {"ok"}, ahead


# rows copied where they start off 128-byte lines, plain and swapped
ALIGNED_CONFIGS = [
    Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, ALIGN_ROWS=1),
    Config(128, 256, 64, 16, 1, 8, 4, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, SWAP_AB=1, ALIGN_ROWS=1),
]


@pytest.mark.parametrize("M,N,K,col_a,col_b", [
    (8192, 2056, 4096, False, False),  # B's rows 4112 bytes: copied
    (2056, 4096, 4104, False, False),  # A's rows 8208 bytes: copied
    (1000, 1000, 1000, True, True),  # rows of 2000 bytes: copied, and C's through pointers
    (4095, 4097, 1023, False, False),  # rows not 16-byte aligned: copied with or without the knob
])
def test_align_rows_configs_compiled_ahead_and_correct(tmp_path, M, N, K, col_a, col_b):
    ahead = check_compiled_ahead(tmp_path, problem(M, N, K, "fp16", col_a, col_b), ALIGNED_CONFIGS)
    assert set(ahead.values()) == {"ok"}, ahead


# the columns past the last whole tile in narrow edge tiles: plain, warp-specialized, with rows copied, swapped; after
# the whole tiles and fused with the last whole tile of their rows
NARROW_CONFIGS = [
    Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, NARROW_EDGE=1),
    Config(256, 128, 64, 1, 1, 8, 4, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, NARROW_EDGE=1),
    Config(128, 256, 64, 8, 1, 8, 4, PERSISTENT_TMA=1, WARP_SPECIALIZE=1, EPILOGUE_SUBTILE=1, ALIGN_ROWS=1,
           NARROW_EDGE=1),
    Config(128, 128, 64, 8, 1, 4, 5, PERSISTENT_TMA=1, SWAP_AB=1, NARROW_EDGE=1),
    Config(128, 256, 64, 8, 1, 8, 4, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, NARROW_EDGE=FUSED_EDGE),
    Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, NARROW_EDGE=FUSED_EDGE),
    Config(128, 256, 64, 16, 1, 8, 3, PERSISTENT_TMA=1, WARP_SPECIALIZE=1, EPILOGUE_SUBTILE=1, ALIGN_ROWS=1,
           NARROW_EDGE=FUSED_EDGE),
    Config(128, 128, 64, 8, 1, 4, 4, PERSISTENT_TMA=1, SWAP_AB=1, NARROW_EDGE=FUSED_EDGE),
]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K,col_a,col_b", [
    (8192, 2056, 4096, False, False),  # 8 columns past whole tiles of 256 and 128: edge tiles of 16; C^T: none
    (4095, 4097, 1023, False, False),  # 1 column past; C stored through pointers; C^T: 127 past 128, none
    (2056, 1040, 520, True, True),  # column-major A and B, 16 columns past; C^T (N = 2056): 8 past
    (1000, 1040, 1000, False, True),  # 16 columns past; C^T: 104 past 128, none
])
def test_narrow_edge_configs_compiled_ahead_and_correct(tmp_path, dtype, M, N, K, col_a, col_b):
    ahead = check_compiled_ahead(tmp_path, problem(M, N, K, dtype, col_a, col_b), NARROW_CONFIGS)
    assert set(ahead.values()) == {"ok"}, ahead


# Two edge widths, half a tile and the rest: 152 columns past whole tiles of 256 are 128 + 32, each fused beside a
# whole tile or both apart; 24 past whole tiles of 128 are one edge of 32. The narrow_edge rule (on the H100's shared
# memory) leaves out the fused config whose 4 stages, widened by 128 columns, would not fit.
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K,col_a,col_b", [
    (2048, 2200, 1024, False, False),  # C^T: none
    (1000, 664, 520, True, False),  # two whole tiles of 256: one beside each edge; C^T: 232 past 256, none
])
def test_two_edge_widths_compiled_ahead_and_correct(tmp_path, dtype, M, N, K, col_a, col_b):
    p = problem(M, N, K, dtype, col_a, col_b)
    kept = [config for config in NARROW_CONFIGS if RULES_BY_NAME["narrow_edge"].keep(p, config, INTERPRETER_PROFILE)]
    assert sum(config.NARROW_EDGE == FUSED_EDGE and config.BLOCK_SIZE_N == 256 for config in kept) == 2
    ahead = check_compiled_ahead(tmp_path, p, kept)
    assert set(ahead.values()) == {"ok"}, ahead


# Edge tiles apart in K slices (the narrow edge configs apart, split): one edge width or two, rows copied, C^T
SPLIT_EDGE_CONFIGS = [replace(config, NARROW_EDGE=SPLIT_EDGE) for config in NARROW_CONFIGS[:4]]
# The tiles past the last whole wave in K slices: tiles of each shape, C^T with rows copied
SPLIT_TAIL_CONFIGS = [
    Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, STREAM_K=SPLIT_TAIL),
    Config(256, 128, 64, 1, 1, 8, 4, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, STREAM_K=SPLIT_TAIL),
    Config(128, 128, 64, 8, 1, 4, 4, PERSISTENT_TMA=1, STREAM_K=SPLIT_TAIL),
    Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, SWAP_AB=1, ALIGN_ROWS=1, STREAM_K=SPLIT_TAIL),
]


# At sizes where they split on 132 SMs, each config launched twice, the second launch finding the running sums and
# counters the first left; splits: how many of the four configs split there
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("configs,slices_option,M,N,K,col_a,col_b,splits", [
    # 24 past 33 tiles of 128: 16 edge tiles of 256 rows in 8 slices; C^T: none
    (SPLIT_EDGE_CONFIGS, "EDGE_SPLIT", 4096, 4248, 4096, False, False, 3),
    # 152 past tiles of 256: edges of 128 and 32 over 16 rows, 4 slices each
    (SPLIT_EDGE_CONFIGS, "EDGE_SPLIT", 2048, 2200, 1024, False, True, 3),
    # 16 past: 4 slices of 4 K tiles (the last 3); C^T (N = 1000): 104 past 128
    (SPLIT_EDGE_CONFIGS, "EDGE_SPLIT", 1000, 1040, 1000, True, True, 3),
    # C: no edge narrower than a tile; C^T (N = 2056): 8 past; 9 K tiles, 2 slices
    (SPLIT_EDGE_CONFIGS, "EDGE_SPLIT", 2056, 4095, 520, False, False, 1),
    # 800 tiles (1600 of 128x128): 8 (16) past six (twelve) waves, 8 slices
    (SPLIT_TAIL_CONFIGS, "TAIL_SPLIT", 5120, 5120, 4096, False, False, 4),
    # C's rows of 2561 halves through pointers; 3, 4, 2 and 4 slices
    (SPLIT_TAIL_CONFIGS, "TAIL_SPLIT", 5120, 2561, 2048, False, True, 4),
    # 192 tiles: 60 past a wave, 2 slices of 8 K tiles (the last cut); 384 tiles of 128x128: 120 past, 1
    (SPLIT_TAIL_CONFIGS, "TAIL_SPLIT", 2000, 3000, 1000, True, True, 3),
], ids=["edge-4096x4248x4096", "edge-2048x2200x1024", "edge-1000x1040x1000", "edge-2056x4095x520",
        "tail-5120x5120x4096", "tail-5120x2561x2048", "tail-2000x3000x1000"])
def test_split_configs_compiled_ahead_and_correct_twice(tmp_path, monkeypatch, dtype, configs, slices_option, M, N, K,
                                                        col_a, col_b, splits):
    p = problem(M, N, K, dtype, col_a, col_b)
    ahead = check_compiled_ahead(tmp_path, p, configs)
    assert set(ahead.values()) == {"ok"}, ahead
    assert _split_twice(monkeypatch, tmp_path, p, configs, slices_option) == splits


def _split_twice(monkeypatch, tmp_path, p, configs: list, slices_option: str) -> int:
    """How many of `configs` split some tiles' K loops at `p` (their launch's `slices_option` > 1), each launched twice
    against float64 (the second launch finding the running sums and counters the first left), which must leave the
    sums and counters zero."""
    module = load_module(write_module(p, configs, tmp_path))
    split = 0
    for config in configs:
        spy = spied(monkeypatch, module, config)
        for seed in (8, 9):
            error = family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cuda", seed=seed)
            assert error <= p.dtype_a.tolerance, (str(config), seed, error)
        if spy.launches[0][1].get(slices_option, 1) > 1:
            split += 1
            sums, counters = spy.named()["workspace"], spy.named()["arrivals"]
            assert not sums.any() and not counters.any(), str(config)
    return split


@pytest.mark.parametrize("dtype,dtype_c,bias", [("fp8", "fp16", True), ("int8", "int32", False)])
def test_split_edge_8_bit_inputs_compiled_ahead_and_correct(tmp_path, dtype, dtype_c, bias):
    p = replace(problem(4096, 4248, 4096, dtype, False, True, dtype_c), bias=bias)
    ahead = check_compiled_ahead(tmp_path, p, SPLIT_EDGE_CONFIGS[:2])
    assert set(ahead.values()) == {"ok"}, ahead


@pytest.mark.parametrize("dtype,dtype_c,bias", [("fp8", "fp16", True), ("int8", "int32", False)])
def test_split_tail_8_bit_inputs_compiled_ahead_and_correct(tmp_path, monkeypatch, dtype, dtype_c, bias):
    # K tiles of 128 (8-bit inputs): 32 of them, 4 slices; 3 stages, so that an int32 C's tile fits beside them
    configs = [replace(config, BLOCK_SIZE_K=128, num_stages=3) for config in SPLIT_TAIL_CONFIGS[:2]]
    p = replace(problem(5120, 5120, 4096, dtype, False, True, dtype_c), bias=bias)
    ahead = check_compiled_ahead(tmp_path, p, configs)
    assert set(ahead.values()) == {"ok"}, ahead
    assert _split_twice(monkeypatch, tmp_path, p, configs, "TAIL_SPLIT") == 2


# Tiles with a side of 192 = 128 + 64, each computed as up to four products: both sides, the rows only, the columns
# only with the output stored in halves, and C^T's
COMPOUND_CONFIGS = [
    Config(192, 192, 64, 8, 1, 8, 3, PERSISTENT_TMA=1),
    Config(192, 128, 64, 4, 1, 8, 4, PERSISTENT_TMA=1),
    Config(128, 192, 64, 1, 1, 8, 4, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1),
    Config(192, 192, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, SWAP_AB=1),
]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K,col_a,col_b", [
    (3072, 1536, 4096, False, False),  # 128 tiles of 192x192: one wave
    *SIZES[1:4],
])
def test_compound_tiles_compiled_ahead_and_correct(tmp_path, dtype, M, N, K, col_a, col_b):
    ahead = check_compiled_ahead(tmp_path, problem(M, N, K, dtype, col_a, col_b), COMPOUND_CONFIGS)
    assert set(ahead.values()) == {"ok"}, ahead


@pytest.mark.parametrize("dtype,dtype_c,bias", [("fp8", "fp16", True), ("int8", "int32", False)])
def test_compound_tiles_8_bit_inputs_compiled_ahead_and_correct(tmp_path, dtype, dtype_c, bias):
    # K tiles of 128 (8-bit inputs); 2 stages and the output in halves, so that an int32 C's tile fits beside them
    configs = [Config(192, 192, 128, 8, 1, 8, 2, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1),
               Config(128, 192, 128, 1, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1)]
    p = replace(problem(3000, 1600, 2048, dtype, False, True, dtype_c), bias=bias)
    ahead = check_compiled_ahead(tmp_path, p, configs)
    assert set(ahead.values()) == {"ok"}, ahead


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K,col_a,col_b", SIZES)
def test_num_ctas_configs_compiled_ahead_and_correct(tmp_path, dtype, M, N, K, col_a, col_b):
    p = problem(M, N, K, dtype, col_a, col_b)
    kept = [config for config in CLUSTER_CONFIGS if RULES_BY_NAME["tma_clusters"].keep(p, config, INTERPRETER_PROFILE)]
    assert len(kept) == (1 if col_a else 2)  # a column-major A leaves the plain config alone
    ahead = check_compiled_ahead(tmp_path, p, kept)
    assert set(ahead.values()) == {"ok"}, ahead


def test_a_tma_config_in_clusters_runs_one_program_per_cluster(tmp_path, monkeypatch):
    config = CLUSTER_CONFIGS[1]
    module = load_module(write_module(problem(4096, 4096, 4096), [config], tmp_path))  # 1024 tiles
    spy = spied(monkeypatch, module, config)
    assert family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cuda") <= module.PROBLEM.tolerance
    assert spy.launches[0][1]["num_ctas"] == 2
    assert spy.grids == [(torch.cuda.get_device_properties(0).multi_processor_count // 2,)]


@pytest.mark.parametrize("dtype,dtype_c", [("fp8", "fp16"), ("bf8", "bf16"), ("fp8", "fp32"), ("int8", "int32")])
@pytest.mark.parametrize("M,N,K,col_b,bias", [
    (4096, 4096, 4096, True, False),  # torch._scaled_mm's layout: B column-major, K-major for wgmma
    (4096, 4096, 4096, False, True),  # a row-major 8-bit B: Triton re-lays it out K-major
    (1000, 1001, 1000, True, True),  # odd N: C through pointers; K rows of 1000 bytes: padded A and B copies
])
def test_8_bit_inputs_compiled_ahead_and_correct(tmp_path, dtype, dtype_c, M, N, K, col_b, bias):
    check_compiled_ahead(tmp_path, replace(problem(M, N, K, dtype, False, col_b, dtype_c), bias=bias), CONFIGS_8BIT)


def test_unaligned_c_has_no_region_written_outside_its_view(tmp_path):
    """A sliced C whose rows are not 16-byte aligned: pointer stores fill it and leave the storage around it alone."""
    M, N, K = 4095, 4097, 1023
    module = load_module(write_module(problem(M, N, K), CONFIGS, tmp_path))
    a, b, _ = family.make_operands(module.PROBLEM, "cuda", seed=3)
    storage = torch.full((M + 300, N + 301), 7.0, dtype=torch.float16, device="cuda")
    c = storage[1:M + 1, 3:N + 3]
    outside = torch.ones_like(storage, dtype=torch.bool)
    outside[1:M + 1, 3:N + 3] = False
    for name, launcher in module.LAUNCHERS.items():
        family.poison(c)
        launcher(a, b, c)
        assert family.relative_error(c, a, b) <= module.PROBLEM.tolerance, name
        assert bool((storage[outside] == 7.0).all()), name


def test_bias_on_gpu(tmp_path):
    p = replace(problem(1000, 1024, 512), bias=True)
    module = load_module(write_module(p, CONFIGS[:2], tmp_path))
    for launcher in module.LAUNCHERS.values():
        a, b, c, bias = family.make_operands(module.PROBLEM, "cuda", seed=1)
        c.fill_(float("nan"))
        launcher(a, b, c, bias)
        assert family.relative_error(c, a, b, bias) <= module.PROBLEM.tolerance


def _kernels_per_launch(module, launches: int = 6) -> tuple:
    """Time a one-config module's launches with cupti: (kernels per launch, per-launch totals, the GEMM's rows)."""
    from tune_gemm.measure.backends import CuptiTimer
    from tune_gemm.measure.schema import per_launch_totals

    (name, launcher), = module.LAUNCHERS.items()
    a, b, c = family.make_operands(module.PROBLEM, "cuda")
    rows = CuptiTimer().measure(name, lambda i: launcher(a, b, c), launches)
    gemm_only = [r.duration_ns for r in rows if r.kernel_name.startswith("matmul_kernel_")]
    return len(rows) / launches, per_launch_totals(rows, name), gemm_only


def test_cupti_counts_the_padding_copies(tmp_path):
    """A launch that pads odd rows of A and B runs copy kernels too: the timer must count them, not just the GEMM."""
    module = load_module(write_module(problem(4095, 4097, 1023), CONFIGS[:1], tmp_path))
    kernels_per_launch, totals, gemm_only = _kernels_per_launch(module)
    assert kernels_per_launch > 1  # the GEMM plus its copies
    assert len(totals) == 6 and all(t.duration_ns > g for t, g in zip(totals, gemm_only))


def test_an_unaligned_c_alone_costs_no_copy(tmp_path):
    """A and B addressable (B column-major, K = 4096), C's rows of 4097 halves not: the launch is the GEMM alone,
    C stored in place through pointers."""
    module = load_module(write_module(problem(4096, 4097, 4096, col_b=True), CONFIGS[:1], tmp_path))
    kernels_per_launch, _, _ = _kernels_per_launch(module)
    assert kernels_per_launch == 1
