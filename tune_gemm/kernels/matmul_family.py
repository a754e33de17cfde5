# ---------------------------------------------------------------------------------------------
# Kernel family: the code every generated kernel file shares. The generator copies this source
# into each generated_kernel*.py; the per-config kernels below it only bind constants.
# ---------------------------------------------------------------------------------------------
import argparse
import functools
import os
import sys
from dataclasses import dataclass, replace
from multiprocessing.pool import ThreadPool

if "--interpret" in sys.argv:  # must be set before Triton is imported
    os.environ["TRITON_INTERPRET"] = "1"

import torch
import triton
import triton.language as tl

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
REDUCE_BLOCK = tl.constexpr(64)  # tile edge of the split-K reduction kernel
# Tiles of fewer rows than the smallest matrix instruction's (mma m16) multiply without one (row_products): M of a
# few rows, as in decoding one token per sequence.
DOT_MIN_ROWS = tl.constexpr(16)
# FUSED_REDUCE: how a split tile's K slices sum their partial tiles inside the GEMM (0: a reduction kernel after it)
SLOT_SUM = tl.constexpr(1)  # a slot per slice; the last slice to finish sums the slots in slice order
ATOMIC_SUM = tl.constexpr(2)  # every slice adds into the tile's one running sum; the last to finish reads it
# Triton's interpreter (seen with 3.9) returns garbage from tl.dot on bf16 operands; upcasting them
# first gives the exact products. Compiled kernels never take this branch.
UPCAST_DOT_OPERANDS = tl.constexpr(INTERPRETED)


@dataclass(frozen=True)
class Problem:
    M: int
    N: int
    K: int
    col_a: bool
    col_b: bool
    dtype_a: torch.dtype
    dtype_b: torch.dtype
    dtype_c: torch.dtype
    tolerance: float  # relative-norm error allowed against the float64 reference
    bias: bool = False  # C += bias[m] on row m (the ROCm script's --bias_vector), bias in C's dtype

    def transposed(self) -> "Problem":
        """C^T (N x M) = B^T A^T, as a SWAP_AB launch computes it: B^T is column-major where B is row-major."""
        return replace(self, M=self.N, N=self.M, col_a=not self.col_b, col_b=not self.col_a, dtype_a=self.dtype_b,
                       dtype_b=self.dtype_a)


@dataclass(frozen=True)
class TileConfig:
    BLOCK_SIZE_M: int
    BLOCK_SIZE_N: int
    BLOCK_SIZE_K: int
    GROUP_SIZE_M: int
    SPLIT_K: int
    num_warps: int
    num_stages: int
    options: tuple = ()  # (name, value) launch options of the backend, e.g. AMD's waves_per_eu, or num_ctas
    # SPLIT_K > 1: SLOT_SUM or ATOMIC_SUM, the partials are summed inside the GEMM (finish_split_tile)
    fused_reduce: int = 0

    @property
    def reduction_kernel(self) -> bool:
        """Whether a reduction kernel after the GEMM sums the split-K partials (a split without fused_reduce)."""
        return self.SPLIT_K > 1 and not self.fused_reduce

    @property
    def num_ctas(self) -> int:
        """CTAs per program, a thread-block cluster (the num_ctas launch option, NVIDIA compute capability 9+)."""
        return dict(self.options).get("num_ctas", 1)


@triton.jit
def add_row_bias(acc, bias_ptr, offs_m, M, stride_bias, HAS_BIAS: tl.constexpr):
    """Epilogue shared by every kernel family: the fp32 tile `acc` (rows offs_m) plus bias[m] on each
    column of row m when HAS_BIAS; unchanged otherwise. Rows past M read 0 (their store is masked)."""
    if HAS_BIAS:
        bias = tl.load(bias_ptr + offs_m * stride_bias, mask=offs_m < M, other=0.0)
        acc = acc + bias.to(acc.dtype)[:, None]
    return acc


@triton.jit
def apply_scales(acc, scale_a_ptr, scale_b_ptr, HAS_SCALES: tl.constexpr):
    """fp8 epilogue, after the K loop and before the bias: the fp32 tile times A's and B's per-tensor scales
    (one fp32 each), so C = (scale_a A) @ (scale_b B) as torch._scaled_mm computes it."""
    if HAS_SCALES:
        acc = acc * (tl.load(scale_a_ptr) * tl.load(scale_b_ptr))
    return acc


