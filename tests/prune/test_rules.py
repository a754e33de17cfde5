"""tune_gemm.space.rules and prune.prune: every rule bites on some (problem, config) and spares another, with limits
taken from the DeviceProfile; prune() accounts for every config of the space."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from helpers import problem

from tune_gemm.core.config import (
    Config,
    FusedReduce,
    NarrowEdge,
    StreamK,
)
from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.core.dtypes import DTYPES
from tune_gemm.space.prune import FULL_SPACE, PruneResult, RangeSpace, prune
from tune_gemm.space.rules import (
    DOT_MIN_ROWS,
    FAMILY_RULES,
    RULES,
    RULES_BY_NAME,
    Rule,
    cdiv,
    edge_columns,
    edge_slices,
    even_k,
    k_iterations,
    operand_row_bytes,
    output_tiles,
    shared_memory_bytes,
    tail_slices,
    warp_group_warps,
    without_instruction,
)

# A second, deliberately different GPU: AMD-like wave size and registers, less LDS, few CUs, larger
# instruction tile and a deeper instruction K (64 bytes -> 32 fp16 elements).
SMALL_GPU = replace(
    INTERPRETER_PROFILE, name="small test GPU", vendor="amd", max_shared_bytes=65_536, sm_count=8, warp_size=64,
    l2_bytes=4 * 1024 * 1024, memory_bytes=16 * 1024**3, max_registers_per_thread=512, instr_m=32, instr_n=32,
    instr_k_bytes=64, tma=False, clusters=False,
)

BIG = problem(4096, 4096, 4096)
SKINNY = problem(16, 4096, 4096)
ODD = problem(33, 17, 40)
TINY_M = problem(8, 4096, 4096)
DECODE = problem(1, 4096, 4096, col_b=True)
LONG_DECODE = problem(1, 4096, 14336, col_b=True)  # an MLP's down-projection of one token
MID = problem(1024, 1024, 1024)

IP = INTERPRETER_PROFILE


def C(bm, bn, bk, gm=1, sk=1, nw=4, ns=2) -> Config:
    return Config(bm, bn, bk, gm, sk, nw, ns)


# (rule, problem, config, device, expected keep) - at least one False and one True per rule.
CASES = [
    # matrix_instruction: BM >= instr_m, BN >= instr_n, BK >= instr_k, BM*BN >= warps*instr_m*instr_n
    ("matrix_instruction", BIG, C(16, 16, 16, nw=8), IP, False),  # 256 < 8*16*8
    ("matrix_instruction", BIG, C(16, 16, 16, nw=4), IP, False),  # 256 < 512
    ("matrix_instruction", BIG, C(16, 16, 16, nw=2), IP, True),  # 256 == 2*16*8
    ("matrix_instruction", BIG, C(128, 128, 64, nw=8), IP, True),
    ("matrix_instruction", BIG, C(16, 16, 16, nw=1), SMALL_GPU, False),  # BM 16 < instr_m 32
    ("matrix_instruction", BIG, C(32, 32, 16, nw=1), SMALL_GPU, False),  # BK 16 < 64 bytes / 2
    ("matrix_instruction", BIG, C(32, 32, 32, nw=1), SMALL_GPU, True),
    ("matrix_instruction", problem(4096, 4096, 4096, "fp32"), C(32, 32, 16, nw=1), SMALL_GPU, True),  # 64/4 = 16
    # fewer rows than an instruction (multiplied without one): only for M < 16, no taller than M's next power of two,
    # BK*BN >= an 8-byte vector per thread
    ("matrix_instruction", DECODE, C(1, 4, 512, nw=4), IP, True),  # 2048 >= 128 threads * 4
    ("matrix_instruction", DECODE, C(1, 1, 512, nw=4), IP, True),  # 512 = 128 * 4
    ("matrix_instruction", DECODE, C(1, 1, 256, nw=4), IP, False),  # 256 < 512
    ("matrix_instruction", DECODE, C(1, 1, 4096, nw=32), IP, True),  # 4096 = 1024 threads * 4
    ("matrix_instruction", DECODE, C(1, 1, 2048, nw=32), IP, False),  # 2048 < 4096
    ("matrix_instruction", DECODE, C(2, 4, 512, nw=4), IP, False),  # 2 rows for M = 1
    ("matrix_instruction", problem(3, 4096, 4096), C(4, 4, 512, nw=4), IP, True),
    ("matrix_instruction", problem(3, 4096, 4096), C(4, 2, 128, nw=4), IP, False),  # 256 < 128 threads * 4
    ("matrix_instruction", problem(3, 4096, 4096, "fp32"), C(4, 2, 128, nw=4), IP, True),  # 256 = 128 * 2
    ("matrix_instruction", SKINNY, C(8, 16, 256, nw=1), IP, False),  # M = 16: an instruction's rows
    ("matrix_instruction", SKINNY, C(16, 16, 16, nw=2), IP, True),
    # k_tiling: SPLIT_K*BLOCK_K divides K when 16 | K, else masked loop with SPLIT_K=1 and BK < K + 16 ...
    ("k_tiling", BIG, C(128, 128, 64, sk=4), IP, True),  # 4096 % 256 == 0
    ("k_tiling", BIG, C(128, 128, 256, sk=16), IP, True),  # 4096 % 4096 == 0
    ("k_tiling", problem(4096, 4096, 2048), C(128, 128, 256, sk=16), IP, False),  # 2048 % 4096 != 0
    ("k_tiling", problem(4096, 4096, 4000), C(128, 128, 32, sk=5), IP, True),  # 4000 % 160 == 0
    # ... or, without a split, a masked last K step padding K by at most a sixteenth
    ("k_tiling", problem(4096, 4096, 4000), C(128, 128, 64), IP, True),  # 4000 -> 4032
    ("k_tiling", problem(4096, 4096, 4000), C(128, 128, 256), IP, True),  # 4000 -> 4096: 96 <= 250
    ("k_tiling", problem(4096, 4096, 4000), C(128, 128, 64, sk=2), IP, False),  # 4000 % 128 == 32, split
    ("k_tiling", problem(1000, 3000, 2000), C(128, 128, 128), IP, True),  # 2000 -> 2048: 48 <= 125
    ("k_tiling", problem(4096, 4096, 3072), C(128, 128, 2048), IP, False),  # 3072 -> 4096: 1024 > 192
    ("k_tiling", problem(2048, 2048, 48), C(128, 128, 64), IP, False),  # 48 -> 64: 16 > 3
    ("k_tiling", problem(16, 16, 16), C(16, 16, 32), IP, False),  # 16 -> 32
    ("k_tiling", ODD, C(16, 16, 32), IP, True),  # 40 % 16 != 0: masked, 32 < 56
    ("k_tiling", ODD, C(16, 16, 64), IP, False),  # 64 >= 56
    ("k_tiling", ODD, C(16, 16, 16, sk=2), IP, False),  # no split with a masked K loop
    # fewer rows than an instruction, without a split: the masked loop at any K
    ("k_tiling", LONG_DECODE, C(1, 1, 4096, nw=32), IP, True),  # 14336 = 3.5 * 4096
    ("k_tiling", LONG_DECODE, C(16, 16, 4096), IP, False),
    ("k_tiling", LONG_DECODE, C(1, 1, 4096, sk=2, nw=32), IP, False),
    # split_k: SPLIT_K > 1 only when the output tiles are fewer than the SMs
    ("split_k", BIG, C(128, 128, 64, sk=2), IP, False),  # 1024 tiles >= 132
    ("split_k", BIG, C(128, 128, 64, sk=1), IP, True),
    ("split_k", SKINNY, C(16, 256, 64, sk=4), IP, True),  # 16 tiles < 132
    ("split_k", SKINNY, C(16, 256, 64, sk=4), SMALL_GPU, False),  # 16 tiles >= 8
    ("split_k", SKINNY, C(16, 32, 64, sk=4), IP, True),  # 1*128 = 128 tiles < 132
    ("split_k", SKINNY, C(16, 16, 64, sk=4), IP, False),  # 1*256 = 256 tiles >= 132
    # group_m: GROUP_M == 1 where there is one row of tiles (the smallest of the values that group every row is
    # prune's part: test_prune_keeps_one_group_of_every_row)
    ("group_m", SKINNY, C(16, 64, 64, gm=4), IP, False),  # one row of tiles
    ("group_m", SKINNY, C(16, 64, 64, gm=1), IP, True),
    ("group_m", problem(128, 4096, 4096), C(128, 128, 64, gm=4), IP, False),  # one row of 128
    ("group_m", BIG, C(128, 128, 64, gm=8), IP, True),  # 8 of 32 rows
    ("group_m", BIG, C(256, 128, 64, gm=16), IP, True),  # all 16 rows: the tiles column by column
    # shared_memory: num_stages*(BM*BK + BK*BN)*bytes <= device.max_shared_bytes
    ("shared_memory", BIG, C(256, 256, 256, ns=1), IP, False),  # 262144 > 232448
    ("shared_memory", BIG, C(128, 128, 64, ns=3), IP, True),  # 98304
    ("shared_memory", BIG, C(128, 128, 64, ns=3), SMALL_GPU, False),  # 98304 > 65536
    ("shared_memory", BIG, C(128, 128, 64, ns=2), SMALL_GPU, True),  # 65536 == 65536
    ("shared_memory", problem(4096, 4096, 4096, "fp32"), C(128, 128, 64, ns=2), SMALL_GPU, False),  # 4 bytes
    # registers: BM*BN / (warps*warp_size) <= (max_registers_per_thread + 1) // 2
    ("registers", BIG, C(256, 256, 64, nw=4), IP, False),  # 512 > 128
    ("registers", BIG, C(128, 128, 64, nw=8), IP, True),  # 64
    ("registers", BIG, C(128, 128, 64, nw=4), IP, True),  # 128: the tutorial's classic config stays
    ("registers", BIG, C(256, 128, 64, nw=4), IP, False),  # 256 > 128
    ("registers", BIG, C(256, 256, 64, nw=4), SMALL_GPU, True),  # 65536 / 256 = 256 <= 256
    ("registers", BIG, C(256, 256, 64, nw=2), SMALL_GPU, False),  # 512 > 256
    # without an instruction every product stays apart until after the K loop: BM*BK*BN, a quarter of the registers
    ("registers", DECODE, C(1, 8, 1024, nw=4), IP, True),  # 64 <= 64
    ("registers", DECODE, C(1, 16, 1024, nw=4), IP, False),  # 128 > 64
    ("registers", DECODE, C(2, 64, 256, nw=8), IP, False),  # 128 > 64
    # block_size: BM <= max(instr_m, 16, 2M), BN <= max(instr_n, 16, 2N): 16, Triton's narrowest dot, stays
    ("block_size", SKINNY, C(64, 64, 64), IP, False),  # 64 > 32
    ("block_size", SKINNY, C(32, 256, 64), IP, True),
    ("block_size", ODD, C(64, 32, 16), IP, True),  # 64 <= 66, 32 <= 34
    ("block_size", ODD, C(128, 16, 16), IP, False),  # 128 > 66
    ("block_size", ODD, C(16, 64, 16), IP, False),  # 64 > 34
    ("block_size", TINY_M, C(32, 64, 64), IP, False),  # 32 > max(16, 16)
    ("block_size", TINY_M, C(32, 64, 64), SMALL_GPU, True),  # 32 <= max(32, 16)
    ("block_size", problem(12096, 7, 10040), C(128, 16, 64), IP, True),  # 16 > 2 * 7: the narrowest dot
    ("block_size", problem(12096, 7, 10040), C(128, 32, 64), IP, False),
    # large_gemm: when 128x128 tiles fill the GPU, BM,BN >= 64, BK >= 32 (or the largest power of two dividing K),
    # warps >= 4
    ("large_gemm", problem(8928, 19529, 7), C(128, 128, 16, nw=4), IP, True),  # K = 7: 16 >= 1
    ("large_gemm", problem(4096, 4096, 48), C(128, 128, 16, nw=4), IP, True),  # 48 = 16 * 3
    ("large_gemm", problem(4096, 4096, 2000), C(128, 128, 16, nw=4), IP, True),  # 2000 = 16 * 125
    ("large_gemm", problem(4096, 4096, 4000), C(128, 128, 16, nw=4), IP, False),  # 4000 = 32 * 125: 16 < 32
    ("large_gemm", BIG, C(32, 128, 64, nw=4), IP, False),
    ("large_gemm", BIG, C(128, 128, 16, nw=4), IP, False),
    ("large_gemm", BIG, C(128, 128, 64, nw=2), IP, False),
    ("large_gemm", BIG, C(64, 64, 32, nw=4), IP, True),
    ("large_gemm", MID, C(32, 32, 16, nw=1), IP, True),  # 64 tiles of 128x128 < 132 SMs: rule off
    ("large_gemm", MID, C(32, 32, 16, nw=1), SMALL_GPU, False),  # 64 >= 8 SMs: rule on
    ("large_gemm", SKINNY, C(16, 16, 16, nw=1), IP, True),
    # num_stages: num_stages <= K-loop iterations + 1
    ("num_stages", BIG, C(128, 128, 256, sk=16, ns=3), IP, False),  # 1 iteration
    ("num_stages", BIG, C(128, 128, 256, sk=16, ns=2), IP, True),
    ("num_stages", BIG, C(128, 128, 64, ns=5), IP, True),  # 64 iterations
    ("num_stages", ODD, C(16, 16, 16, ns=4), IP, True),  # 3 iterations
    ("num_stages", ODD, C(16, 16, 16, ns=5), IP, False),
    # clusters: num_ctas > 1 only on a GPU that launches thread-block clusters
    ("clusters", BIG, replace(C(128, 128, 64), num_ctas=2), SMALL_GPU, False),
    ("clusters", BIG, replace(C(128, 128, 64), num_ctas=2), IP, True),
    ("clusters", BIG, C(128, 128, 64), SMALL_GPU, True),
    # static_shape: tiles*SPLIT_K <= SMs (132) and at most 8 K iterations; a config without the knob always
    ("static_shape", problem(16, 16, 16), replace(C(16, 16, 16), STATIC_SHAPE=1), IP, True),
    ("static_shape", MID, replace(C(64, 128, 128), STATIC_SHAPE=1), IP, True),  # 128 tiles, 8 iterations
    ("static_shape", MID, replace(C(64, 128, 64), STATIC_SHAPE=1), IP, False),  # 16 iterations
    ("static_shape", SKINNY, replace(C(16, 64, 256, sk=2), STATIC_SHAPE=1), IP, True),  # 64 tiles x 2 slices
    ("static_shape", SKINNY, replace(C(16, 64, 256, sk=4), STATIC_SHAPE=1), IP, False),  # 256 programs > 132 SMs
    ("static_shape", BIG, replace(C(128, 128, 64), STATIC_SHAPE=1), IP, False),
    ("static_shape", BIG, C(128, 128, 64), IP, True),
    # and any tile without an instruction: 4096 programs of 4 iterations
    ("static_shape", LONG_DECODE, replace(C(1, 1, 4096, nw=32), STATIC_SHAPE=1), IP, True),
    ("static_shape", LONG_DECODE, replace(C(16, 16, 4096), STATIC_SHAPE=1), IP, False),
    # fused_reduce: only a split K has partials to sum
    ("fused_reduce", SKINNY, replace(C(16, 64, 256, sk=4), FUSED_REDUCE=1), IP, True),
    ("fused_reduce", SKINNY, replace(C(16, 64, 256), FUSED_REDUCE=1), IP, False),
    ("fused_reduce", SKINNY, C(16, 64, 256), IP, True),
    ("static_shape_plain", MID, replace(C(64, 128, 128), STATIC_SHAPE=1, PERSISTENT_TMA=1), IP, False),
    ("static_shape_plain", MID, replace(C(64, 128, 128), STATIC_SHAPE=1), IP, True),
    ("static_shape_plain", MID, replace(C(64, 128, 128), PERSISTENT_TMA=1), IP, True),
    # warp_group_tiles: the warp-group kernel's three consumer warp groups, for 192-row tiles of compound width only,
    # and its 96-wide tiles; its four, for 256-row tiles of compound width up to 160
    ("warp_group_tiles", BIG, C(192, 192, 32, nw=12), IP, True),
    ("warp_group_tiles", BIG, C(192, 96, 64, nw=12), IP, True),
    ("warp_group_tiles", BIG, C(192, 256, 32, nw=12), IP, False),  # a power-of-two width: no column parts
    ("warp_group_tiles", BIG, C(128, 192, 32, nw=12), IP, False),  # two warp groups' rows
    ("warp_group_tiles", BIG, C(128, 96, 64, nw=8), IP, False),
    ("warp_group_tiles", BIG, C(128, 192, 32, nw=8), IP, True),
    ("warp_group_tiles", BIG, C(256, 160, 32, nw=16), IP, True),
    ("warp_group_tiles", BIG, C(256, 192, 32, nw=16), IP, False),  # its accumulators spill
    ("warp_group_tiles", BIG, C(256, 96, 64, nw=16), IP, False),  # 96 wide: 192 rows only
    ("warp_group_tiles", BIG, C(256, 256, 64, nw=16), IP, False),  # a power-of-two width: no column parts
    ("warp_group_tiles", BIG, C(128, 160, 32, nw=16), IP, False),  # two warp groups' rows
    ("warp_group_tiles", BIG, C(128, 160, 32, nw=8), IP, True),
    # wider than 256: the warp-group kernel's two consumer warp groups alone (256 + 64, 256 + 128)
    ("warp_group_tiles", BIG, C(128, 320, 32, nw=8), IP, True),
    ("warp_group_tiles", BIG, C(128, 384, 32, nw=8), IP, True),
    ("warp_group_tiles", BIG, C(128, 512, 32, nw=8), IP, False),  # 256 accumulator registers a thread
    ("warp_group_tiles", BIG, C(192, 320, 32, nw=12), IP, False),  # three groups' registers
    ("warp_group_tiles", BIG, C(256, 320, 32, nw=16), IP, False),
    ("warp_group_tiles", BIG, C(128, 320, 32, nw=4), IP, False),  # 4 warps: no warp group per 64 rows
]


def _id(case) -> str:
    name, p, config, device, expected = case
    return f"{name}-{p.M}x{p.N}x{p.K}{p.dtype_a.name}-{config}-{device.vendor}-{'keep' if expected else 'bite'}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_rule_case(case):
    name, p, config, device, expected = case
    assert RULES_BY_NAME[name].keep(p, config, device) is expected


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_every_rule_has_a_biting_and_a_sparing_case(rule):
    outcomes = {expected for name, _, _, _, expected in CASES if name == rule.name}
    assert outcomes == {True, False}


def test_rules_by_name_matches_rules():
    assert list(RULES_BY_NAME) == [r.name for r in RULES + FAMILY_RULES]
    assert [r.name for r in RULES] == [
        "warp_group_tiles", "fused_reduce", "matrix_instruction", "k_tiling", "split_k", "group_m", "shared_memory",
        "registers", "block_size", "large_gemm", "num_stages", "clusters", "static_shape",
    ]
    assert [r.name for r in FAMILY_RULES] == ["warp_groups", "compound_tile", "tma_hardware", "static_shape_plain",
                                             "tma_tile", "tma_split_k", "epilogue_subtile", "tma_shared_memory", "stream_k",
                                             "warp_specialize_warps", "cluster_epilogue_subtile", "swap_ab",
                                             "align_rows", "narrow_edge", "tma_clusters"]
    assert all(r.description for r in RULES + FAMILY_RULES)


TMA = {"PERSISTENT_TMA": 1}


@pytest.mark.parametrize("name, config, kept", [
    ("tma_hardware", Config(128, 128, 64, **TMA), True),
    ("tma_tile", Config(128, 128, 64, num_warps=8, num_stages=3, **TMA), True),
    # the family has no reduction kernel (Config refuses such a config; the space builds it without checks)
    ("tma_tile", Config(128, 128, 64, SPLIT_K=2).with_family(TMA), False),
    ("tma_tile", Config(128, 128, 64, SPLIT_K=2, FUSED_REDUCE=1, **TMA), True),  # its slices sum their partials
    ("tma_tile", Config(32, 128, 64, **TMA), False),  # under a warpgroup's 64 rows
    ("tma_tile", Config(128, 32, 64, **TMA), False),
    ("tma_tile", Config(128, 128, 32, **TMA), False),  # 64-byte K rows: below the 128-byte swizzle
    ("tma_tile", Config(128, 128, 64, num_warps=2, **TMA), False),  # half a warpgroup
    ("tma_tile", Config(128, 128, 64, num_stages=1, **TMA), False),  # nothing to overlap
    ("tma_tile", Config(32, 32, 16, SPLIT_K=4), True),  # the plain family is not its business
    ("epilogue_subtile", Config(128, 128, 64, EPILOGUE_SUBTILE=1, **TMA), True),
    ("epilogue_subtile", Config(128, 64, 64, EPILOGUE_SUBTILE=1, **TMA), False),
    # 4 stages of (128x64 + 64x256) fp16 = 192 KiB, plus the 64 KiB output tile: over 227 KiB, unless halved
    ("tma_shared_memory", Config(128, 256, 64, num_warps=8, num_stages=4, **TMA), False),
    ("tma_shared_memory", Config(128, 256, 64, num_warps=8, num_stages=4, EPILOGUE_SUBTILE=1, **TMA), True),
    ("tma_shared_memory", Config(128, 256, 64, num_warps=8, num_stages=4), True),  # plain: no output tile staged
    # a subtiled epilogue in clusters failed to compile on the H100
    ("cluster_epilogue_subtile", Config(128, 128, 64, EPILOGUE_SUBTILE=1, num_ctas=2, **TMA), False),
    ("cluster_epilogue_subtile", Config(128, 128, 64, EPILOGUE_SUBTILE=1, **TMA), True),
    ("cluster_epilogue_subtile", Config(128, 128, 64, num_ctas=2, **TMA), True),
])
def test_family_rules(name, config, kept):
    assert RULES_BY_NAME[name].keep(BIG, config, IP) is kept


WS = {"PERSISTENT_TMA": 1, "WARP_SPECIALIZE": 1}


@pytest.mark.parametrize("size, config, kept", [
    # 4097 fp16 columns: C's rows are not 16-byte aligned, the kernel stores C through pointers
    ((4095, 4097, 1023), Config(128, 128, 64, num_warps=4, **WS), False),  # deadlocked the H100
    ((4095, 4097, 1023), Config(128, 128, 64, num_warps=4, EPILOGUE_SUBTILE=1, **WS), False),  # failed to compile
    ((4095, 4097, 1023), Config(128, 128, 64, num_warps=8, **WS), True),  # ran
    ((4095, 4097, 1023), Config(128, 128, 64, num_warps=4, **TMA), True),  # no warp specialization
    ((4000, 4096, 1024), Config(64, 128, 64, num_warps=4, **WS), True),  # C through its descriptor
    ((4000, 4096, 1024), Config(64, 64, 128, num_warps=4, EPILOGUE_SUBTILE=1, **WS), True),
    # tiles past 64x128 fail Triton's warp-specialization pass with 4 warps (3.6 to 3.9, sm_90a)
    ((4000, 4096, 1024), Config(128, 64, 64, num_warps=4, **WS), False),
    ((4000, 4096, 1024), Config(64, 256, 64, num_warps=4, EPILOGUE_SUBTILE=1, **WS), False),
    ((4000, 4096, 1024), Config(128, 128, 64, num_warps=4, **WS), False),
    ((4000, 4096, 1024), Config(128, 256, 64, num_warps=8, **WS), True),  # 8 warps compile
])
def test_warp_specialization_with_4_warps_only_with_a_descriptor_stored_c_and_a_small_tile(size, config, kept):
    assert RULES_BY_NAME["warp_specialize_warps"].keep(problem(*size), config, IP) is kept


STK = {"PERSISTENT_TMA": 1, "STREAM_K": 1}


@pytest.mark.parametrize("size, block, kept", [
    ((4096, 4096, 4096), (128, 256), True),  # 512 tiles on 132 SMs: 4 waves, the last 12% idle
    ((8448, 512, 4096), (128, 256), False),  # 264 tiles: exactly 2 waves, nothing to share out
    ((1024, 1024, 1024), (128, 256), False),  # 32 tiles: less than one wave (split-K's ground)
    ((8192, 8192, 8192), (64, 64), False),  # 16384 tiles: 125 waves, the last one's idle SMs are 0.7% of the time
    ((4096, 4096, 64), (128, 256), False),  # one K iteration per tile: nothing to split
])
def test_stream_k_only_where_a_last_wave_is_partly_idle(size, block, kept):
    config = Config(*block, 64, **STK)
    assert RULES_BY_NAME["stream_k"].keep(problem(*size), config, IP) is kept
    assert RULES_BY_NAME["stream_k"].keep(problem(*size), replace(config, STREAM_K=0), IP)


TAIL = {"PERSISTENT_TMA": 1, "STREAM_K": StreamK.SPLIT_TAIL}


@pytest.mark.parametrize("size, tile, knobs, slices", [
    ((5120, 5120, 4096), (128, 256), {}, 8),  # 800 tiles: 8 past six waves of 132; 64 K tiles: 8 slices of 8
    ((5120, 5120, 4096), (128, 128), {}, 8),  # 1600 tiles: 16 past twelve waves, 132 // 16 slices
    ((5120, 5120, 2048), (128, 256), {}, 4),  # 32 K tiles: 4 slices of 8
    ((5120, 5120, 1024), (128, 256), {}, 2),  # 16 K tiles: 2 slices, too few to try
    ((5120, 2560, 4096), (128, 256), {}, 8),  # 400 tiles: 4 past three waves; 132 // 4 capped by the K tiles
    ((4096, 5120, 4096), (128, 256), {}, 1),  # 640 tiles: 112 past four waves, one slice each
    ((4096, 11008, 4096), (128, 256), {}, 2),  # 1376 tiles: 56 past ten waves
    ((8448, 512, 4096), (128, 256), {}, 1),  # 264 tiles: exactly two waves
    ((1024, 1024, 4096), (128, 256), {}, 1),  # 32 tiles: less than a wave
    ((5120, 5120, 4096), (128, 256), {"WARP_SPECIALIZE": 1}, 8),  # not with warp specialization
    ((2560, 5120, 4096), (128, 256), {"SWAP_AB": 1}, 8),  # C^T is 5120x2560: 400 tiles, as above
])
def test_a_split_tail_only_where_the_tiles_past_the_last_wave_take_four_slices_or_more(size, tile, knobs, slices):
    config = replace(Config(*tile, 64, num_warps=8, num_stages=3, **TAIL), **knobs)
    p = problem(*size)
    assert tail_slices(p, config, IP) == slices
    kept = slices >= 4 and not config.WARP_SPECIALIZE
    assert RULES_BY_NAME["stream_k"].keep(p, config, IP) is kept


TMA8 = {"PERSISTENT_TMA": 1, "num_warps": 8, "num_stages": 3}


@pytest.mark.parametrize("size, tile, knobs, kept", [
    # 128 tiles of 192x192, one wave of 132, against two of 128x256 (144 tiles) or 128x128 (288), three of 256x128
    ((3072, 1536, 4096), (192, 192), {}, True),
    ((3072, 1536, 4096), (192, 128), {}, False),  # 192 tiles: two waves, no fewer than 128x128's three are worth
    ((3072, 3072, 4096), (192, 128), {}, True),  # 384 tiles: three waves against 576 of 128x128 (five)
    ((4096, 4096, 4096), (192, 192), {}, False),  # 484 tiles: four waves, as 512 of 128x256
    ((5120, 5120, 4096), (192, 192), {}, False),  # 729 tiles: six waves, 800 of 128x256 seven
    ((1536, 3072, 4096), (192, 192), {"SWAP_AB": 1}, True),  # C^T is 3072x1536
    ((3072, 1536, 4096), (192, 192), {"PERSISTENT_TMA": 0}, False),  # the plain family's blocks are powers of two
    ((3072, 1536, 4096), (192, 192), {"WARP_SPECIALIZE": 1}, False),
    ((3072, 1536, 4096), (192, 192), {"STREAM_K": StreamK.SPLIT_TAIL}, False),
    ((3072, 1536, 4096), (192, 192), {"NARROW_EDGE": 1}, False),
    ((3072, 1536, 4096), (192, 192), {"num_ctas": 2}, False),
    ((3072, 1536, 4096), (192, 192), {"SPLIT_K": 2, "FUSED_REDUCE": 1}, False),
    ((1536, 768, 4096), (96, 96), {}, False),  # 32-row parts: under a warpgroup's 64
    ((1536, 1536, 4096), (192, 96), {}, False),  # 32-column parts: the TMA family's lost
    ((1536, 1536, 4096), (192, 96), {"WARP_GROUPS": 1}, True),  # the warp-group kernel's win there
    ((4096, 4096, 4096), (128, 256), {}, True),  # powers of two: not this rule's
])
def test_compound_tiles_only_where_their_waves_pay_for_their_cost(size, tile, knobs, kept):
    config = replace(Config(*tile, 64, **TMA8), **knobs)
    assert RULES_BY_NAME["compound_tile"].keep(problem(*size), config, IP) is kept


def test_compound_tiles_may_take_nine_sixteenths_of_the_registers():
    # 192x192 with 8 warps: 144 accumulator registers a thread, compiled to 174 for sm_90a without spills
    registers = RULES_BY_NAME["registers"]
    assert registers.keep(BIG, Config(192, 192, 64, **TMA8), IP)
    assert not registers.keep(BIG, Config(192, 192, 64, PERSISTENT_TMA=1, num_warps=4), IP)  # 288
    assert not registers.keep(BIG, Config(192, 256, 64, **TMA8), IP)  # 192
    assert not registers.keep(BIG, Config(256, 256, 64, **TMA8), IP)  # 256: powers of two keep half


def test_tiles_wider_than_any_part_leave_their_registers_to_the_warp_group_rule():
    # 128x320 and 128x384 with 8 warps: 160 and 192 accumulator registers a thread, in the warp-group kernel's
    # consumers (232 registers each); rule warp_group_tiles keeps them for two warp groups only
    registers = RULES_BY_NAME["registers"]
    assert registers.keep(BIG, Config(128, 320, 32, **TMA8), IP)
    assert registers.keep(BIG, Config(128, 384, 32, **TMA8), IP)
    assert not registers.keep(BIG, Config(128, 256, 32, PERSISTENT_TMA=1, num_warps=4), IP)  # 256 a thread: over half


@pytest.mark.parametrize("size, dtype", [((2048, 2048, 48), "fp16"), ((12096, 7, 10040), "fp16"),
                                         ((8928, 19529, 7), "fp16"), ((12000, 2, 1), "fp32")])
def test_sizes_that_kept_no_config_keep_some(size, dtype):
    # each kept no config at all before its rule was mended (k_tiling, block_size, large_gemm): the tuner could not
    # tune it. 1000x3000x2000 and 4096x4096x6000, which kept none either, are
    # test_k_with_few_power_of_two_factors_keeps_deep_k_tiles' sizes
    assert prune(problem(*size, dtype), IP).configs


def _side(rng: random.Random) -> int:
    """A matrix side as users have them: tiny, a multiple of 16 or anything up to 20000."""
    kind = rng.random()
    if kind < 0.3:
        return rng.choice([1, 2, 3, 7, 48, 80, 100, 1000, 2000, 3000, 6000, 12000])
    return 16 * rng.randint(1, 800) if kind < 0.6 else rng.randint(1, 20000)


def test_sizes_of_every_kind_keep_a_config():
    rng = random.Random(11)
    for _ in range(8):
        dtype = rng.choice(["fp16", "bf16", "fp32", "fp8", "int8"])
        size = problem(_side(rng), _side(rng), _side(rng), dtype, col_b=rng.random() < 0.5)
        assert prune(size, IP).configs, size


@pytest.mark.parametrize("size", [(1000, 3000, 2000), (4096, 4096, 6000)])
def test_k_with_few_power_of_two_factors_keeps_deep_k_tiles(size):
    # K = 2000 or 6000 is a multiple of 16 that no K tile of 32 or more divides: before the masked loop was kept
    # for them, both lost every config (BLOCK_K 16 alone divided K, and rule large_gemm removed it)
    result = prune(problem(*size), IP)
    assert any(c.BLOCK_SIZE_K >= 64 and c.PERSISTENT_TMA for c in result.configs)
    assert any(c.BLOCK_SIZE_K >= 64 and not c.PERSISTENT_TMA for c in result.configs)


def test_compound_tiles_survive_pruning_where_they_fill_a_wave():
    kept = prune(problem(3072, 1536, 4096), IP).configs
    compound = {(c.BLOCK_SIZE_M, c.BLOCK_SIZE_N) for c in kept if 192 in (c.BLOCK_SIZE_M, c.BLOCK_SIZE_N)}
    assert (192, 192) in compound and all(c.PERSISTENT_TMA for c in kept if 192 in (c.BLOCK_SIZE_M, c.BLOCK_SIZE_N))
    assert not any(192 in (c.BLOCK_SIZE_M, c.BLOCK_SIZE_N) for c in prune(BIG, IP).configs)


SWAP = {"PERSISTENT_TMA": 1, "SWAP_AB": 1}


SPLIT = {"PERSISTENT_TMA": 1, "FUSED_REDUCE": 1}


@pytest.mark.parametrize("size, tile, split_k, knobs, kept", [
    # 1024x1024 in 64 tiles of 128x128 on 132 SMs: 2 slices fill 128, 4 fill 256 (2 alone would leave 4 idle); 8 are
    # more than fill them (4 would not have left an SM idle)
    ((1024, 1024, 16384), (128, 128), 2, {}, True),
    ((1024, 1024, 16384), (128, 128), 4, {}, True),
    ((1024, 1024, 16384), (128, 128), 8, {}, False),
    ((1024, 1024, 16384), (64, 128), 2, {}, True),  # 128 tiles: 2 slices still fill the SMs a single one leaves
    ((1024, 1024, 16384), (64, 128), 4, {}, False),
    ((1024, 1024, 16384), (128, 128), 1, {"STREAM_K": 1}, True),  # no split: not this rule's business
    ((1024, 1024, 16384), (128, 128), 2, {"STREAM_K": 1}, False),  # other ways of filling SMs: not measured with it
    ((1024, 1000, 16384), (128, 128), 2, {"NARROW_EDGE": 1}, False),
    ((1024, 1024, 16384), (128, 128), 2, {"num_ctas": 2}, False),
    ((1024, 1024, 16384), (128, 128), 2, {"WARP_SPECIALIZE": 1}, False),  # its loop is not warp-specialized
    ((128, 256, 65536), (64, 64), 16, {}, True),  # 8 tiles: 16 slices fill 128 SMs
])
def test_tma_split_k_only_up_to_the_split_that_fills_the_sms(size, tile, split_k, knobs, kept):
    config = Config(*tile, 128, SPLIT_K=split_k, num_warps=8, num_stages=3, **{**SPLIT, **knobs})
    assert RULES_BY_NAME["tma_split_k"].keep(problem(*size), config, IP) is kept
    assert RULES_BY_NAME["tma_split_k"].keep(problem(*size), replace(config, PERSISTENT_TMA=0, STREAM_K=0,
                                                                         NARROW_EDGE=0, WARP_SPECIALIZE=0), IP)


def test_a_small_grid_keeps_tma_split_k_configs_beside_unsplit_ones():
    space = RangeSpace(block_m=(64, 128), block_n=(128,), block_k=(64,), group_m=(1,), split_k=(1, 2, 4, 8),
                       num_warps=(8,), num_stages=(3,), persistent_tma=(0, 1), fused_reduce=(0, 1))
    kept = prune(problem(1024, 1024, 16384), IP, space).configs
    tma = {(c.BLOCK_SIZE_M, c.SPLIT_K) for c in kept if c.PERSISTENT_TMA}
    assert tma == {(64, 1), (64, 2), (128, 1), (128, 2), (128, 4)}
    assert all(c.FUSED_REDUCE for c in kept if c.PERSISTENT_TMA and c.SPLIT_K > 1)
    assert not any(c.SPLIT_K > 1 for c in prune(problem(4096, 4096, 4096), IP, space).configs)  # 1024 tiles


def test_output_tiles_count_the_matrix_the_kernel_computes():
    odd = problem(4095, 4097, 1023)
    assert output_tiles(odd, Config(128, 256, 64)) == 32 * 17
    assert output_tiles(odd, Config(128, 256, 64, **SWAP)) == 33 * 16  # C^T: BLOCK_M along N's 4097


@pytest.mark.parametrize("size, dtype, knobs, kept", [
    ((4095, 4097, 1023), "fp16", {}, True),  # C^T: 33 x 16 = 528 tiles, four waves of 132; C: 32 x 17 = 544
    ((4095, 4097, 1023), "bf16", {}, True),
    ((4097, 4095, 1023), "fp16", {}, False),  # C^T: 32 x 17 tiles, C 33 x 16
    ((4096, 4096, 4096), "fp16", {}, False),  # as many tiles either way: only the layouts would change
    ((4095, 4097, 1023), "fp16", {"num_ctas": 2}, False),  # clusters with a column-major A computed C wrong
    ((4095, 4097, 1023), "fp8", {}, False),  # not measured with 8-bit inputs
    ((8191, 2049, 1023), "fp16", {"GROUP_SIZE_M": 16}, True),  # C^T: 17 x 32 = 544 tiles, C: 64 x 9 = 576
    ((8191, 2049, 1023), "fp16", {"GROUP_SIZE_M": 32}, True),  # all C^T's 17 rows in a group
    ((8191, 96, 1023), "fp16", {"GROUP_SIZE_M": 4}, False),  # group_m on C^T: one row of 128 along N = 96
])
def test_swap_ab_only_where_c_transposed_takes_fewer_tiles(size, dtype, knobs, kept):
    config = Config(128, 256, 128 if dtype == "fp8" else 64, num_warps=8, num_stages=3, **SWAP, **knobs)
    p = problem(*size, dtype, dtype_c="fp16" if dtype == "fp8" else None)
    assert RULES_BY_NAME["swap_ab"].keep(p, config, IP) is kept
    assert RULES_BY_NAME["swap_ab"].keep(p, replace(config, SWAP_AB=0), IP)


def test_swap_ab_not_with_a_bias_nor_in_the_plain_family():
    odd = problem(4095, 4097, 1023)
    config = Config(128, 256, 64, num_warps=8, num_stages=3, **SWAP)
    assert RULES_BY_NAME["swap_ab"].keep(odd, config, IP)
    assert not RULES_BY_NAME["swap_ab"].keep(replace(odd, bias=True), config, IP)  # C^T's columns get no bias
    assert not RULES_BY_NAME["swap_ab"].keep(odd, replace(config, PERSISTENT_TMA=0), IP)


def test_swap_ab_stores_c_through_pointers_so_4_warp_warp_specialization_goes():
    aligned = problem(4000, 4096, 1024)  # C's rows 16-byte aligned, C^T's columns are not rows
    config = Config(64, 128, 64, num_warps=4, **WS)
    assert RULES_BY_NAME["warp_specialize_warps"].keep(aligned, config, IP)
    assert not RULES_BY_NAME["warp_specialize_warps"].keep(aligned, replace(config, SWAP_AB=1), IP)


def test_the_odd_public_shape_keeps_swapped_configs_that_take_fewer_tiles():
    odd = problem(4095, 4097, 1023)
    swapped = [c for c in prune(odd, IP).configs if c.SWAP_AB]
    assert swapped and all(c.PERSISTENT_TMA for c in swapped)
    assert all(output_tiles(odd, c) < output_tiles(odd, replace(c, SWAP_AB=0)) for c in swapped)
    assert Config(128, 256, 64, 16, 1, 8, 4, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1, SWAP_AB=1) in swapped


ALIGN = {"PERSISTENT_TMA": 1, "ALIGN_ROWS": 1}


@pytest.mark.parametrize("size, dtype, col_a, col_b, kept", [
    ((8192, 2056, 4096), "fp16", False, False, True),  # B's rows 4112 bytes: 16-byte aligned, off 128-byte lines
    ((4096, 4096, 4104), "fp16", False, False, True),  # A's rows 8208 bytes
    ((4104, 4096, 4096), "fp16", True, False, True),  # a column-major A is read by its transpose's rows: M
    ((4104, 4096, 4096), "fp16", False, False, False),  # the same sizes row-major: rows of K and N, whole lines
    ((4096, 4096, 4104), "fp16", False, True, True),  # a column-major B's transpose has rows of K
    ((4096, 4096, 4096), "fp16", False, False, False),  # whole lines already: nothing to copy
    ((4095, 4097, 1023), "fp16", False, False, False),  # not 16-byte aligned: copied with or without the knob
    ((4096, 4096, 4112), "fp8", False, True, True),  # 1-byte rows of 4112 bytes: A's, a column-major B's transpose
    ((4096, 4112, 4096), "fp8", False, False, False),  # a row-major 8-bit B is copied K-major, into whole lines
    ((4096, 4104, 4104), "fp8", False, True, False),  # 4104 bytes: not 16-byte aligned, always copied
    ((4096, 4100, 4096), "fp32", False, False, False),  # a row-major fp32 B is copied K-major too (tf32 wgmma)
    ((4096, 4100, 4096), "fp32", False, True, False),  # column-major: rows of K, whole lines
    ((4096, 4096, 4100), "fp32", False, True, True),  # 16,400-byte rows of A and of B's transpose
])
def test_align_rows_only_where_a_row_starts_16_byte_aligned_off_a_line(size, dtype, col_a, col_b, kept):
    config = Config(128, 256, 128 if dtype == "fp8" else 64, num_warps=8, num_stages=3, **ALIGN)
    p = problem(*size, dtype, col_a, col_b, dtype_c="fp16" if dtype == "fp8" else None)
    assert RULES_BY_NAME["align_rows"].keep(p, config, IP) is kept
    assert RULES_BY_NAME["align_rows"].keep(p, replace(config, ALIGN_ROWS=0), IP)
    b_row = (size[2] if col_b else size[1]) * DTYPES[dtype].bytes
    assert operand_row_bytes(p) == ((size[0] if col_a else size[2]) * DTYPES[dtype].bytes,
                                    128 if dtype != "fp16" and not col_b else b_row)


EDGE = {"PERSISTENT_TMA": 1, "NARROW_EDGE": 1}


@pytest.mark.parametrize("size, block_n, knobs, widths", [
    ((8192, 2056, 4096), 256, {}, (16,)),  # 8 columns past 8 whole tiles
    ((8192, 2056, 4096), 128, {}, (16,)),
    ((4096, 4112, 4096), 256, {}, (16,)),
    ((8192, 2200, 4096), 128, {}, (32,)),  # 24 columns past 17 whole tiles
    ((8192, 2200, 4096), 256, {}, (128, 32)),  # 152 columns: rounded up, a whole tile; half a tile, then 24
    ((8192, 2240, 4096), 256, {}, (128, 64)),  # 192 columns: half a tile, then 64
    ((8192, 2241, 4096), 256, {}, ()),  # 193 columns: half a tile, then another half, as wide as a whole one
    ((4096, 4096, 4096), 256, {}, ()),  # whole tiles cover N
    ((4095, 4097, 1023), 256, {}, (16,)),  # one column past 16 whole tiles
    ((4095, 4097, 1023), 256, {"SWAP_AB": 1}, ()),  # C^T's N is 4095: 255 past 15 whole tiles
    ((2056, 8192, 4096), 256, {"SWAP_AB": 1}, (16,)),  # C^T's N is 2056
    ((8192, 2056, 4096), 256, {"STREAM_K": 1}, ()),  # not with stream-K
    ((8192, 2056, 4096), 256, {"num_ctas": 2}, ()),  # nor in clusters
    ((8192, 2056, 4096), 128, {"WARP_SPECIALIZE": 1}, (16,)),
    ((8192, 2056, 4096), 128, {"WARP_SPECIALIZE": 1, "num_warps": 4}, ()),  # fails to compile
])
def test_narrow_edge_only_where_edge_tiles_would_be_narrower_than_a_whole_one(size, block_n, knobs, widths):
    config = Config(128, block_n, 64, num_warps=8, num_stages=3, **EDGE)
    config = replace(config, **knobs)
    p = problem(*size)
    assert RULES_BY_NAME["narrow_edge"].keep(p, config, IP) is bool(widths)
    assert RULES_BY_NAME["narrow_edge"].keep(p, replace(config, NARROW_EDGE=0), IP)
    if not set(knobs) & {"STREAM_K", "num_ctas", "num_warps"}:
        assert edge_columns(p, config) == widths


@pytest.mark.parametrize("size, tile, knobs, kept", [
    ((8192, 2056, 4096), (128, 256, 3), {}, True),  # 16 edge columns beside a tile of 256
    ((8192, 2104, 4096), (128, 256, 3), {}, True),  # 56 columns past: an edge of 64
    ((8192, 2144, 4096), (128, 256, 3), {}, True),  # 96 columns past: an edge of 128, 192 accumulators a thread
    ((8192, 2200, 4096), (128, 128, 4), {}, True),  # 24 columns past: an edge of 32
    ((8192, 2200, 4096), (128, 256, 3), {}, True),  # 152 columns past: edges of 128 and 32, each beside a whole tile
    ((8192, 408, 4096), (128, 256, 3), {}, False),  # the same edges beside one whole tile: apart (kept as 1)
    ((8192, 2056, 4096), (128, 64, 4), {}, True),  # an edge of 16 beside a tile of 64
    ((8192, 2056, 4096), (256, 256, 3), {}, False),  # 256 x 272 accumulators over 256 threads: past 3/4 of 255
    ((8192, 2144, 4096), (128, 256, 3), {"num_warps": 4}, False),  # 128 x 384 over 128 threads
    ((8192, 136, 4096), (128, 128, 4), {}, True),  # one whole tile, and 8 columns past it
    ((8192, 40, 4096), (128, 128, 4), {}, False),  # no whole tile to fuse the edge with (the narrow edge is kept)
    ((2056, 8192, 4096), (128, 256, 3), {"SWAP_AB": 1}, True),  # C^T's N is 2056
    ((8192, 2056, 4096), (128, 256, 4), {}, True),  # 4 x (128 + 256 + 16) x 64 x 2 bytes = 200 KiB of stages
    ((8192, 2104, 4096), (64, 256, 5), {}, False),  # 5 x (64 + 256 + 64) x 64 x 2 bytes = 240 KiB: past 227 KiB
    ((8192, 2056, 4096), (128, 256, 3), {"STREAM_K": 1}, False),  # the narrow edge's own rules hold
])
def test_fused_edge_only_beside_a_whole_tile_with_its_stages_and_accumulators_in_bounds(size, tile, knobs, kept):
    block_m, block_n, stages = tile
    config = replace(Config(block_m, block_n, 64, num_warps=8, num_stages=stages, PERSISTENT_TMA=1,
                            NARROW_EDGE=NarrowEdge.FUSED), **knobs)
    p = problem(*size)
    assert RULES_BY_NAME["narrow_edge"].keep(p, config, IP) is kept
    if size in ((8192, 40, 4096), (8192, 408, 4096)):
        assert RULES_BY_NAME["narrow_edge"].keep(p, replace(config, NARROW_EDGE=1), IP)


@pytest.mark.parametrize("size, tile, knobs, slices", [
    ((4096, 4248, 4096), (256, 128), {}, 8),  # 16 edge tiles (of 32) after 528 whole ones: 132 // 16 slices of 8
    ((4096, 4248, 4096), (128, 128), {}, 4),  # 32 edge tiles: 4 slices of 16 K tiles
    ((4096, 4248, 1024), (256, 128), {}, 4),  # 16 K tiles: no slice under 4 of them
    ((4096, 4248, 448), (256, 128), {}, 1),  # 7 K tiles: fewer than two slices of 4
    ((16384, 1176, 4096), (128, 256), {}, 1),  # 256 edge tiles (128 + 32 wide, 128 rows): more than programs
    ((4096, 4200, 4096), (128, 256), {}, 4),  # 104 past 16 tiles of 256: one edge of 128 over 32 rows
    ((256, 2056, 4096), (128, 256), {}, 9),  # 18 tiles, so 18 programs: 9 slices for 2 edge tiles
    ((2056, 4096, 4096), (128, 256), {"SWAP_AB": 1}, 4),  # C^T: 32 edge tiles of 16 along M
    ((4096, 4096, 4096), (256, 128), {}, 1),  # no edge
])
def test_split_edge_slices_fill_the_programs_and_only_split_edges_are_kept(size, tile, knobs, slices):
    config = replace(Config(*tile, 64, num_warps=8, num_stages=3, PERSISTENT_TMA=1, NARROW_EDGE=NarrowEdge.SPLIT),
                     **knobs)
    p = problem(*size)
    assert edge_slices(p, config, IP) == slices
    assert RULES_BY_NAME["narrow_edge"].keep(p, config, IP) is (slices > 1)


def test_narrow_edge_only_in_the_tma_family_and_kept_by_pruning_beside_its_twin():
    p = problem(8192, 2056, 4096)
    assert not RULES_BY_NAME["narrow_edge"].keep(p, Config(128, 256, 64, num_warps=8, NARROW_EDGE=1), IP)
    kept = set(prune(p, IP).configs)
    narrow = [c for c in kept if c.NARROW_EDGE]
    assert narrow and all(c.PERSISTENT_TMA and edge_columns(p, c) for c in narrow)
    assert {replace(c, NARROW_EDGE=0) for c in narrow} <= kept
    fused = [c for c in narrow if c.NARROW_EDGE == NarrowEdge.FUSED]
    assert fused and {replace(c, NARROW_EDGE=1) for c in fused} <= kept  # each beside its narrow twin


def test_align_rows_only_in_the_tma_family_and_kept_by_pruning_where_it_copies():
    p = problem(8192, 2056, 4096)
    assert not RULES_BY_NAME["align_rows"].keep(p, Config(128, 256, 64, num_warps=8, ALIGN_ROWS=1), IP)
    aligned = [c for c in prune(p, IP).configs if c.ALIGN_ROWS]
    assert aligned and all(c.PERSISTENT_TMA for c in aligned)
    assert {replace(c, ALIGN_ROWS=0) for c in aligned} <= set(prune(p, IP).configs)  # each beside its twin


@pytest.mark.parametrize("dtype,dtype_c,block_k,kept", [
    ("bf16", "bf16", 64, True),
    ("fp32", "fp32", 16, False),  # 64-byte K rows
    ("fp32", "fp32", 32, True),  # tf32
    ("fp8", "fp16", 64, False),  # 64-byte K rows: below the 128-byte swizzle
    ("fp8", "fp16", 128, True),
    ("bf8", "bf16", 256, True),
    ("int8", "int32", 64, False),
    ("int8", "int32", 128, True),
])
def test_tma_family_takes_every_input_type_in_k_rows_of_128_bytes(dtype, dtype_c, block_k, kept):
    config = Config(128, 128, block_k, num_stages=2, **TMA)
    assert RULES_BY_NAME["tma_tile"].keep(problem(4096, 4096, 4096, dtype, col_b=True, dtype_c=dtype_c), config,
                                          IP) is kept


def test_an_8_bit_tma_space_keeps_both_layouts_of_b():
    # wgmma reads 8-bit operands K-major only; Triton re-lays out a row-major B, so no rule removes it
    for col_b in (False, True):
        kept = prune(problem(4096, 4096, 4096, "fp8", col_b=col_b, dtype_c="fp16"), IP).configs
        tma = [c for c in kept if c.PERSISTENT_TMA]
        assert tma and min(c.BLOCK_SIZE_K for c in tma) == 128


@pytest.mark.parametrize("col_a, config, kept", [
    (False, Config(128, 128, 64, num_ctas=2, **TMA), True),
    (False, Config(128, 128, 64, num_ctas=2, **WS), True),
    (True, Config(128, 128, 64, num_ctas=2, **TMA), False),  # computed C wrong on the H100
    (True, Config(128, 128, 64, **TMA), True),
    (True, Config(128, 128, 64, num_ctas=8), True),  # the plain family ran right in clusters of any size
    (False, Config(128, 128, 64, num_ctas=4, **TMA), False),  # wrong, or failed to compile
    (False, Config(128, 256, 64, num_ctas=2, **STK), False),  # failed to compile
])
def test_tma_family_in_clusters_only_as_it_ran_right(col_a, config, kept):
    assert RULES_BY_NAME["tma_clusters"].keep(problem(4096, 4096, 4096, col_a=col_a), config, IP) is kept


def test_clusters_only_where_the_gpu_has_them_and_as_they_ran_right():
    space = RangeSpace(block_m=(64, 128), block_n=(128,), block_k=(64,), group_m=(1, 8), split_k=(1,), num_warps=(4, 8),
                       num_stages=(3,), num_ctas=(1, 2, 4), persistent_tma=(0, 1), epilogue_subtile=(0, 1))
    kept = prune(BIG, IP, space).configs
    assert {(c.num_ctas, c.PERSISTENT_TMA) for c in kept} == {(1, 0), (1, 1), (2, 0), (2, 1), (4, 0)}
    assert any(c.EPILOGUE_SUBTILE for c in kept) and not any(c.EPILOGUE_SUBTILE and c.num_ctas > 1 for c in kept)
    assert prune(BIG, replace(IP, clusters=False), space).configs == [c for c in kept if c.num_ctas == 1]
    column_major_a = prune(problem(4096, 4096, 4096, col_a=True), IP, space).configs
    assert {(c.num_ctas, c.PERSISTENT_TMA) for c in column_major_a} == {(1, 0), (1, 1), (2, 0), (4, 0)}


def test_tma_family_needs_tma_hardware():
    config = Config(128, 128, 64, **TMA)
    assert not RULES_BY_NAME["tma_hardware"].keep(BIG, config, SMALL_GPU)
    assert RULES_BY_NAME["tma_hardware"].keep(BIG, Config(128, 128, 64), SMALL_GPU)
    assert not any(c.PERSISTENT_TMA for c in prune(BIG, SMALL_GPU).configs)


def test_prune_by_tile_equals_checking_every_config():
    # prune() checks RULES once per tile config; the result must equal checking each config of the space
    space = RangeSpace(block_m=(32, 64, 128), block_n=(64, 256), block_k=(32, 64), group_m=(1, 8), split_k=(1, 2),
                       num_warps=(4, 8), num_stages=(1, 4), num_ctas=(1, 2), persistent_tma=(0, 1),
                       warp_specialize=(0, 1), epilogue_subtile=(0, 1), stream_k=(0, 1))
    rules = RULES + FAMILY_RULES
    kept = [c for c in space.configs() if all(rule.keep(BIG, c, IP) for rule in rules)]
    result = prune(BIG, IP, space)
    assert sorted(result.configs) == sorted(kept)
    assert any(c.PERSISTENT_TMA for c in kept) and any(not c.PERSISTENT_TMA for c in kept)
    assert any(c.num_ctas > 1 for c in kept)
    assert len(result.configs) + sum(result.removed_by_rule.values()) == len(space) == 2 ** 7 * 3 * 9


# Same problem and config, two devices, two answers: the limit is the device's, not a constant.
DEVICE_DEPENDENT = [
    ("matrix_instruction", BIG, C(32, 32, 16, nw=1)),
    ("split_k", SKINNY, C(16, 256, 64, sk=4)),
    ("shared_memory", BIG, C(128, 128, 64, ns=3)),
    ("registers", BIG, C(256, 256, 64, nw=4)),
    ("block_size", TINY_M, C(32, 64, 64)),
    ("large_gemm", MID, C(32, 32, 16, nw=1)),
]


@pytest.mark.parametrize("name, p, config", DEVICE_DEPENDENT, ids=[d[0] for d in DEVICE_DEPENDENT])
def test_rule_limit_comes_from_device(name, p, config):
    rule = RULES_BY_NAME[name]
    assert rule.keep(p, config, INTERPRETER_PROFILE) != rule.keep(p, config, SMALL_GPU)


@pytest.mark.parametrize("field, value, name, p, config", [
    ("max_shared_bytes", 98_303, "shared_memory", BIG, C(128, 128, 64, ns=3)),
    ("sm_count", 16, "split_k", SKINNY, C(16, 256, 64, sk=4)),
    ("sm_count", 64, "large_gemm", MID, C(32, 32, 16, nw=1)),
    ("warp_size", 16, "registers", BIG, C(256, 128, 64, nw=8)),
    ("max_registers_per_thread", 127, "registers", BIG, C(128, 128, 64, nw=4)),
    ("instr_m", 32, "matrix_instruction", BIG, C(16, 128, 64, nw=1)),
    ("instr_n", 32, "matrix_instruction", BIG, C(128, 16, 64, nw=1)),
    ("instr_k_bytes", 64, "matrix_instruction", BIG, C(64, 64, 16, nw=1)),
    ("clusters", False, "clusters", BIG, replace(C(128, 128, 64), num_ctas=2)),
])
def test_changing_one_device_field_flips_the_rule(field, value, name, p, config):
    rule = RULES_BY_NAME[name]
    assert rule.keep(p, config, INTERPRETER_PROFILE) is True
    assert rule.keep(p, config, replace(INTERPRETER_PROFILE, **{field: value})) is False


@pytest.mark.parametrize("name, p, config", [
    ("k_tiling", ODD, C(16, 16, 64)),
    ("group_m", SKINNY, C(16, 64, 64, gm=4)),
    ("num_stages", ODD, C(16, 16, 16, ns=5)),
])
def test_device_independent_rules_agree_across_devices(name, p, config):
    rule = RULES_BY_NAME[name]
    assert rule.keep(p, config, INTERPRETER_PROFILE) is False
    assert rule.keep(p, config, SMALL_GPU) is False


# --- helpers --------------------------------------------------------------------------------------------------------


def test_cdiv():
    assert [cdiv(a, 16) for a in (1, 15, 16, 17, 32, 33)] == [1, 1, 1, 2, 2, 3]


def test_output_tiles_k_iterations_even_k():
    assert output_tiles(ODD, C(16, 16, 16)) == 3 * 2
    assert output_tiles(BIG, C(128, 256, 64)) == 32 * 16
    assert k_iterations(BIG, C(128, 128, 64, sk=4)) == 16
    assert k_iterations(ODD, C(16, 16, 32)) == 2
    assert even_k(BIG, C(16, 16, 256, sk=16)) is True
    assert even_k(ODD, C(16, 16, 16)) is False


def test_shared_memory_bytes():
    assert shared_memory_bytes(BIG, C(128, 128, 64, ns=3)) == 3 * (128 * 64 + 64 * 128) * 2
    assert shared_memory_bytes(problem(4096, 4096, 4096, "fp32"), C(64, 32, 16, ns=1)) == (64 * 16 + 16 * 32) * 4


def test_device_instr_k():
    assert INTERPRETER_PROFILE.instr_k(2) == 16
    assert INTERPRETER_PROFILE.instr_k(4) == 8
    assert SMALL_GPU.instr_k(2) == 32
    assert replace(INTERPRETER_PROFILE, instr_k_bytes=1).instr_k(4) == 1


# --- prune() --------------------------------------------------------------------------------------------------------

PRUNE_CASES = [(BIG, IP), (SKINNY, IP), (ODD, IP), (BIG, SMALL_GPU), (SKINNY, SMALL_GPU), (ODD, SMALL_GPU)]


@pytest.fixture(scope="module")
def full_results() -> dict:
    return {(p, d.name): prune(p, d) for p, d in PRUNE_CASES}


@pytest.mark.parametrize("p, device", PRUNE_CASES, ids=[f"{p.M}x{p.N}x{p.K}-{d.vendor}" for p, d in PRUNE_CASES])
def test_prune_counts_add_up(full_results, p, device):
    result = full_results[(p, device.name)]
    assert isinstance(result, PruneResult)
    # 130 kernel-family variants per tile config: plain, TMA with each subset of WS, ES, SWAP_AB and ALIGN_ROWS,
    # each with STREAM_K 0 and SPLIT_TAIL (stream-K itself is opt-in) and NARROW_EDGE 0, APART, FUSED and SPLIT, and
    # TMA with WARP_GROUPS alone; each tile config with and without STATIC_SHAPE and FUSED_REDUCE 0, SLOTS and
    # ATOMIC; six BLOCK_M (192 among them) and ten BLOCK_N (and 96, 160, 320, 384); six num_warps (12 and 16
    # among them); then the tiles shorter than a matrix instruction, plain family alone: four BLOCK_M, eight BLOCK_N,
    # nine BLOCK_K, five num_warps (32 among them), three num_stages
    assert result.space_size == len(FULL_SPACE) == (6 * 10 * 5 * 5 * 5 * 6 * 5 * 2 * 3 * 130
                                                    + 4 * 8 * 9 * 5 * 5 * 5 * 3 * 2 * 3)
    assert list(result.removed_by_rule) == [r.name for r in RULES + FAMILY_RULES]
    assert len(result.configs) + sum(result.removed_by_rule.values()) == result.space_size
    assert len(result.configs) < result.space_size
    assert len(set(result.configs)) == len(result.configs)


@pytest.mark.parametrize("p, device", PRUNE_CASES, ids=[f"{p.M}x{p.N}x{p.K}-{d.vendor}" for p, d in PRUNE_CASES])
def test_prune_kept_configs_pass_every_rule(full_results, p, device):
    for config in full_results[(p, device.name)].configs:
        assert all(rule.keep(p, config, device) for rule in RULES + FAMILY_RULES), config


@pytest.mark.parametrize("p", [BIG, SKINNY, ODD], ids=["4096x4096x4096", "16x4096x4096", "33x17x40"])
def test_prune_keeps_some_configs_on_interpreter(full_results, p):
    assert len(full_results[(p, IP.name)].configs) > 0


# large_gemm must not demand BLOCK_M >= 64 where block_size allows BLOCK_M <= 2*M < 64 (skinny but wide problems).
@pytest.mark.parametrize("p, device", [
    (problem(16, 32000, 4096), IP),  # LLM decode step against a 32000-word vocabulary
    (problem(32000, 16, 4096), IP),
    (problem(16, 8192, 4096), replace(IP, sm_count=46)),  # a 46-SM GPU: N = 8192 is enough
    (problem(16, 14336, 4096), replace(IP, sm_count=108)),  # input_gemm_sizes.yaml's MLP-up decode on 108 SMs
    (SKINNY, SMALL_GPU),
], ids=["16x32000x4096", "32000x16x4096", "16x8192x4096-46SM", "16x14336x4096-108SM", "16x4096x4096-smallgpu"])
def test_prune_leaves_a_config_for_skinny_wide_problems(p, device):
    assert len(prune(p, device).configs) > 0


def test_prune_known_counts_on_interpreter(full_results):
    # README: "4096^3 fp16 on H100: 2173 (982 plain, 1191 TMA); 16x4096x4096: 9308, 642 of them STATIC_SHAPE and
    # 5666 FUSED_REDUCE"
    big = full_results[(BIG, IP.name)]
    assert len([c for c in big.configs if not c.PERSISTENT_TMA]) == 982
    assert len([c for c in big.configs if c.PERSISTENT_TMA]) == 1191
    assert not any(c.STATIC_SHAPE for c in big.configs)  # 4096^3 is not launch-bound
    skinny = full_results[(SKINNY, IP.name)].configs
    assert len(skinny) == 9308  # M = 16: no TMA tile (BLOCK_M >= 64 > 2M)
    assert len([c for c in skinny if c.STATIC_SHAPE]) == 642
    # each split-K config three times, its partials summed by a reduction kernel, in slots or atomically in the GEMM
    splits = len([c for c in skinny if c.SPLIT_K > 1])
    assert len([c for c in skinny if c.FUSED_REDUCE == 1]) == splits // 3 == 2833
    assert len([c for c in skinny if c.FUSED_REDUCE == FusedReduce.ATOMIC]) == splits // 3
    # every SPLIT_K > 1 except where warp_group_tiles or matrix_instruction struck first, in each of the 130 family
    # variants, with and without STATIC_SHAPE, and with each FUSED_REDUCE
    assert big.removed_by_rule["split_k"] == 130 * 2 * 3 * 85_000
    # FUSED_REDUCE 1, 2 with SPLIT_K 1, of the configs warp_group_tiles left: 4 of 6 num_warps with 7 of 10 BLOCK_N
    # (all but 96, 320 and 384), 8 warps also with 2 of 60 tile shapes (128x320, 128x384), 12 warps with 3 (192x96,
    # 192x160, 192x192) and 16 with one (256x160): 174 in 360; of the tiles shorter than an instruction, all
    tiles, short = FULL_SPACE.parts()
    assert big.removed_by_rule["fused_reduce"] == len(tiles) // 5 // 3 * 2 // 60 * 29 + len(short) // 5 // 3 * 2
    assert not any(c.BLOCK_SIZE_M < 16 for c in big.configs + skinny)  # M >= 16 multiplies with an instruction
    assert not any(c.SWAP_AB for c in big.configs)  # a square C^T takes as many tiles as C
    assert not any(c.ALIGN_ROWS for c in big.configs)  # rows of 8192 bytes: whole 128-byte lines
    assert not any(c.NARROW_EDGE for c in big.configs)  # whole tiles cover N = 4096
    assert all(c.SPLIT_K == 1 for c in big.configs)
    assert all(min(c.BLOCK_SIZE_M, c.BLOCK_SIZE_N) >= 64 and c.BLOCK_SIZE_K >= 32 and c.num_warps >= 4
               for c in big.configs)
    odd = full_results[(ODD, IP.name)]
    assert all(c.SPLIT_K == 1 and c.BLOCK_SIZE_K <= 32 and c.BLOCK_SIZE_M <= 64 and c.BLOCK_SIZE_N <= 32
               for c in odd.configs)
    assert odd.removed_by_rule["shared_memory"] == 0


def test_prune_depends_on_device(full_results):
    assert set(full_results[(BIG, IP.name)].configs) != set(full_results[(BIG, SMALL_GPU.name)].configs)
    # The small GPU's 64 KiB shared memory leaves no config above it.
    assert all(shared_memory_bytes(BIG, c) <= 65_536 for c in full_results[(BIG, SMALL_GPU.name)].configs)
    assert any(shared_memory_bytes(BIG, c) > 65_536 for c in full_results[(BIG, IP.name)].configs)


def test_prune_attributes_each_removal_to_first_failing_rule():
    space = RangeSpace(block_m=(16, 64), block_n=(16, 128), block_k=(16, 64), group_m=(1, 8), split_k=(1, 4),
                       num_warps=(1, 8), num_stages=(1, 5))
    result = prune(SKINNY, IP, space)
    expected = {r.name: 0 for r in RULES + FAMILY_RULES}
    for config in space.configs():
        for rule in RULES + FAMILY_RULES:
            if not rule.keep(SKINNY, config, IP):
                expected[rule.name] += 1
                break
    assert result.removed_by_rule == expected
    assert result.space_size == 2 ** 7


@pytest.mark.parametrize("M, group_m, kept", [
    (256, (1, 4, 8, 16), {1, 4}),  # 4 rows of 64: 4 and up group them all, alike
    (512, (1, 4, 8, 16), {1, 4, 8}),
    (1024, (1, 4, 8, 16, 32), {1, 4, 8, 16}),
    (2048, (1, 4, 8, 16), {1, 4, 8, 16}),  # 32 rows: every value groups some
    (256, (8, 16), {8}),  # the smallest of the space's values that groups every row
    (64, (1, 4, 8), {1}),  # one row of tiles: one order
])
def test_prune_keeps_one_group_of_every_row(M, group_m, kept):
    space = RangeSpace(block_m=(64,), block_n=(128,), block_k=(64,), group_m=group_m, split_k=(1,), num_warps=(4,),
                       num_stages=(3,))
    result = prune(problem(M, 4096, 4096), IP, space)
    assert {c.GROUP_SIZE_M for c in result.configs} == kept
    assert result.removed_by_rule["group_m"] == len(group_m) - len(kept)
    assert len(result.configs) + sum(result.removed_by_rule.values()) == len(space)


@pytest.mark.parametrize("N, kept", [
    (128, {1}),  # one column of 128-column tiles: every group walks the 16 rows in turn
    (72, {1}),
    (129, {1, 4, 8, 16}),  # two columns: the groups of fewer than the 16 rows and one of all of them
])
def test_prune_keeps_one_group_where_one_column_of_tiles(N, kept):
    space = RangeSpace(block_m=(64,), block_n=(128,), block_k=(64,), group_m=(1, 4, 8, 16, 32), split_k=(1,),
                       num_warps=(4,), num_stages=(3,))
    result = prune(problem(1024, N, 4096), IP, space)
    assert {c.GROUP_SIZE_M for c in result.configs} == kept
    assert len(result.configs) + sum(result.removed_by_rule.values()) == len(space)


def test_prune_counts_c_transposed_columns_along_m():
    # C^T of 96x8104 is 127 rows of 64 by one column of 128 along M = 96: one group; C is 2 rows by 64 columns
    space = RangeSpace(block_m=(64,), block_n=(128,), block_k=(64,), group_m=(1, 4, 8, 16, 32), split_k=(1,),
                       num_warps=(4,), num_stages=(3,), persistent_tma=(1,), swap_ab=(0, 1))
    result = prune(problem(96, 8104, 1024), IP, space)
    assert {c.GROUP_SIZE_M for c in result.configs if c.SWAP_AB} == {1}
    assert {c.GROUP_SIZE_M for c in result.configs if not c.SWAP_AB} == {1, 4}


def test_prune_groups_c_transposed_by_its_own_rows():
    # C^T of 8191x300 is 300x8191: three rows of 128-row tiles, where C has 64
    space = RangeSpace(block_m=(128,), block_n=(256,), block_k=(64,), group_m=(1, 4, 8, 16, 32), split_k=(1,),
                       num_warps=(8,), num_stages=(3,), persistent_tma=(1,), swap_ab=(0, 1))
    result = prune(problem(8191, 300, 1023), IP, space)
    assert {c.GROUP_SIZE_M for c in result.configs if c.SWAP_AB} == {1, 4}
    assert {c.GROUP_SIZE_M for c in result.configs if not c.SWAP_AB} == {1, 4, 8, 16, 32}
    assert len(result.configs) + sum(result.removed_by_rule.values()) == len(space)


def test_prune_custom_space_restricts_output(full_results):
    space = RangeSpace(block_m=(64, 128), block_n=(128,), block_k=(32, 64), group_m=(1, 8), split_k=(1,),
                       num_warps=(4, 8), num_stages=(2, 3))
    result = prune(BIG, IP, space)
    assert result.space_size == len(space) == 2 * 1 * 2 * 2 * 1 * 2 * 2
    assert len(result.configs) + sum(result.removed_by_rule.values()) == 32
    assert result.configs  # e.g. 64x128x64 GM8 nW4 nS3 survives
    assert C(64, 128, 64, gm=8, nw=4, ns=3) in result.configs
    for c in result.configs:
        assert c.BLOCK_SIZE_M in (64, 128) and c.BLOCK_SIZE_N == 128 and c.BLOCK_SIZE_K in (32, 64)
        assert c.GROUP_SIZE_M in (1, 8) and c.SPLIT_K == 1 and c.num_warps in (4, 8) and c.num_stages in (2, 3)
    assert set(result.configs) == {c for c in full_results[(BIG, IP.name)].configs if c in set(space.configs())}


def test_prune_with_no_rules_keeps_the_space(small_space):
    result = prune(ODD, IP, small_space, rules=(), family_rules=())
    assert result.configs == small_space.configs()
    assert result.removed_by_rule == {}
    assert result.space_size == len(small_space)


def test_prune_with_one_rule(small_space):
    rule = RULES_BY_NAME["split_k"]
    result = prune(BIG, IP, small_space, rules=(rule,), family_rules=())
    assert result.removed_by_rule == {"split_k": len(small_space) // 2}
    assert all(c.SPLIT_K == 1 for c in result.configs)


def test_a_rule_is_asked_once_per_combination_of_its_fields_about_the_first_config_the_rules_before_it_kept():
    asked = []

    def four_warps(problem, config, device):
        asked.append(config)
        return config.num_warps == 4
    rules = (Rule("no_tall_tiles", "BLOCK_M <= 64", lambda p, c, d: c.BLOCK_SIZE_M <= 64, ("BLOCK_SIZE_M",)),
             Rule("four_warps", "num_warps 4", four_warps, ("BLOCK_SIZE_M", "num_warps")))
    space = RangeSpace(block_m=(16, 64, 128), block_n=(64, 128), block_k=(32,), group_m=(1, 8), split_k=(1,),
                       num_warps=(4, 8), num_stages=(3, 4))
    result = prune(BIG, IP, space, rules=rules, family_rules=())
    walk = space.configs()
    # once per (BLOCK_M, num_warps) of the tiles the first rule kept, about the first such config of the walk
    assert [(c.BLOCK_SIZE_M, c.num_warps) for c in asked] == [(16, 4), (16, 8), (64, 4), (64, 8)]
    assert asked == [next(w for w in walk if (w.BLOCK_SIZE_M, w.num_warps) == (c.BLOCK_SIZE_M, c.num_warps))
                     for c in asked]
    assert result.configs == [c for c in walk if c.BLOCK_SIZE_M <= 64 and c.num_warps == 4]  # in the walk's order
    assert result.removed_by_rule == {"no_tall_tiles": len(walk) // 3, "four_warps": len(walk) // 3}


def test_prune_can_remove_everything():
    space = RangeSpace(block_m=(256,), block_n=(256,), block_k=(256,), group_m=(1,), split_k=(1,), num_warps=(1,),
                       num_stages=(5,))
    result = prune(BIG, IP, space)
    assert result.configs == []
    assert sum(result.removed_by_rule.values()) == 1


HOPPER = replace(IP, name="Hopper with Gluon", vendor="nvidia", warp_groups=True)
WG = {"PERSISTENT_TMA": 1, "WARP_GROUPS": 1}


@pytest.mark.parametrize("p, config, device, kept", [
    (problem(3072, 1536, 4096), Config(192, 192, 32, 8, 1, 12, 5, **WG), HOPPER, True),
    (problem(3072, 1536, 4096, "bf16", col_b=True), Config(128, 192, 64, 4, 1, 8, 4, **WG), HOPPER, True),
    (problem(3072, 1536, 4096), Config(192, 192, 32, 8, 1, 12, 5, **WG), IP, False),  # no Gluon under the interpreter
    (problem(3072, 1536, 4096, col_a=True), Config(192, 192, 32, 8, 1, 12, 5, **WG), HOPPER, False),
    (problem(3072, 1536, 4096, "fp8"), Config(192, 192, 64, 8, 1, 12, 3, **WG), HOPPER, False),  # 8-bit
    (problem(3072, 1536, 4096, "fp32"), Config(192, 192, 16, 8, 1, 12, 3, **WG), HOPPER, False),
    (problem(3072, 1536, 4096), Config(192, 192, 32, 8, 1, 8, 5, **WG), HOPPER, False),  # 8 warps for three groups
    (problem(3072, 1536, 4096), Config(256, 160, 32, 8, 1, 16, 4, **WG), HOPPER, True),  # four groups
    (problem(3072, 1536, 4096), Config(256, 160, 32, 8, 1, 12, 4, **WG), HOPPER, False),  # 12 warps for four groups
    (problem(3072, 1536, 4096), Config(512, 160, 32, 8, 1, 32, 2, **WG), HOPPER, False),  # eight groups
    (problem(3072, 1536, 4096), Config(128, 256, 64, 8, 1, 8, 3, **WG), HOPPER, False),  # one column part
    (problem(3072, 1536, 4096), Config(128, 160, 64, 8, 1, 8, 3, **WG), HOPPER, True),  # 128 + 32
    (problem(2048, 2560, 4096), Config(128, 320, 32, 4, 1, 8, 5, **WG), HOPPER, True),  # 256 + 64
    (problem(2048, 2560, 4096), Config(128, 384, 32, 4, 1, 8, 4, **WG), HOPPER, True),  # 256 + 128
    (problem(2048, 2560, 4096), Config(128, 320, 64, 4, 1, 8, 3, PERSISTENT_TMA=1), HOPPER, False),  # no such TMA tile
    (problem(2048, 2560, 4096), Config(128, 320, 32, 4, 1, 8, 5), HOPPER, False),  # nor a plain one
    (problem(3072, 1536, 4096), Config(192, 192, 128, 8, 1, 12, 2, **WG), HOPPER, False),  # 256-byte K rows
    (problem(3072, 1536, 4096), Config(192, 192, 32, 8, 1, 12, 1, **WG), HOPPER, False),  # one stage
    (problem(3072, 1536, 4100), Config(192, 192, 32, 8, 1, 12, 5, **WG), HOPPER, False),  # A's rows off 16 bytes
    (problem(3072, 1540, 4096), Config(192, 192, 32, 8, 1, 12, 5, **WG), HOPPER, False),  # B's and C's rows
    (problem(3072, 1540, 4096, col_b=True), Config(192, 192, 32, 8, 1, 12, 5, **WG), HOPPER, False),  # C's rows
    (problem(3072, 1536, 4096), Config(192, 192, 32, 8, 1, 12, 5, PERSISTENT_TMA=1), HOPPER, False),  # 12 warps
    (problem(3072, 1536, 4096), Config(192, 192, 64, 8, 1, 8, 3, PERSISTENT_TMA=1), HOPPER, True),  # not its rule
])
def test_warp_groups_only_where_the_gluon_kernel_runs(p, config, device, kept):
    assert RULES_BY_NAME["warp_groups"].keep(p, config, device) is kept


def test_warp_group_configs_skip_the_tma_familys_tile_rule_and_keep_the_compound_one():
    config = Config(192, 192, 32, 8, 1, 12, 5, **WG)  # 64-byte K rows: the TMA family's kernel needs 128
    assert RULES_BY_NAME["tma_tile"].keep(BIG, config, HOPPER)
    assert not RULES_BY_NAME["tma_tile"].keep(BIG, Config(192, 192, 32, 8, 1, 8, 5, PERSISTENT_TMA=1), HOPPER)
    # 16 tiles of 192x192 at 3072x1536 fill a wave that power-of-two tiles around them overrun; 4096^3 they do not
    assert RULES_BY_NAME["compound_tile"].keep(problem(3072, 1536, 4096), config, HOPPER)
    assert not RULES_BY_NAME["compound_tile"].keep(BIG, config, HOPPER)


@pytest.mark.parametrize("size, width, kept", [
    ((2048, 2560, 4096), 320, True),  # 128 tiles, one wave; 128x256 takes 160, 128x512 one wave of twice the area
    ((1024, 5120, 4096), 320, True),
    ((4096, 2560, 4096), 320, True),  # 256 tiles, two waves; 128x256 takes three
    ((2048, 3072, 4096), 384, True),  # 128 tiles
    ((4096, 3072, 4096), 384, True),  # two waves of 256 tiles, three of 384 tiles of 128x256: the same elements
    ((4096, 4096, 4096), 320, False),  # 416 tiles, four waves, as 512 of 128x256
    ((4096, 4096, 4096), 384, False),  # 352 tiles, three waves of a tile 1.5 times as large
    ((8192, 8192, 8192), 384, False),
])
def test_wide_warp_group_tiles_only_where_their_waves_pay(size, width, kept):
    config = Config(128, width, 32, 4, 1, 8, 4, **WG)
    assert RULES_BY_NAME["compound_tile"].keep(problem(*size), config, HOPPER) is kept


def test_pruning_keeps_warp_group_configs_only_on_a_gpu_that_runs_them():
    kept = prune(problem(3072, 1536, 4096), HOPPER).configs
    warp_group = [config for config in kept if config.WARP_GROUPS]
    assert warp_group and all(config.num_warps == warp_group_warps(config) for config in warp_group)
    assert {config.BLOCK_SIZE_M for config in warp_group} == {128, 192, 256}  # two, three and four warp groups
    assert not any(config.num_warps in (12, 16) and not config.WARP_GROUPS for config in kept)
    assert not any(config.WARP_GROUPS for config in prune(problem(3072, 1536, 4096), IP).configs)
    wide = {(c.BLOCK_SIZE_M, c.BLOCK_SIZE_N, c.num_warps, c.WARP_GROUPS)
            for c in prune(problem(2048, 2560, 4096), HOPPER).configs if c.BLOCK_SIZE_N > 256}
    # one wave of 128 tiles of 128x320, or of 112 of 128x384, where 128x256 takes two: the warp-group kernel's alone
    assert wide == {(128, 320, 8, 1), (128, 384, 8, 1)}


# Every value each config field takes in some space (the AMD knobs, clusters and stream-K are opt-in or AMD's).
FIELD_VALUES = {
    "BLOCK_SIZE_M": FULL_SPACE.block_m, "BLOCK_SIZE_N": FULL_SPACE.block_n, "BLOCK_SIZE_K": FULL_SPACE.block_k,
    "GROUP_SIZE_M": FULL_SPACE.group_m, "SPLIT_K": FULL_SPACE.split_k, "num_warps": FULL_SPACE.num_warps,
    "num_stages": FULL_SPACE.num_stages, "num_ctas": (1, 2), "waves_per_eu": (None, 0, 2),
    "matrix_instr_nonkdim": (None, 16, 32), "kpack": (None, 1, 2), "schedule_hint": (None, "none"),
    "STATIC_SHAPE": (0, 1), "FUSED_REDUCE": (0, 1, FusedReduce.ATOMIC), "PERSISTENT_TMA": (0, 1),
    "WARP_SPECIALIZE": (0, 1), "EPILOGUE_SUBTILE": (0, 1), "STREAM_K": (0, 1, StreamK.SPLIT_TAIL), "SWAP_AB": (0, 1),
    "ALIGN_ROWS": (0, 1), "NARROW_EDGE": (0, 1, NarrowEdge.FUSED, NarrowEdge.SPLIT), "WARP_GROUPS": (0, 1),
}
READS_CASES = [(BIG, IP), (SKINNY, HOPPER), (ODD, IP), (problem(4095, 4097, 1023), HOPPER),
               (problem(3072, 1536, 4096, "bf16", col_b=True), HOPPER), (problem(3000, 5000, 4096, "fp8"), HOPPER),
               (problem(128, 256, 65536), SMALL_GPU), (replace(MID, bias=True), HOPPER),
               (problem(256, 512, 16384), HOPPER),  # TMA configs with split K
               (problem(3072, 1024, 4096), HOPPER),  # 192x128 tiles fill one wave of C, two of C^T
               (problem(2048, 2560, 4096), HOPPER)]  # 128x320 tiles fill one wave


# A space small enough to prune by asking every rule of every config, with each kind of tile the rules tell apart.
RICH_SPACE = RangeSpace(block_m=(64, 128, 192, 256), block_n=(96, 128, 160, 320), block_k=(16, 32, 64), group_m=(1, 8),
                        split_k=(1, 2), num_warps=(4, 8, 12, 16), num_stages=(2, 4), static_shape=(0, 1),
                        fused_reduce=(0, 1), persistent_tma=(0, 1), warp_specialize=(0, 1), swap_ab=(0, 1),
                        narrow_edge=(0, NarrowEdge.FUSED), warp_groups=(0, 1))


def _random_configs(rng: random.Random, count: int) -> list[Config]:
    configs = []
    while len(configs) < count:
        try:
            configs.append(Config(**{field: rng.choice(values) for field, values in FIELD_VALUES.items()}))
        except ValueError:  # a combination Config refuses (WARP_GROUPS without PERSISTENT_TMA, ...)
            continue
    return configs


def test_field_values_name_every_config_field():
    assert set(FIELD_VALUES) == set(Config.field_names())


@pytest.mark.parametrize("rule", [rule for rule in RULES + FAMILY_RULES if rule.reads], ids=lambda rule: rule.name)
def test_a_rule_reads_no_field_but_those_it_names(rule):
    # the pruner asks a rule once per combination of values of the fields it names (Rule.reads): a field it does not
    # name must not change its answer, else configs would be kept or removed on another config's answer. Random
    # configs fail most rules whatever one field holds; configs pruning kept sit where one field can tip a rule.
    rng = random.Random(rule.name)
    others = [field for field in FIELD_VALUES if field not in rule.reads]
    for p, device in READS_CASES:
        kept = prune(p, device, RICH_SPACE).configs
        for config in _random_configs(rng, 100) + rng.sample(kept, min(len(kept), 100)):
            answer = rule.keep(p, config, device)
            for field in others:
                try:
                    changed = replace(config, **{field: rng.choice(FIELD_VALUES[field])})
                except ValueError:
                    continue
                assert rule.keep(p, changed, device) == answer, (rule.name, p, config, field, changed)


@pytest.mark.parametrize("p, device", READS_CASES[:6])
def test_pruning_by_remembered_answers_keeps_what_asking_every_config_keeps(p, device):
    unread = tuple(replace(rule, reads=()) for rule in RULES), tuple(replace(rule, reads=()) for rule in FAMILY_RULES)
    remembered, asked = prune(p, device, RICH_SPACE), prune(p, device, RICH_SPACE, *unread)
    assert remembered.configs == asked.configs  # the same configs in the same order
    assert remembered.removed_by_rule == asked.removed_by_rule
    assert len(asked.configs) < len(RICH_SPACE)


def test_decoding_keeps_short_tiles_in_the_plain_family():
    # M = 1 (one token): tiles of one row, multiplied without an instruction, beside the 16-row tl.dot tiles
    configs = prune(DECODE, IP).configs
    short = [c for c in configs if c.BLOCK_SIZE_M < 16]
    assert short and {c.BLOCK_SIZE_M for c in short} == {1}
    assert any(c.BLOCK_SIZE_N < 16 and c.BLOCK_SIZE_K > 256 for c in short)  # few columns, long rows
    assert not any(c.PERSISTENT_TMA for c in short)
    assert any(c.BLOCK_SIZE_M == 16 for c in configs)
    three_rows = {c.BLOCK_SIZE_M for c in prune(problem(3, 4096, 4096), IP).configs if c.BLOCK_SIZE_M < 16}
    assert three_rows == {1, 2, 4}


def test_the_rules_and_the_family_agree_on_which_tiles_go_without_an_instruction():
    from tune_gemm.kernels import matmul_family

    assert DOT_MIN_ROWS == matmul_family.DOT_MIN_ROWS.value
    assert without_instruction(C(8, 16, 16)) and not without_instruction(C(16, 16, 16))


def test_the_largest_removals_are_named_most_first_and_rules_that_removed_none_left_out():
    result = PruneResult([], 12, {"block_size": 3, "split_k": 0, "group_m": 9})
    assert result.largest_removals() == "group_m 9, block_size 3"
    assert result.largest_removals(count=1) == "group_m 9"
