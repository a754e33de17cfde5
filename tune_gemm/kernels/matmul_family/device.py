"""The plain family's device code: one output tile of C = A @ B per program (matmul_tile), its split-K slices'
partial sums (finish_split_tile, or the reduction kernel splitk_reduce_tile), and the helpers every family's kernels
share (add_row_bias, apply_scales, grouped_tile, dot_accumulate).

The module reads TRITON_INTERPRET when it is first imported (as every Triton module does when its kernels are
decorated): set it before importing to run on the CPU.
"""

import os

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
    loads took 83.4 against 86.9 us at 1x28672x4096."""
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
        # 60.5-60.7 against 59.7-59.9 us at 128x4096x14336 in the TMA family with 4 slices
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