@triton.jit
def grouped_tile(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M: tl.constexpr):
    """(row, column) of output tile `tile_id` when tiles are walked GROUP_SIZE_M rows at a time, column
    by column: programs that run together share B tiles in L2."""
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    first_pid_m = (tile_id // num_pid_in_group) * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((tile_id % num_pid_in_group) % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def dot_accumulate(a, b, acc):
    """acc + a @ b, in acc's type (fp32, or int32 for int8 inputs), for every kernel family's K loop."""
    if UPCAST_DOT_OPERANDS:  # noqa: SIM102 - a constexpr alone: compiled kernels drop the whole block
        if acc.dtype == tl.float32:  # the interpreter's int8 dot is exact (and takes no int32 operands)
            a = a.to(tl.float32)
            b = b.to(tl.float32)
    return tl.dot(a, b, acc, out_dtype=acc.dtype)  # compiled int8 dots must be told int32


@triton.jit
def operand_tiles(a_ptr, b_ptr, offs_am, offs_bn, offs_k, stride_am, stride_ak, stride_bk, stride_bn,
                  ROW_PRODUCTS: tl.constexpr):
    """(A's pointers, B's pointers, the K index of A's elements, of B's) of the first K step: 2-D tiles for tl.dot, or,
    for row_products, 3-D (row, k, column) tiles A[BLOCK_SIZE_M, BLOCK_SIZE_K, 1] and B[1, BLOCK_SIZE_K, BLOCK_SIZE_N].
    Loaded in the shape they are multiplied in, neither tile changes layout in the loop: broadcasting 2-D tiles there
    made the compiler pass both through shared memory, with a barrier, every K step (sm_90a), and on the H100 the 3-D
    loads took 83.4 against 86.9 us at 1x28672x4096 (BENCHMARKS.md, thirty-third run)."""
    if ROW_PRODUCTS:
        a_k = offs_k[None, :, None]
        b_k = offs_k[None, :, None]
        a_ptrs = a_ptr + offs_am[:, None, None] * stride_am + a_k * stride_ak
        b_ptrs = b_ptr + b_k * stride_bk + offs_bn[None, None, :] * stride_bn
    else:
        a_k = offs_k[None, :]
        b_k = offs_k[:, None]
        a_ptrs = a_ptr + offs_am[:, None] * stride_am + a_k * stride_ak
        b_ptrs = b_ptr + b_k * stride_bk + offs_bn[None, :] * stride_bn
    return a_ptrs, b_ptrs, a_k, b_k


@triton.jit
def load_operands(a_ptrs, b_ptrs, a_k, b_k, k_left, EVEN_K: tl.constexpr, A_EVICTION: tl.constexpr,
                  B_EVICTION: tl.constexpr):
    """A's and B's tiles of one K step (operand_tiles: a_k and b_k, the K index of each element), with the L2 eviction
    policies given ("" for the default); zeros past K's end (k_left elements left) unless EVEN_K."""
    if EVEN_K:
        return (tl.load(a_ptrs, eviction_policy=A_EVICTION), tl.load(b_ptrs, eviction_policy=B_EVICTION))
    return (tl.load(a_ptrs, mask=a_k < k_left, other=0.0, eviction_policy=A_EVICTION),
            tl.load(b_ptrs, mask=b_k < k_left, other=0.0, eviction_policy=B_EVICTION))


@triton.jit
def row_products(a, b, acc):
    """acc + every product a[m, k] * b[k, n] of a tile with fewer rows than a matrix instruction (BLOCK_SIZE_M <
    DOT_MIN_ROWS), in acc's type and kept apart by k (acc: BLOCK_SIZE_M x BLOCK_SIZE_K x BLOCK_SIZE_N); the K loop sums
    them over k once, after it. a and b are 3-D tiles (operand_tiles). Such a GEMM only streams B, at a rate set by its
    loads: a tl.dot would pad the rows to its instruction's 16 and stage B through shared memory for it."""
    return acc + a.to(acc.dtype) * b.to(acc.dtype)


@triton.jit
def matmul_tile(
    a_ptr, b_ptr, c_ptr, bias_ptr, scale_a_ptr, scale_b_ptr, partials_ptr, arrivals_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, stride_cs, stride_bias,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, SPLIT_K: tl.constexpr, EVEN_K: tl.constexpr, HAS_BIAS: tl.constexpr,
    HAS_SCALES: tl.constexpr, FUSED_REDUCE: tl.constexpr = 0,
):
    """One output tile of C = A @ B (+ bias), times the fp8 scales when HAS_SCALES; with SPLIT_K > 1, one
    K slice's unscaled partial tile (fp32, int32 for int8; slice stride_cs), without the bias: the
    reduction kernel scales and adds it once. FUSED_REDUCE (SPLIT_K > 1; SLOT_SUM or ATOMIC_SUM): c_ptr is C, and
    the tile's K slices sum their partials themselves (finish_split_tile) through `partials_ptr` and
    `arrivals_ptr`, None otherwise."""
    SHORT_TILE: tl.constexpr = BLOCK_SIZE_M < DOT_MIN_ROWS  # fewer rows than a matrix instruction: row_products
    pid_k = tl.program_id(axis=1)
    pid_m, pid_n = grouped_tile(tl.program_id(axis=0), tl.cdiv(M, BLOCK_SIZE_M), tl.cdiv(N, BLOCK_SIZE_N),
                                GROUP_SIZE_M)

    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    # Rows and columns past the edge wrap around, so loads stay in bounds without a mask;
    # the store at the end is masked instead.
    offs_am = offs_m % M
    offs_bn = offs_n % N
    offs_k = pid_k * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
    a_ptrs, b_ptrs, a_k, b_k = operand_tiles(a_ptr, b_ptr, offs_am, offs_bn, offs_k, stride_am, stride_ak, stride_bk,
                                             stride_bn, SHORT_TILE)

    acc_dtype = tl.float32 if a_ptr.type.element_ty != tl.int8 else tl.int32  # int8 dots accumulate exactly
    if SHORT_TILE:  # every product kept apart until after the loop
        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_K, BLOCK_SIZE_N), dtype=acc_dtype)
    else:
        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=acc_dtype)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K * SPLIT_K)):
        k_left = K - k * BLOCK_SIZE_K * SPLIT_K
        if SHORT_TILE:
            # B streams past once while every program reads A: B's lines are the first to leave L2, A's the last
            a, b = load_operands(a_ptrs, b_ptrs, a_k, b_k, k_left, EVEN_K, "evict_last", "evict_first")
            acc = row_products(a, b, acc)
        else:
            a, b = load_operands(a_ptrs, b_ptrs, a_k, b_k, k_left, EVEN_K, "", "")
            acc = dot_accumulate(a, b, acc)
        a_ptrs += BLOCK_SIZE_K * SPLIT_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * SPLIT_K * stride_bk
    if SHORT_TILE:
        acc = tl.sum(acc, axis=1)

    if FUSED_REDUCE:
        finish_split_tile(acc, partials_ptr, arrivals_ptr, pid_k, c_ptr, bias_ptr, scale_a_ptr, scale_b_ptr, offs_m,
                          offs_n, M, N, stride_cm, stride_cn, stride_bias, SPLIT_K, FUSED_REDUCE, HAS_BIAS,
                          HAS_SCALES)
    else:
        if SPLIT_K == 1:
            acc = apply_scales(acc, scale_a_ptr, scale_b_ptr, HAS_SCALES)
            acc = add_row_bias(acc, bias_ptr, offs_m, M, stride_bias, HAS_BIAS)
        c_ptrs = c_ptr + pid_k * stride_cs + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def finish_split_tile(acc, partials_ptr, arrivals_ptr, pid_k, c_ptr, bias_ptr, scale_a_ptr, scale_b_ptr, offs_m,
                      offs_n, M, N, stride_cm, stride_cn, stride_bias, SPLIT_K: tl.constexpr,
                      FUSED_REDUCE: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_SCALES: tl.constexpr):
    """FUSED_REDUCE: K slice pid_k's partial tile `acc` goes into the tile's partial sums in `partials_ptr`
    (tile_partials), then the slice counts itself in on the tile's counter in `arrivals_ptr`. The last slice to
    arrive takes the tile's sum (summed_partials), scales it and adds the bias, stores it into C, and sets the counter
    back to zero for the next launch (arrival_counters). Nobody waits for anybody: this holds in any order the
    programs run."""
    tile = tl.program_id(axis=0)
    partials = tile_partials(partials_ptr, tile, acc.shape[0], acc.shape[1], SPLIT_K, FUSED_REDUCE)
    if arrives_last(acc, partials, pid_k, arrivals_ptr + tile, SPLIT_K, FUSED_REDUCE):
        total = summed_partials(partials, arrivals_ptr + tile, acc.shape[0], acc.shape[1], SPLIT_K, FUSED_REDUCE)
        total = apply_scales(total, scale_a_ptr, scale_b_ptr, HAS_SCALES)
        total = add_row_bias(total, bias_ptr, offs_m, M, stride_bias, HAS_BIAS)
        tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, total.to(c_ptr.dtype.element_ty),
                 mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def tile_partials(partials_ptr, tile, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, SPLIT_K: tl.constexpr,
                  FUSED_REDUCE: tl.constexpr):
    """Where a tile's K slices put their partial tiles, element for element (row-major): SLOT_SUM, the first of the
    tile's SPLIT_K consecutive slots, a whole tile each; ATOMIC_SUM, the tile's one running sum (split_buffers)."""
    tile_size = BLOCK_SIZE_M * BLOCK_SIZE_N
    per_tile = tile_size if FUSED_REDUCE == ATOMIC_SUM else SPLIT_K * tile_size
    return (partials_ptr + tile.to(tl.int64) * per_tile + tl.arange(0, BLOCK_SIZE_M)[:, None] * BLOCK_SIZE_N
            + tl.arange(0, BLOCK_SIZE_N)[None, :])


@triton.jit
def arrives_last(acc, partials, k_slice, counter, SPLIT_K: tl.constexpr, FUSED_REDUCE: tl.constexpr):
    """Put K slice k_slice's partial tile `acc` where its tile's partials go (tile_partials): SLOT_SUM, store it into
    its own slot; ATOMIC_SUM, add it into the running sum. Then count the slice in on its tile's `counter`: whether it
    is the last of the SPLIT_K to arrive (summed_partials is then its to do)."""
    if FUSED_REDUCE == ATOMIC_SUM:
        tl.atomic_add(partials, acc, sem="relaxed", scope="gpu")
    else:
        tl.store(partials + k_slice * acc.shape[0] * acc.shape[1], acc)
    tl.debug_barrier()  # every thread's part is written (or added) before the count releases it
    return tl.atomic_add(counter, 1, sem="acq_rel", scope="gpu") == SPLIT_K - 1


@triton.jit
def summed_partials(partials, counter, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, SPLIT_K: tl.constexpr,
                    FUSED_REDUCE: tl.constexpr):
    """The last slice to arrive: the tile's sum, and the counter set back to zero for the next launch
    (arrival_counters). SLOT_SUM: every slot summed in slice order, so that the sum does not depend on which slice
    that is. ATOMIC_SUM: the running sum, set back to zero for the next launch (running_sums)."""
    total = tl.load(partials, cache_modifier=".cg")
    if FUSED_REDUCE == ATOMIC_SUM:
        # every thread's load is done before any zero lands: the store may give an element to another thread than the
        # load did (on the H100, 64x32 tiles with 4 warps lost 32 of each tile's sums so)
        tl.debug_barrier()
        tl.store(partials, tl.zeros_like(total))
    else:
        # unrolled, so that the loads are in flight together: one slot at a time (a loop) saves registers but took
        # 60.5-60.7 against 59.7-59.9 us at 128x4096x14336 in the TMA family with 4 slices (BENCHMARKS.md,
        # seventeenth run)
        for s in tl.static_range(1, SPLIT_K):
            total += tl.load(partials + s * BLOCK_SIZE_M * BLOCK_SIZE_N, cache_modifier=".cg")
    tl.store(counter, 0)
    return total


@triton.jit
def matmul_tile_static_shape(
    a_ptr, b_ptr, c_ptr, bias_ptr, scale_a_ptr, scale_b_ptr, partials_ptr, arrivals_ptr, M: tl.constexpr,
    N: tl.constexpr, K: tl.constexpr,
    stride_am: tl.constexpr, stride_ak: tl.constexpr, stride_bk: tl.constexpr, stride_bn: tl.constexpr,
    stride_cm: tl.constexpr, stride_cn: tl.constexpr, stride_cs: tl.constexpr, stride_bias: tl.constexpr,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, SPLIT_K: tl.constexpr, EVEN_K: tl.constexpr, HAS_BIAS: tl.constexpr,
    HAS_SCALES: tl.constexpr, FUSED_REDUCE: tl.constexpr = 0,
):
    """matmul_tile with the sizes and strides as compile-time constants (STATIC_SHAPE): one binary per shape, whose
    grid walk, masks and K loop fold to constants. The run-time launchers use it; a generated module declares the
    same parameters tl.constexpr in its own kernel instead."""
    matmul_tile(a_ptr, b_ptr, c_ptr, bias_ptr, scale_a_ptr, scale_b_ptr, partials_ptr, arrivals_ptr, M, N, K,
                stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, stride_cs, stride_bias, BLOCK_SIZE_M,
                BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, SPLIT_K, EVEN_K, HAS_BIAS, HAS_SCALES, FUSED_REDUCE)


@triton.jit
def splitk_reduce_tile(
    p_ptr, c_ptr, bias_ptr, scale_a_ptr, scale_b_ptr, M, N, stride_ps, stride_pm, stride_pn, stride_cm, stride_cn,
    stride_bias, SPLIT_K: tl.constexpr, BLOCK: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_SCALES: tl.constexpr,
):
    """Sum the SPLIT_K partial tiles (fp32, or int32 for int8), scale the sum (fp8) and add the bias, once,
    into C, in C's dtype."""
    offs_m = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    offs_n = tl.program_id(axis=1) * BLOCK + tl.arange(0, BLOCK)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    p_ptrs = p_ptr + offs_m[:, None] * stride_pm + offs_n[None, :] * stride_pn
    acc = tl.zeros((BLOCK, BLOCK), dtype=p_ptr.type.element_ty)
    for s in tl.static_range(SPLIT_K):
        acc += tl.load(p_ptrs + s * stride_ps, mask=mask, other=0.0)
    acc = apply_scales(acc, scale_a_ptr, scale_b_ptr, HAS_SCALES)
    acc = add_row_bias(acc, bias_ptr, offs_m, M, stride_bias, HAS_BIAS)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
             mask=mask)


def ceil_div(a: int, b: int) -> int:
    """ceil(a / b) for the host side of a launch: triton.cdiv is a constexpr function, about 2 us a call."""
    return -(-a // b)


# Launches after the first of a call signature skip Triton's argument binding (Replay): on by default where Triton
# compiles for CUDA; TUNE_GEMM_REPLAY=0 sends every launch through kernel[grid](...). Not on ROCm: never run there.
REPLAY_LAUNCHES = (not INTERPRETED and torch.version.hip is None
                   and os.environ.get("TUNE_GEMM_REPLAY", "1") != "0")
REPLAYS_PER_KERNEL = 256  # call signatures remembered per kernel; the oldest is dropped past that


class Replay:
    """A launch captured from a first call through Triton's JIT (`kernel[grid](...)`), relaunched on later calls of
    the same call_signature through the compiled kernel's own launcher (`compiled[grid]`). Binding and specializing
    every argument again, which the JIT does at each call, took most of a launch's host time on the H100: 60-66 of
    96-150 us at 4096x4096x512 for a persistent TMA config, the compiled kernel's launcher 21-23 (BENCHMARKS.md,
    thirty-sixth run). A Replay keeps the grid and every argument after the first `leading` ones (sizes, strides,
    and None for the compile-time constants, which the launcher skips), all fixed by the call signature; each call
    passes the leading ones (the matrices, or their descriptors)."""

    __slots__ = ("owners", "runner", "fixed", "template")

    def __init__(self, owners: tuple, runner, fixed: tuple, template=None):
        self.owners = owners  # the config objects its key names by id, kept alive so that no other takes that id
        self.runner = runner
        self.fixed = fixed
        # what the family rebuilds its leading arguments from: a ReplayedTma, or the warp-group kernel's descriptors
        self.template = template

    def __call__(self, *leading) -> None:
        self.runner(*leading, *self.fixed)


def capture(compiled, grid: tuple, args: tuple, leading: int, owners: tuple, template=None) -> Replay | None:
    """The Replay of a launch `kernel[grid](*args, **constants)` that returned `compiled`; None where a parameter past
    `args` is not a compile-time constant (its value would come from the call's keywords), or where there is no
    compiled kernel to relaunch (the interpreter), or no launcher of its own to relaunch it with (a Triton without
    `compiled[grid]`)."""
    params = getattr(getattr(getattr(compiled, "src", None), "fn", None), "params", None)
    if params is None or not hasattr(type(compiled), "__getitem__") or len(params) < len(args):
        return None
    if not all(getattr(param, "is_constexpr", False) for param in params[len(args):]):
        return None
    runner = compiled[(*grid, 1, 1)[:3]]  # the compiled kernel's launcher reads all three grid dimensions
    return Replay(owners, runner, (*args[leading:], *[None] * (len(params) - len(args))), template)


def replays_of(kernel) -> dict:
    """The launches captured for `kernel` (a Triton kernel, or a stand-in that launches one), by the caller's key.
    Kept on the kernel itself, so that they go when it goes (a generated module unloaded), and looked up without
    hashing it (a Triton kernel hashes its source hash, under a lock)."""
    replays = getattr(kernel, "tune_gemm_replays", None)
    if replays is None:
        replays = kernel.tune_gemm_replays = {}
    return replays


def replay_key(owners: tuple, *tensors) -> tuple | None:
    """The key a launch of these config objects (`owners`, named by id) on `tensors` is replayed under; None where
    launches are not replayed (REPLAY_LAUNCHES)."""
    return (*map(id, owners), call_signature(*tensors)) if REPLAY_LAUNCHES else None


def replay_of(kernel, key: tuple | None) -> Replay | None:
    """The Replay `kernel` keeps under `key`, if any."""
    return replays_of(kernel).get(key) if key else None


def remember(kernel, key: tuple, replay: Replay | None) -> None:
    """Keep `replay` (if one was captured) under `key`, dropping the oldest past REPLAYS_PER_KERNEL."""
    if replay is None:
        return
    replays = replays_of(kernel)
    if len(replays) >= REPLAYS_PER_KERNEL:
        del replays[next(iter(replays))]
    replays[key] = replay


def launch_replayed(kernel, leading: tuple, owners: tuple, through_the_jit) -> None:
    """Launch `kernel` on a call whose tensors (or None) are `leading`, its first arguments: replayed after the first
    launch of their call signature and `owners`, which fix the grid, the constants and every later argument. The first
    goes through `through_the_jit()` (jit_launch), so that only it computes those."""
    key = replay_key(owners, *leading)
    replay = replay_of(kernel, key)
    if replay is not None:
        replay(*leading)
        return
    compiled, grid, args = through_the_jit()
    if key:
        remember(kernel, key, capture(compiled, grid, args, len(leading), owners))


def jit_launch(kernel, grid: tuple, args: tuple, **constants) -> tuple:
    """`kernel[grid](*args, **constants)` through Triton's JIT: (the compiled kernel it returns, grid, args)."""
    return kernel[grid](*args, **constants), grid, args


def _tensor_signature(t) -> tuple | None:
    return None if t is None else (t.shape, t.stride(), t.dtype, t.data_ptr() % 16 == 0)


def call_signature(*tensors) -> tuple:
    """What a launch's compiled kernel and every argument but the tensors' addresses follow from: the current device
    (its SM count sizes persistent grids), and each tensor's shape, strides, dtype and whether its address is 16-byte
    aligned (Triton specializes pointers on that, and the TMA family's copies follow it), or None."""
    return (torch.cuda.current_device(), *map(_tensor_signature, tensors))


def _grid(config: TileConfig, M: int, N: int) -> tuple:
    # One program per output tile and K slice, whatever num_ctas: Triton runs each program as a cluster of num_ctas
    # CTAs that split its tile, and tl.program_id counts clusters.
    return (ceil_div(M, config.BLOCK_SIZE_M) * ceil_div(N, config.BLOCK_SIZE_N), config.SPLIT_K)


def partial_dtype(dtype_c):
    """Element type of split-K partial tiles: fp32, or int32 for an integer output (exact sums)."""
    return torch.float32 if dtype_c.is_floating_point else torch.int32


_kept_zero: dict = {}


def _kept_zero_buffer(device, purpose: str, numel: int, dtype):
    """A zeroed buffer of at least `numel` elements for `purpose`, which every launch that uses it leaves zero again:
    allocated once per device, stream, purpose and dtype and reused, so that no memset kernel runs before each
    launch, which at launch-bound sizes would cost what summing inside the GEMM saves. One per stream, since launches
    on two streams may run at once."""
    device = torch.device(device)
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = (device, stream, purpose, dtype)
    buffer = _kept_zero.get(key)
    if buffer is None or buffer.numel() < numel:
        buffer = _kept_zero[key] = torch.zeros(numel, dtype=dtype, device=device)
    return buffer


def arrival_counters(device, tiles: int):
    """Zeroed int32 counters, one per output tile, for FUSED_REDUCE launches on `device`'s current stream: the last
    slice of each tile sets its counter back to zero (summed_partials)."""
    return _kept_zero_buffer(device, "arrivals", tiles, torch.int32)


def running_sums(device, elements: int, dtype):
    """Zeroed running sums (`elements` of them: a whole tile per output tile) for ATOMIC_SUM launches on `device`'s
    current stream, in the accumulator's type: the last slice of each tile sets its sum back to zero
    (summed_partials)."""
    return _kept_zero_buffer(device, "running sums", elements, dtype)


def fused_partials(config: TileConfig, tiles: int, dtype, device) -> tuple:
    """(partials, arrivals) of a launch whose K slices sum their partials inside the GEMM (either family), laid out as
    tile_partials reads them: a slot per tile and K slice (SLOT_SUM), or a running sum per tile (ATOMIC_SUM,
    running_sums), in `dtype`; and the tiles' arrival counters. Every launch leaves the counters and running sums
    zero."""
    tile_size = config.BLOCK_SIZE_M * config.BLOCK_SIZE_N
    if config.fused_reduce == ATOMIC_SUM.value:
        partials = running_sums(device, tiles * tile_size, dtype)
    else:
        partials = torch.empty(tiles * config.SPLIT_K * tile_size, dtype=dtype, device=device)
    return partials, arrival_counters(device, tiles)


def split_buffers(config: TileConfig, M: int, N: int, c) -> tuple:
    """(what the kernel writes as C, partials_ptr, arrivals_ptr) of a launch: C itself without split K; the SPLIT_K
    partial products (M, N each) for the reduction kernel; or with fused_reduce C, the tiles' partials and arrival
    counters (fused_partials)."""
    if config.SPLIT_K == 1:
        return c, None, None
    if config.reduction_kernel:
        return torch.empty((config.SPLIT_K, M, N), dtype=partial_dtype(c.dtype), device=c.device), None, None
    return c, *fused_partials(config, _grid(config, M, N)[0], partial_dtype(c.dtype), c.device)


def launch(kernel, reduce_kernel, config: TileConfig, a, b, c, bias=None, scale_a=None, scale_b=None):
    """C = scale_a scale_b A @ B (+ bias[m] on row m) with one config. A: (M, K), B: (K, N), C: (M, N), any
    strides; the scales (one-element fp32 tensors) only with fp8 inputs, both or neither."""
    M, K = a.shape
    N = b.shape[1]
    has_bias = bias is not None
    has_scales = scale_a is not None
    out, partials, arrivals = split_buffers(config, M, N, c)
    leading = (a, b, out, bias, scale_a, scale_b, partials, arrivals)
    launch_replayed(kernel, leading, (config,), lambda: jit_launch(
        kernel, _grid(config, M, N),
        (*leading, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(-2), out.stride(-1),
         out.stride(0) if out.dim() == 3 else 0, bias.stride(0) if has_bias else 0),
        EVEN_K=K % (config.BLOCK_SIZE_K * config.SPLIT_K) == 0, HAS_BIAS=has_bias, HAS_SCALES=has_scales,
        num_warps=config.num_warps, num_stages=config.num_stages, **dict(config.options)))
    if out is not c:
        reduce_leading = (out, c, bias, scale_a, scale_b)
        launch_replayed(reduce_kernel, reduce_leading, (), lambda: jit_launch(
            reduce_kernel, (ceil_div(M, REDUCE_BLOCK.value), ceil_div(N, REDUCE_BLOCK.value)),
            (*reduce_leading, M, N, out.stride(0), out.stride(1), out.stride(2), c.stride(0), c.stride(1),
             bias.stride(0) if has_bias else 0), HAS_BIAS=has_bias, HAS_SCALES=has_scales))
    return c


def _operand_strides(rows: int, cols: int, column_major: bool) -> tuple:
    return (1, rows) if column_major else (cols, 1)


def compile_config(kernel, reduce_kernel, config: TileConfig, problem: Problem) -> dict:
    """Compile one config for this problem's exact argument specialization, without launching it.

    Returns the compiled kernel's resource use; raises what Triton raises (e.g. OutOfResources)."""
    if INTERPRETED:
        return {}
    mock = triton.runtime.jit.MockTensor
    M, N, K = problem.M, problem.N, problem.K
    out_dtype = partial_dtype(problem.dtype_c) if config.reduction_kernel else problem.dtype_c
    out_strides = (N, 1, M * N) if config.reduction_kernel else (N, 1, 0)
    fused = (mock(partial_dtype(problem.dtype_c)), mock(torch.int32)) if config.fused_reduce else (None, None)
    bias, bias_stride = (mock(problem.dtype_c), 1) if problem.bias else (None, 0)  # as launch() passes them
    scaled, scales = mock_scales(problem)
    resources = loaded_resources(kernel.warmup(
        mock(problem.dtype_a), mock(problem.dtype_b), mock(out_dtype), bias, *scales, *fused, M, N, K,
        *_operand_strides(M, K, problem.col_a), *_operand_strides(K, N, problem.col_b), *out_strides, bias_stride,
        EVEN_K=K % (config.BLOCK_SIZE_K * config.SPLIT_K) == 0, HAS_BIAS=problem.bias, HAS_SCALES=scaled,
        num_warps=config.num_warps, num_stages=config.num_stages, grid=_grid(config, M, N), **dict(config.options),
    ))
    if config.reduction_kernel:
        reduce_kernel.warmup(mock(out_dtype), mock(problem.dtype_c), bias, *scales, M, N, M * N, N, 1, N, 1,
                             bias_stride, HAS_BIAS=problem.bias, HAS_SCALES=scaled, grid=(1, 1))._init_handles()
    return resources


def mock_scales(problem: Problem) -> tuple:
    """(whether the launch passes fp8 scales, the two scale arguments' stand-ins for compiling ahead)."""
    mock = triton.runtime.jit.MockTensor
    scaled = is_fp8(problem.dtype_a)
    return scaled, ((mock(torch.float32), mock(torch.float32)) if scaled else (None, None))


def loaded_resources(compiled) -> dict:
    """Load a compiled kernel's binary (raises OutOfResources when it cannot run) and return its resource use."""
    compiled._init_handles()
    return {"registers": compiled.n_regs, "spills": compiled.n_spills, "shared_bytes": compiled.metadata.shared}


def init_values(shape: tuple, init_type: str, generator, device):
    """fp32 values for a tensor stored as `shape`, as the ROCm script's --init_type names them."""
    if init_type == "randn":  # normal distribution
        return torch.randn(shape, generator=generator, device=device)
    if init_type == "hpl":  # uniform in [-0.5, 0.5), as HPL fills its matrices
        return torch.rand(shape, generator=generator, device=device) - 0.5
    if init_type == "trig_float":  # sin of each element's position in storage order: deterministic
        count = shape[0] * shape[1]
        return torch.arange(count, dtype=torch.float64, device=device).sin().float().reshape(shape)
    if init_type == "zeros":  # timing only: zeros flatter a kernel and hide wrong results
        return torch.zeros(shape, device=device)
    raise ValueError(f"unknown init_type {init_type!r}")


INT_RANGE = 127  # integer operands (and the int32 bias) take values in [-127, 127]: int8's range


def is_fp8(dtype) -> bool:
    return dtype.is_floating_point and dtype.itemsize == 1


def quantize(values, dtype) -> tuple:
    """(values in `dtype`, their per-tensor fp32 scale or None). fp8: the values divided by a scale that maps
    their largest magnitude onto the type's largest finite value, so that they use its whole range (one scale
    per tensor, as torch._scaled_mm takes); integers: the values spread over [-INT_RANGE, INT_RANGE] and
    rounded, no scale (the kernel has none for them); other types: the values cast."""
    if dtype.is_floating_point and not is_fp8(dtype):
        return values.to(dtype), None
    peak = values.abs().max().clamp(min=torch.finfo(torch.float32).tiny)  # zeros stay zeros
    if is_fp8(dtype):
        scale = (peak / torch.finfo(dtype).max).reshape(1)
        return (values / scale).to(dtype), scale
    return (values * (INT_RANGE / peak)).round().to(dtype), None


def make_operand(rows: int, cols: int, column_major: bool, dtype, device, generator, init_type: str = "randn"):
    """(a (rows, cols) matrix filled as `init_type` says, stored column-major when asked; its scale or None)."""
    values, scale = quantize(init_values((cols, rows) if column_major else (rows, cols), init_type, generator, device),
                             dtype)
    return (values.t() if column_major else values), scale


def make_operands(problem: Problem, device, seed: int = 0, init_type: str = "randn") -> tuple:
    """The launcher's arguments: (a, b, c), then the bias vector (M values, C's dtype) when the problem has one;
    fp8 inputs: always (a, b, c, bias or None, scale_a, scale_b)."""
    generator = torch.Generator(device=device).manual_seed(seed)
    a, scale_a = make_operand(problem.M, problem.K, problem.col_a, problem.dtype_a, device, generator, init_type)
    b, scale_b = make_operand(problem.K, problem.N, problem.col_b, problem.dtype_b, device, generator, init_type)
    c = torch.empty((problem.M, problem.N), dtype=problem.dtype_c, device=device)
    bias = quantize(init_values((1, problem.M), init_type, generator, device)[0], problem.dtype_c)[0] if (
        problem.bias) else None
    if scale_a is not None:
        return a, b, c, bias, scale_a, scale_b
    return (a, b, c) if bias is None else (a, b, c, bias)


def relative_error(c, a, b, bias=None, scale_a=None, scale_b=None) -> float:
    """||C - R|| / ||R|| with R = A@B (+ bias[m] on row m) computed in float64 from the dequantized inputs
    (A times scale_a, B times scale_b, when given); NaN anywhere in C gives inf."""
    a, b = a.double(), b.double()
    if scale_a is not None:
        a, b = a * scale_a.double(), b * scale_b.double()
    reference = a @ b
    if bias is not None:
        reference += bias.double()[:, None]
    result = c.double()
    if not torch.isfinite(result).all():
        return float("inf")
    return (torch.linalg.norm(result - reference) / torch.linalg.norm(reference)).item()


def poison(c) -> None:
    """Fill C with values no kernel computes, so that an element left unwritten fails the check: NaN, or the
    most negative integer for an integer C (far outside any product of INT_RANGE values)."""
    c.fill_(float("nan") if c.dtype.is_floating_point else torch.iinfo(c.dtype).min)


def check_config(launcher, problem: Problem, device, seed: int = 0) -> float:
    """Run one launcher on fresh random inputs with C poisoned first; returns the relative error.

    The inputs are always randn, whatever init_type the timing used: on zeros any kernel passes."""
    a, b, c, *extra = make_operands(problem, device, seed)  # extra: [], [bias] or [bias or None, scale_a, scale_b]
    poison(c)
    launcher(a, b, c, *extra)
    return relative_error(c, a, b, *extra)


def test_gemm(launchers: dict, problem: Problem, device, time_kernels: bool) -> int:
    """Check every config against float64 (and time it on a GPU); returns the number of failures."""
    failures = 0
    for name, launcher in launchers.items():
        error = check_config(launcher, problem, device)
        ok = error <= problem.tolerance
        failures += not ok
        line = f"{'PASS' if ok else 'FAIL'} {name}: relative error {error:.2e}"
        if time_kernels:
            operands = make_operands(problem, device)
            ms = triton.testing.do_bench(functools.partial(launcher, *operands), return_mode="median")
            line += f", {ms * 1e3:.1f} us, {2 * problem.M * problem.N * problem.K / ms / 1e9:.1f} TFLOP/s"
        print(line)
    return failures


def main(launchers: dict, compilers: dict, problem: Problem) -> int:
    parser = argparse.ArgumentParser(description=f"Configs tuned for {problem.M}x{problem.N}x{problem.K}")
    parser.add_argument("--interpret", action="store_true", help="run on the CPU under the Triton interpreter")
    parser.add_argument("--jobs", type=int, default=os.cpu_count(), help="compile threads")
    parser.add_argument("--config", action="append", help="only this config (repeatable)")
    args = parser.parse_args()
    chosen = {name: launcher for name, launcher in launchers.items() if not args.config or name in args.config}
    device = "cpu" if INTERPRETED else "cuda"
    if not INTERPRETED:
        with ThreadPool(args.jobs) as pool:
            pool.map(lambda name: compilers[name](), list(chosen))
    return 1 if test_gemm(chosen, problem, device, time_kernels=not INTERPRETED) else 0
