# ---------------------------------------------------------------------------------------------
# Persistent TMA kernel family (Hopper and newer): one program per SM (per cluster of num_ctas SMs)
# walks the output tiles, loading A and B tiles through tensor descriptors (the tensor memory
# accelerator) and storing C through one when the copy engine can address C, through masked pointer
# stores otherwise. The generator copies this source after the plain family into generated modules
# that hold PERSISTENT_TMA configs.
# ---------------------------------------------------------------------------------------------
import functools  # noqa: I001 (the block below is cut out by the generator: it stays apart)

from triton.language.extra.cuda import gdc_wait
from triton.tools.tensor_descriptor import TensorDescriptor

# family-imports-begin (the generator drops these lines: the plain family above defines the names)
from dataclasses import dataclass, replace

import torch
import triton
import triton.language as tl

from tune_gemm.kernels.matmul_family import (ATOMIC_SUM, INTERPRETED, TileConfig, add_row_bias, apply_scales, arrival_counters,
                               arrives_last, capture, ceil_div, dot_accumulate, fused_partials, grouped_tile,
                               jit_launch, launch_replayed, loaded_resources, mock_scales, remember, replay_key,
                               replay_of, running_sums, summed_partials, tile_partials)

# family-imports-end

TMA_ALIGNMENT_BYTES = 16  # the copy engine reads rows whose start addresses are 16-byte aligned
# A padded copy's rows are whole 128-byte lines: where rows start off a line, each row of a tile the copy engine
# loads straddles two. At 8191x2049x4095 (fp16, H100) the GEMM on rows padded to 16 bytes made 2.6 times the L2
# read requests and took 304 us, on rows padded to 128 bytes 233 us (BENCHMARKS.md, eleventh run).
PADDED_ROW_BYTES = 128
INTERPRETER_PROGRAMS = 3  # persistent programs under the interpreter: few, so that each walks several tiles


@triton.jit
def store_output_tile(c, tile, off_m, off_n, M, N, stride_cm, stride_cn, C_TMA: tl.constexpr):
    """Store `tile` (fp32 or int32) into C at row off_m, column off_n, in C's dtype. C_TMA: `c` is C's descriptor,
    and the copy engine drops what lies past C's edges; otherwise `c` points at C's first element and the store
    is masked to the real M x N, so nothing past a strided or sliced view of C is written."""
    if C_TMA:
        c.store([off_m, off_n], tile.to(c.dtype))
    else:
        rows = off_m + tl.arange(0, tile.shape[0])
        cols = off_n + tl.arange(0, tile.shape[1])
        tl.store(c + rows[:, None] * stride_cm + cols[None, :] * stride_cn, tile.to(c.dtype.element_ty),
                 mask=(rows[:, None] < M) & (cols[None, :] < N))


@triton.jit
def tile_epilogue(c, acc, tile_id, num_pid_m, num_pid_n, bias_ptr, scale_a_ptr, scale_b_ptr, M, N, stride_cm,
                  stride_cn, stride_bias, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, C_TMA: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
                  HAS_BIAS: tl.constexpr, HAS_SCALES: tl.constexpr):
    """Scale, add the bias to and store the finished accumulator of output tile `tile_id`."""
    pid_m, pid_n = grouped_tile(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M)
    epilogue_at(c, acc, pid_m * BLOCK_SIZE_M, pid_n * BLOCK_SIZE_N, bias_ptr, scale_a_ptr, scale_b_ptr, M, N,
                stride_cm, stride_cn, stride_bias, C_TMA, EPILOGUE_SUBTILE, HAS_BIAS, HAS_SCALES)


@triton.jit
def epilogue_at(c, acc, off_m, off_n, bias_ptr, scale_a_ptr, scale_b_ptr, M, N, stride_cm, stride_cn, stride_bias,
                C_TMA: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr, HAS_BIAS: tl.constexpr,
                HAS_SCALES: tl.constexpr):
    """Scale, add the bias to and store a finished accumulator whose first element is C's (off_m, off_n)."""
    acc = apply_scales(acc, scale_a_ptr, scale_b_ptr, HAS_SCALES)
    acc = add_row_bias(acc, bias_ptr, off_m + tl.arange(0, acc.shape[0]), M, stride_bias, HAS_BIAS)
    if EPILOGUE_SUBTILE:
        # two stores of half the tile: half the shared memory for the output (the descriptor's staging
        # buffer, or the layout conversion before a pointer store), more for the pipeline
        halves = tl.permute(tl.reshape(acc, (acc.shape[0], 2, acc.shape[1] // 2)), (0, 2, 1))
        left, right = tl.split(halves)
        store_output_tile(c, left, off_m, off_n, M, N, stride_cm, stride_cn, C_TMA)
        store_output_tile(c, right, off_m, off_n + left.shape[1], M, N, stride_cm, stride_cn, C_TMA)
    else:
        store_output_tile(c, acc, off_m, off_n, M, N, stride_cm, stride_cn, C_TMA)


@triton.jit
def k_range_product(a_desc, b_desc, acc, off_m, off_n, k_first, k_last, BLOCK_SIZE_K: tl.constexpr,
                    A_COL: tl.constexpr, B_COL: tl.constexpr, NUM_STAGES: tl.constexpr = None):
    """acc + the product of A's rows off_m.. and B's columns off_n.. over the K tiles k_first..k_last-1, pipelined
    NUM_STAGES deep (None: the launch's num_stages)."""
    for k_tile in tl.range(k_first, k_last, num_stages=NUM_STAGES):
        off_k = k_tile * BLOCK_SIZE_K
        acc = dot_accumulate(load_operand(a_desc, off_m, off_k, A_COL), load_operand(b_desc, off_k, off_n, B_COL),
                             acc)
    return acc


@triton.jit
def load_operand(desc, row, col, COL: tl.constexpr):
    """The tile of an operand at (row, col) through its descriptor; a column-major operand's descriptor describes
    its transpose, so the tile is read there and transposed back in registers."""
    return desc.load([col, row]).T if COL else desc.load([row, col])


@triton.jit
def k_range_product_with_edge(a_desc, b_desc, b_edge, acc, acc_edge, off_m, off_n, edge_col, k_tiles,
                              BLOCK_SIZE_K: tl.constexpr, A_COL: tl.constexpr, B_COL: tl.constexpr):
    """(acc + the product of A's rows off_m.. and B's columns off_n.., acc_edge + the product of the same rows and
    B's columns edge_col.., through b_edge) over every K tile: each tile of A is loaded once for both.

    The narrow product is issued first: at 8192x272x4096 (fp16, H100, 128x256 tiles) a fused tile took 62.2 us so,
    69.7 us with the wide one first (BENCHMARKS.md, fourteenth run)."""
    for k_tile in tl.range(0, k_tiles):
        off_k = k_tile * BLOCK_SIZE_K
        a = load_operand(a_desc, off_m, off_k, A_COL)
        acc_edge = dot_accumulate(a, load_operand(b_edge, off_k, edge_col, B_COL), acc_edge)
        acc = dot_accumulate(a, load_operand(b_desc, off_k, off_n, B_COL), acc)
    return acc, acc_edge


@triton.jit
def stream_k_tiles_of(tiles, programs):
    """How many of the last output tiles the stream-K part shares out by K iterations: the partial last wave and
    one full wave before it, so that every program's share is at least one tile's K loop and each tile is split
    between two programs at most. 0 when the tiles fill whole waves, or less than one."""
    return 0 if tiles <= programs or tiles % programs == 0 else tiles % programs + programs


@triton.jit
def tma_persistent_tile(
    a_desc, b_desc, c, bias_ptr, scale_a_ptr, scale_b_ptr, workspace, arrivals, b_edge, c_edge, b_edge2, c_edge2,
    edge_claims, a_lower, b_right, c_right, c_lower, c_corner, M, N, K, stride_cm, stride_cn, stride_bias,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr, A_COL: tl.constexpr, B_COL: tl.constexpr,
    C_TMA: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr, STREAM_K: tl.constexpr,
    HAS_BIAS: tl.constexpr, HAS_SCALES: tl.constexpr, AFTER_COPIES: tl.constexpr = False, EDGE_N: tl.constexpr = 0,
    EDGE_STAGES: tl.constexpr = None, EDGE_FUSED: tl.constexpr = False, EDGE_N2: tl.constexpr = 0,
    EDGE_STAGES2: tl.constexpr = None, SPLIT_K: tl.constexpr = 1, FUSED_REDUCE: tl.constexpr = 0,
    EDGE_SPLIT: tl.constexpr = 1, TAIL_SPLIT: tl.constexpr = 1, EXTRA_M: tl.constexpr = 0, EXTRA_N: tl.constexpr = 0,
):
    """C = scale_a scale_b A @ B (+ bias) by a persistent grid: program p computes tiles p, p + P, p + 2P, ...

    A column-major operand is described by its transpose (the copy engine needs a unit inner stride)
    and transposed back in registers. Reads past the edges return zeros, so the K loop needs no mask.
    C is a descriptor when C_TMA, else a pointer with strides stride_cm, stride_cn (see store_output_tile).
    fp8 inputs (HAS_SCALES) accumulate in fp32 and are scaled before the bias; int8 inputs accumulate
    in int32, exactly, into an int32 C.

    STREAM_K: the tiles that would leave a last wave partly idle are shared out by K iterations instead
    (stream_k_part); `workspace` and `arrivals` are its scratch (stream_k_scratch), None otherwise.

    TAIL_SPLIT > 1 (STREAM_K off): the tiles past the last whole wave (one tile per program) run last, each in
    TAIL_SPLIT K slices, units of work that the programs walk as split-K slices (split_k_part), adding their partials
    into a running sum per tile (ATOMIC_SUM); `workspace` and `arrivals` are their scratch (tail_scratch).

    SPLIT_K > 1: every tile's K loop is cut into SPLIT_K slices, each a unit of work of its own, and the slices sum
    their partial tiles themselves (split_k_part), through a running sum per tile if FUSED_REDUCE is ATOMIC_SUM, else
    through a slot per slice (SLOT_SUM); `workspace` and `arrivals` are their scratch (split_k_scratch). Not with
    STREAM_K or EDGE_N.

    EDGE_N: the columns past the last whole BLOCK_SIZE_N tile are computed in tiles EDGE_N wide (edge_part),
    through `b_edge` and `c_edge`, B's and C's descriptors for such tiles (C itself when not C_TMA), their K loop
    pipelined EDGE_STAGES deep, the programs claiming them from the counter `edge_claims`; 0: they are covered by
    whole tiles, as every other column, and the three are None. EDGE_FUSED: each edge tile is computed with the last
    whole tile of its rows instead, in one K loop (edge_part). EDGE_N2: the edge is cut in two widths, EDGE_N then
    EDGE_N2 columns (edge_columns), the second's tiles through `b_edge2` and `c_edge2`, pipelined EDGE_STAGES2
    deep, or fused with the last whole tile of their rows and the first's with the one before it; else 0 and the
    two are None. EDGE_SPLIT > 1 (edges apart): each edge tile's K loop is cut into that many slices, each claimed as
    a unit of work, which sum their partial tiles into a running sum per edge tile in `workspace` through the
    counters in `arrivals` (edge_part; edge_scratch).

    EXTRA_M, EXTRA_N: a tile side that is not a power of two is computed in two parts, BLOCK_SIZE - EXTRA and EXTRA
    (block_parts: 192 = 128 + 64), each a power of two, up to four products per K step (compound_tile): A's rows of
    the lower part through `a_lower`, B's columns of the right part through `b_right`, and C's right, lower and corner
    parts through `c_right`, `c_lower` and `c_corner` (each C itself when not C_TMA); None where there is no such part.
    Only with whole tiles: no SPLIT_K, STREAM_K, TAIL_SPLIT or EDGE_N.

    AFTER_COPIES: the launch copied A or B in the kernels just before this one and launched this one as the last
    one's programmatic dependent (pdl_options), so that its programs start while the copy's last ones finish; they
    wait here until the copies are complete and their writes visible."""
    if AFTER_COPIES:
        gdc_wait()
    start = tl.program_id(axis=0)
    programs = tl.num_programs(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    if EDGE_N:
        num_pid_n = N // BLOCK_SIZE_N
        if EDGE_FUSED:  # edge_part computes the last whole column (two of them with EDGE_N2) with the edge
            num_pid_n -= 2 if EDGE_N2 else 1
    else:
        num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    acc_dtype = tl.int32 if a_desc.dtype == tl.int8 else tl.float32
    whole_tiles = num_pid_m * num_pid_n
    if STREAM_K:
        whole_tiles -= stream_k_tiles_of(whole_tiles, programs)
    if TAIL_SPLIT > 1:  # the launch splits a tail only where the tiles overrun a whole wave (tail_slices)
        whole_tiles -= whole_tiles % programs
    if SPLIT_K > 1:
        split_k_part(a_desc, b_desc, c, bias_ptr, scale_a_ptr, scale_b_ptr, workspace, arrivals, M, N, stride_cm,
                     stride_cn, stride_bias, num_pid_m, num_pid_n, 0, whole_tiles, k_tiles, acc_dtype, BLOCK_SIZE_M,
                     BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, SPLIT_K, FUSED_REDUCE, A_COL, B_COL, C_TMA,
                     EPILOGUE_SUBTILE, HAS_BIAS, HAS_SCALES)
    else:
        # The epilogue recomputes its tile from a counter that trails the loop's, so that with the loops
        # flattened (no warp specialization) the compiler can overlap one tile's stores with the next's loads.
        # A compound tile's loops stay apart: flattened, ptxas serializes its products (compound_tile).
        COMPOUND: tl.constexpr = EXTRA_M + EXTRA_N > 0
        tile_id_c = start - programs
        for tile_id in tl.range(start, whole_tiles, programs, flatten=not (WARP_SPECIALIZE or COMPOUND),
                                warp_specialize=WARP_SPECIALIZE):
            pid_m, pid_n = grouped_tile(tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M)
            if COMPOUND:
                compound_tile(a_desc, a_lower, b_desc, b_right, c, c_right, c_lower, c_corner, bias_ptr, scale_a_ptr,
                              scale_b_ptr, M, N, stride_cm, stride_cn, stride_bias, pid_m * BLOCK_SIZE_M,
                              pid_n * BLOCK_SIZE_N, k_tiles, acc_dtype, BLOCK_SIZE_M - EXTRA_M, BLOCK_SIZE_N - EXTRA_N,
                              EXTRA_M, EXTRA_N, BLOCK_SIZE_K, A_COL, B_COL, C_TMA, EPILOGUE_SUBTILE, HAS_BIAS,
                              HAS_SCALES)
            else:
                acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=acc_dtype)
                acc = k_range_product(a_desc, b_desc, acc, pid_m * BLOCK_SIZE_M, pid_n * BLOCK_SIZE_N, 0, k_tiles,
                                      BLOCK_SIZE_K, A_COL, B_COL)
                tile_id_c += programs
                tile_epilogue(c, acc, tile_id_c, num_pid_m, num_pid_n, bias_ptr, scale_a_ptr, scale_b_ptr, M, N,
                              stride_cm, stride_cn, stride_bias, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M, C_TMA,
                              EPILOGUE_SUBTILE, HAS_BIAS, HAS_SCALES)
    if TAIL_SPLIT > 1:
        split_k_part(a_desc, b_desc, c, bias_ptr, scale_a_ptr, scale_b_ptr, workspace, arrivals, M, N, stride_cm,
                     stride_cn, stride_bias, num_pid_m, num_pid_n, whole_tiles, num_pid_m * num_pid_n - whole_tiles,
                     k_tiles, acc_dtype, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, TAIL_SPLIT,
                     ATOMIC_SUM, A_COL, B_COL, C_TMA, EPILOGUE_SUBTILE, HAS_BIAS, HAS_SCALES)
    if STREAM_K:
        stream_k_part(a_desc, b_desc, c, bias_ptr, scale_a_ptr, scale_b_ptr, workspace, arrivals, M, N, stride_cm,
                      stride_cn, stride_bias, whole_tiles, num_pid_m, num_pid_n, k_tiles, acc_dtype, BLOCK_SIZE_M,
                      BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, A_COL, B_COL, C_TMA, EPILOGUE_SUBTILE, HAS_BIAS,
                      HAS_SCALES)
    if EDGE_N:
        # claims 0..num_pid_m*EDGE_SPLIT-1 are the first edge's units (row tiles, each in EDGE_SPLIT K slices), the next
        # as many the second's; each edge tile has its running sum and counter, the first edge's tiles first
        edge_col = N // BLOCK_SIZE_N * BLOCK_SIZE_N
        claim = tl.atomic_add(edge_claims, 1)
        claim = edge_part(a_desc, b_desc, b_edge, c, c_edge, edge_claims, claim, 0, workspace, arrivals, bias_ptr,
                          scale_a_ptr, scale_b_ptr, M, N, stride_cm, stride_cn, stride_bias, num_pid_n * BLOCK_SIZE_N,
                          edge_col, num_pid_m, k_tiles, acc_dtype, BLOCK_SIZE_M, BLOCK_SIZE_N, EDGE_N, BLOCK_SIZE_K,
                          EDGE_STAGES, EDGE_FUSED, EDGE_SPLIT, A_COL, B_COL, C_TMA, EPILOGUE_SUBTILE, HAS_BIAS,
                          HAS_SCALES)
        if EDGE_N2:
            sums2, arrivals2 = workspace, arrivals
            if EDGE_SPLIT > 1:
                sums2, arrivals2 = workspace + num_pid_m * BLOCK_SIZE_M * EDGE_N, arrivals + num_pid_m
            edge_part(a_desc, b_desc, b_edge2, c, c_edge2, edge_claims, claim, num_pid_m * EDGE_SPLIT, sums2,
                      arrivals2, bias_ptr, scale_a_ptr, scale_b_ptr, M, N, stride_cm, stride_cn, stride_bias,
                      (num_pid_n + 1) * BLOCK_SIZE_N, edge_col + EDGE_N, num_pid_m, k_tiles, acc_dtype, BLOCK_SIZE_M,
                      BLOCK_SIZE_N, EDGE_N2, BLOCK_SIZE_K, EDGE_STAGES2, EDGE_FUSED, EDGE_SPLIT, A_COL, B_COL, C_TMA,
                      EPILOGUE_SUBTILE, HAS_BIAS, HAS_SCALES)


@triton.jit
def compound_tile(a_desc, a_lower, b_desc, b_right, c, c_right, c_lower, c_corner, bias_ptr, scale_a_ptr, scale_b_ptr,
                  M, N, stride_cm, stride_cn, stride_bias, off_m, off_n, k_tiles, acc_dtype: tl.constexpr,
                  MAIN_M: tl.constexpr, MAIN_N: tl.constexpr, EXTRA_M: tl.constexpr, EXTRA_N: tl.constexpr,
                  BLOCK_SIZE_K: tl.constexpr, A_COL: tl.constexpr, B_COL: tl.constexpr, C_TMA: tl.constexpr,
                  EPILOGUE_SUBTILE: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_SCALES: tl.constexpr):
    """The output tile at (off_m, off_n) of (MAIN_M + EXTRA_M) x (MAIN_N + EXTRA_N), each part a power of two, as up to
    four products per K step that share their loads: the main part, the EXTRA_N columns right of it, the EXTRA_M rows
    below it and the corner between (a part is absent where its extra is 0).

    Triton's blocks are powers of two, so a 192x192 tile is 128x128, 128x64, 64x128 and 64x64. Where such tiles fill
    the SMs' waves better than power-of-two ones, they pay: at 3072x1536x4096 (fp16, H100) 128 tiles of 192x192 are
    one wave of 132 SMs and took 60.8-60.9 us, against 90.9-92.5 for 144 tiles of 128x256 (BENCHMARKS.md,
    twenty-third run). The narrow products go first and the main one last: 66.0-66.8 us the other way round. In a
    loop flattened with the tile loop, ptxas serializes the products ("wgmma.mma_async instructions are serialized
    due to non wgmma instructions defining accumulator registers"): 88.6-89.3 us. The parts are issued as narrower
    matrix instructions (64 and 32 columns at 192x192, with 8 warps), which keep the tensor pipe less busy than a
    whole tile's: 71.8% against cuBLAS's 82.6% at 3072x1536x4096, both 128 CTAs fed the same bytes from L2
    (BENCHMARKS.md, twenty-fifth run). The warp-group family (WARP_GROUPS, tune_gemm/kernels/warp_group_family.py) computes such
    tiles with a warp group per 64 rows and instructions as wide as each part: 56.0 us there (twenty-sixth run)."""
    acc = tl.zeros((MAIN_M, MAIN_N), dtype=acc_dtype)
    if EXTRA_N:
        acc_right = tl.zeros((MAIN_M, EXTRA_N), dtype=acc_dtype)
    if EXTRA_M:
        acc_lower = tl.zeros((EXTRA_M, MAIN_N), dtype=acc_dtype)
        if EXTRA_N:
            acc_corner = tl.zeros((EXTRA_M, EXTRA_N), dtype=acc_dtype)
    for k_tile in tl.range(0, k_tiles):
        off_k = k_tile * BLOCK_SIZE_K
        a = load_operand(a_desc, off_m, off_k, A_COL)
        b = load_operand(b_desc, off_k, off_n, B_COL)
        if EXTRA_N:
            b_extra = load_operand(b_right, off_k, off_n + MAIN_N, B_COL)
            acc_right = dot_accumulate(a, b_extra, acc_right)
        if EXTRA_M:
            a_extra = load_operand(a_lower, off_m + MAIN_M, off_k, A_COL)
            acc_lower = dot_accumulate(a_extra, b, acc_lower)
            if EXTRA_N:
                acc_corner = dot_accumulate(a_extra, b_extra, acc_corner)
        acc = dot_accumulate(a, b, acc)
    epilogue_at(c, acc, off_m, off_n, bias_ptr, scale_a_ptr, scale_b_ptr, M, N, stride_cm, stride_cn, stride_bias,
                C_TMA, EPILOGUE_SUBTILE, HAS_BIAS, HAS_SCALES)
    if EXTRA_N:
        epilogue_at(c_right, acc_right, off_m, off_n + MAIN_N, bias_ptr, scale_a_ptr, scale_b_ptr, M, N, stride_cm,
                    stride_cn, stride_bias, C_TMA, EPILOGUE_SUBTILE, HAS_BIAS, HAS_SCALES)
    if EXTRA_M:
        epilogue_at(c_lower, acc_lower, off_m + MAIN_M, off_n, bias_ptr, scale_a_ptr, scale_b_ptr, M, N, stride_cm,
                    stride_cn, stride_bias, C_TMA, EPILOGUE_SUBTILE, HAS_BIAS, HAS_SCALES)
        if EXTRA_N:
            epilogue_at(c_corner, acc_corner, off_m + MAIN_M, off_n + MAIN_N, bias_ptr, scale_a_ptr, scale_b_ptr, M,
                        N, stride_cm, stride_cn, stride_bias, C_TMA, EPILOGUE_SUBTILE, HAS_BIAS, HAS_SCALES)


@triton.jit
def edge_part(a_desc, b_desc, b_edge, c, c_edge, edge_claims, claim, first_claim, edge_sums, edge_arrivals, bias_ptr,
              scale_a_ptr, scale_b_ptr, M, N, stride_cm, stride_cn, stride_bias, whole_col, edge_col, num_pid_m,
              k_tiles, acc_dtype: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
              EDGE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, EDGE_STAGES: tl.constexpr, EDGE_FUSED: tl.constexpr,
              EDGE_SPLIT: tl.constexpr, A_COL: tl.constexpr, B_COL: tl.constexpr, C_TMA: tl.constexpr,
              EPILOGUE_SUBTILE: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_SCALES: tl.constexpr):
    """C's columns edge_col.. (at most EDGE_N of them) in one tile per BLOCK_SIZE_M rows. A tile as wide as the
    others would spend most of its matrix instructions on columns past N; one EDGE_N wide reads the same rows of A
    but multiplies a fraction of the zeros. Apart, its K loop pipelined EDGE_STAGES deep, an edge tile's loads of A
    set its time, a second pass over A's rows.

    EDGE_FUSED: each edge tile is computed with the whole tile of its rows at column whole_col, in one K loop that
    loads each tile of A once for both.

    An edge tile (or a fused pair) costs a fraction of a whole tile (or a whole one and a fraction). Dealt out round
    robin after the whole tiles, they would go to programs that had one whole tile more as much as to those that
    had one fewer. Instead each program claims them from the counter `edge_claims` (zero at launch) once its whole
    tiles are done, until none is left: those that finish first take the most. At 4096x4112x4096 (fp16, H100) edge
    tiles apart took 209-213 us against 220-224 us dealt round robin (BENCHMARKS.md, twelfth run). Claims
    first_claim.. are this edge's, one per row of tiles; `claim` is the program's current one, and the first it
    holds past this edge's is returned (the next edge's, if any).

    EDGE_SPLIT > 1 (apart): a claim is one of EDGE_SPLIT K slices of an edge tile, a tile's slices claimed one after
    another. Where the whole tiles fill whole waves, a few edge tiles would run as one more wave on a few SMs, each a
    whole pass over its rows of A; in slices they keep every SM busy for a fraction of that. Each slice adds its partial
    tile into the tile's running sum in `edge_sums` and counts itself in on its counter in `edge_arrivals`; the last
    to arrive finishes the tile and leaves both zero (arrives_last, summed_partials)."""
    while claim < first_claim + num_pid_m * EDGE_SPLIT:
        row = (claim - first_claim) // EDGE_SPLIT
        k_slice = claim - first_claim - row * EDGE_SPLIT
        off_m = row * BLOCK_SIZE_M
        acc_edge = tl.zeros((BLOCK_SIZE_M, EDGE_N), dtype=acc_dtype)
        if EDGE_FUSED:
            acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=acc_dtype)
            acc, acc_edge = k_range_product_with_edge(a_desc, b_desc, b_edge, acc, acc_edge, off_m, whole_col,
                                                      edge_col, k_tiles, BLOCK_SIZE_K, A_COL, B_COL)
            epilogue_at(c, acc, off_m, whole_col, bias_ptr, scale_a_ptr, scale_b_ptr, M, N, stride_cm, stride_cn,
                        stride_bias, C_TMA, EPILOGUE_SUBTILE, HAS_BIAS, HAS_SCALES)
        else:
            # balanced slices: none empty where EDGE_SPLIT <= k_tiles (edge_slices)
            acc_edge = k_range_product(a_desc, b_edge, acc_edge, off_m, edge_col, k_slice * k_tiles // EDGE_SPLIT,
                                       (k_slice + 1) * k_tiles // EDGE_SPLIT, BLOCK_SIZE_K, A_COL, B_COL, EDGE_STAGES)
        finished = True
        if EDGE_SPLIT > 1:
            sums = tile_partials(edge_sums, row, BLOCK_SIZE_M, EDGE_N, EDGE_SPLIT, ATOMIC_SUM)
            finished = arrives_last(acc_edge, sums, k_slice, edge_arrivals + row, EDGE_SPLIT, ATOMIC_SUM)
            if finished:
                acc_edge = summed_partials(sums, edge_arrivals + row, BLOCK_SIZE_M, EDGE_N, EDGE_SPLIT, ATOMIC_SUM)
        if finished:
            epilogue_at(c_edge, acc_edge, off_m, edge_col, bias_ptr, scale_a_ptr, scale_b_ptr, M, N, stride_cm,
                        stride_cn, stride_bias, C_TMA, False, HAS_BIAS, HAS_SCALES)
        claim = tl.atomic_add(edge_claims, 1)
    return claim


@triton.jit
def stream_k_part(a_desc, b_desc, c, bias_ptr, scale_a_ptr, scale_b_ptr, workspace, arrivals, M, N, stride_cm,
                  stride_cn, stride_bias, first_tile, num_pid_m, num_pid_n, k_tiles, acc_dtype: tl.constexpr,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, A_COL: tl.constexpr, B_COL: tl.constexpr, C_TMA: tl.constexpr,
                  EPILOGUE_SUBTILE: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_SCALES: tl.constexpr):
    """Tiles first_tile.. as one run of (tile, K tile) iterations, cut into equal consecutive shares, one per program.

    A share starts and ends anywhere in a tile, so a tile may be split between two programs (never more:
    stream_k_tiles_of makes every share at least one tile long): the end of one program's share holds its
    first K tiles, the start of the next program's share its last ones. Both store their partial sums in
    their own workspace slot, then count themselves in on the tile's arrival counter; whichever comes
    second adds the other's slot to its own and finishes the tile. Nobody waits for anybody, so this holds
    in any order the programs run (the interpreter runs them one after another). A share walked as one loop
    pipelined across its tiles was slower still: at 3072x1536x4096 (fp16, H100) 92.2 us at best (128x128 tiles)
    against this design's 90.7 (128x256) (BENCHMARKS.md, twenty-fifth run)."""
    start = tl.program_id(axis=0)
    programs = tl.num_programs(axis=0)
    iterations = (num_pid_m * num_pid_n - first_tile) * k_tiles
    # the products overflow 32 bits for K past a few million; the shares' ends do not
    share_first = (start.to(tl.int64) * iterations // programs).to(tl.int32)
    share_end = ((start.to(tl.int64) + 1) * iterations // programs).to(tl.int32)
    rows = tl.arange(0, BLOCK_SIZE_M)[:, None] * BLOCK_SIZE_N
    cols = tl.arange(0, BLOCK_SIZE_N)[None, :]
    slot_size = BLOCK_SIZE_M * BLOCK_SIZE_N
    for tile in range(share_first // k_tiles, tl.cdiv(share_end, k_tiles)):
        k_first = max(share_first - tile * k_tiles, 0)
        k_last = min(share_end - tile * k_tiles, k_tiles)
        pid_m, pid_n = grouped_tile(first_tile + tile, num_pid_m, num_pid_n, GROUP_SIZE_M)
        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=acc_dtype)
        acc = k_range_product(a_desc, b_desc, acc, pid_m * BLOCK_SIZE_M, pid_n * BLOCK_SIZE_N, k_first, k_last,
                              BLOCK_SIZE_K, A_COL, B_COL)
        if (k_first != 0) | (k_last != k_tiles):
            # program p's slots: 2p for the tile its share starts in the middle of (that tile's last K tiles),
            # 2p + 1 for the one it ends in the middle of (that tile's first K tiles)
            mine = 2 * start + (k_first == 0).to(tl.int32)
            theirs = tl.where(k_first == 0, 2 * start + 2, 2 * start - 1)
            tl.store(workspace + mine * slot_size + rows + cols, acc)
            tl.debug_barrier()  # every thread's part of the slot is written before the count releases it
            finish = tl.atomic_add(arrivals + tile, 1, sem="acq_rel", scope="gpu") == 1
            if finish:
                acc += tl.load(workspace + theirs * slot_size + rows + cols, cache_modifier=".cg")
        else:
            finish = k_last == k_tiles  # true: the whole tile is in this share
        if finish:
            tile_epilogue(c, acc, first_tile + tile, num_pid_m, num_pid_n, bias_ptr, scale_a_ptr, scale_b_ptr, M, N,
                          stride_cm, stride_cn, stride_bias, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M, C_TMA,
                          EPILOGUE_SUBTILE, HAS_BIAS, HAS_SCALES)


@triton.jit
def split_k_part(a_desc, b_desc, c, bias_ptr, scale_a_ptr, scale_b_ptr, partials, arrivals, M, N, stride_cm,
                 stride_cn, stride_bias, num_pid_m, num_pid_n, first_tile, tiles, k_tiles, acc_dtype: tl.constexpr,
                 BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                 GROUP_SIZE_M: tl.constexpr, SPLIT_K: tl.constexpr, FUSED_REDUCE: tl.constexpr, A_COL: tl.constexpr,
                 B_COL: tl.constexpr, C_TMA: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr, HAS_BIAS: tl.constexpr,
                 HAS_SCALES: tl.constexpr):
    """The K loops of `tiles` tiles from first_tile on (in grouped order) in SPLIT_K slices of consecutive K tiles, each
    slice a unit of work that the persistent programs walk as they walk tiles: where the tiles alone leave SMs idle
    (128x4096 in 32 tiles of 128x128 on 132 SMs), the slices fill them. The whole output (SPLIT_K > 1), or the tiles
    past the last whole wave (TAIL_SPLIT).

    Units run tile by tile (a tile's slices, then the next tile's), so a tile's slices run side by side on
    neighbouring programs, finish together, and the last of them reads the others' partials while they are fresh
    in L2: on the H100 (fp16, 128x128 tiles in 4 slices) 128x4096x14336 took 59.7-59.9 us so, against 61.1-61.2
    with all tiles' first slices first (BENCHMARKS.md, seventeenth run). Each slice puts its partial tile where the
    tile's partials go (tile_partials: its own slot with SLOT_SUM, the tile's running sum with ATOMIC_SUM), then
    counts itself in on the tile's counter in `arrivals`; the last to arrive takes the sum (summed_partials),
    finishes the tile (scales, bias, store) and leaves the counter, and a running sum, zero for the next launch.
    Nobody waits for anybody, so this holds in any order the programs run (the interpreter runs them one after
    another)."""
    start = tl.program_id(axis=0)
    programs = tl.num_programs(axis=0)
    k_share = tl.cdiv(k_tiles, SPLIT_K)
    for unit in tl.range(start, tiles * SPLIT_K, programs):
        tile_id = unit // SPLIT_K  # counted from first_tile: the scratch holds these tiles' partials only
        k_slice = unit - tile_id * SPLIT_K
        pid_m, pid_n = grouped_tile(first_tile + tile_id, num_pid_m, num_pid_n, GROUP_SIZE_M)
        k_first = k_slice * k_share
        acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=acc_dtype)
        acc = k_range_product(a_desc, b_desc, acc, pid_m * BLOCK_SIZE_M, pid_n * BLOCK_SIZE_N, k_first,
                              min(k_first + k_share, k_tiles), BLOCK_SIZE_K, A_COL, B_COL)
        tile_sums = tile_partials(partials, tile_id, BLOCK_SIZE_M, BLOCK_SIZE_N, SPLIT_K, FUSED_REDUCE)
        if arrives_last(acc, tile_sums, k_slice, arrivals + tile_id, SPLIT_K, FUSED_REDUCE):
            total = summed_partials(tile_sums, arrivals + tile_id, BLOCK_SIZE_M, BLOCK_SIZE_N, SPLIT_K, FUSED_REDUCE)
            epilogue_at(c, total, pid_m * BLOCK_SIZE_M, pid_n * BLOCK_SIZE_N, bias_ptr, scale_a_ptr, scale_b_ptr, M,
                        N, stride_cm, stride_cn, stride_bias, C_TMA, EPILOGUE_SUBTILE, HAS_BIAS, HAS_SCALES)


@functools.lru_cache
def _sm_count(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def persistent_programs(device, tiles: int, num_ctas: int = 1) -> int:
    """One program per SM, never more than there are tiles. With num_ctas > 1 a program is a cluster of num_ctas
    CTAs, each on its own SM (tl.program_id and tl.num_programs count clusters): one program per num_ctas SMs.
    The interpreter stands in INTERPRETER_PROGRAMS SMs."""
    sms = INTERPRETER_PROGRAMS if INTERPRETED else _sm_count(torch.device(device).index or 0)
    return max(1, min(sms // num_ctas, tiles))


def _tma_readable(matrix, row_bytes: int = TMA_ALIGNMENT_BYTES) -> bool:
    """Whether the copy engine reads `matrix` as it is, its rows starting on multiples of `row_bytes` (at least 16)."""
    inner_unit = matrix.stride(1) == 1
    return inner_unit and (matrix.stride(0) * matrix.element_size()) % row_bytes == 0 and (
        matrix.data_ptr() % TMA_ALIGNMENT_BYTES == 0)


def _padded_columns(cols: int, element_bytes: int) -> int:
    """Row length, in elements, of a padded copy: rounded up to whole 128-byte lines (PADDED_ROW_BYTES)."""
    per_row = PADDED_ROW_BYTES // element_bytes
    return ceil_div(cols, per_row) * per_row


PAD_BLOCK = 1024  # elements per program: with 4 warps, the fastest of four blocks tried at the odd public shape
INT32_OFFSETS = 2**31  # element offsets below this fit the 32-bit arithmetic the copy is fastest in


@triton.jit
def pad_rows_part(src, dst, program, rows, cols, src_stride_r, src_stride_c, PADDED_COLS: tl.constexpr,
                  BLOCK: tl.constexpr, WIDE: tl.constexpr):
    """Block `program` of dst (rows x PADDED_COLS, contiguous) in flat order: src (rows x cols, any strides) where
    a column exists, zero in the padding. Flat order keeps every store whole and aligned; the padded row length is a
    constant so that splitting a flat index into (row, column) needs no division at run time."""
    flat = program * BLOCK + tl.arange(0, BLOCK)
    if WIDE:
        flat = flat.to(tl.int64)
    r = flat // PADDED_COLS
    c = flat % PADDED_COLS
    values = tl.load(src + r * src_stride_r + c * src_stride_c, mask=(r < rows) & (c < cols), other=0.0)
    tl.store(dst + flat, values, mask=r < rows)


@triton.jit
def pad_rows_kernel(src0, dst0, src1, dst1, rows0, cols0, src_stride_r0, src_stride_c0, blocks0,
                    rows1, cols1, src_stride_r1, src_stride_c1,
                    PADDED_COLS0: tl.constexpr, PADDED_COLS1: tl.constexpr, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    """The padding copies of one launch in one kernel: programs 0..blocks0-1 copy the first matrix, the rest the
    second (src1 is None when only one matrix needs it)."""
    program = tl.program_id(axis=0)
    if program < blocks0:
        pad_rows_part(src0, dst0, program, rows0, cols0, src_stride_r0, src_stride_c0, PADDED_COLS0, BLOCK, WIDE)
    elif src1 is not None:
        pad_rows_part(src1, dst1, program - blocks0, rows1, cols1, src_stride_r1, src_stride_c1, PADDED_COLS1, BLOCK,
                      WIDE)


TRANSPOSE_BLOCK = 64  # a square tile of B per program of the K-major copy


@triton.jit
def k_major_copy_kernel(src, dst, K, N, stride_k, stride_n, dst_stride, PADDED_K, BLOCK: tl.constexpr):
    """dst[n, k] = src[k, n] for one BLOCK x BLOCK tile, zero in dst's padding columns (K <= k < PADDED_K). Triton
    lays the loaded tile out along src's unit stride and the stored one along dst's rows, turning it through shared
    memory between the two, so that both sides are read and written whole."""
    n = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    k = tl.program_id(axis=1) * BLOCK + tl.arange(0, BLOCK)
    tile = tl.load(src + k[:, None].to(tl.int64) * stride_k + n[None, :].to(tl.int64) * stride_n,
                   mask=(k[:, None] < K) & (n[None, :] < N), other=0.0)
    tl.store(dst + n[:, None].to(tl.int64) * dst_stride + k[None, :], tl.trans(tile),
             mask=(n[:, None] < N) & (k[None, :] < PADDED_K))


def k_major_copy(b):
    """A row-major B (K x N) copied into the rows of B^T (N x K, rows padded to whole 128-byte lines): the K-major
    layout in which wgmma reads 8-bit and tf32 operands. Given such a row-major B, Triton re-lays each tile out in
    shared memory inside the GEMM instead: at 4096^3 fp8 that GEMM took 308.9 us, against 97.7 with B column-major
    (BENCHMARKS.md, twelfth run); in fp32 (tf32) 1719.8 us against 356.1, the copy 50.3 (thirty-first run). Returns
    B's column-major view of the copy."""
    K, N = b.shape
    padded = torch.empty((N, _padded_columns(K, b.element_size())), dtype=b.dtype, device=b.device)
    launch_replayed(k_major_copy_kernel, (b, padded), (), lambda: jit_launch(
        k_major_copy_kernel, (ceil_div(N, TRANSPOSE_BLOCK), ceil_div(padded.shape[1], TRANSPOSE_BLOCK)),
        (b, padded, K, N, b.stride(0), b.stride(1), padded.stride(0), padded.shape[1]), BLOCK=TRANSPOSE_BLOCK))
    return padded[:, :K].t()


def copies_b_k_major(element_bytes: int, column_major: bool) -> bool:
    """Whether the launch copies B into K-major order (k_major_copy): an 8-bit or 32-bit B that is not column-major
    (wgmma reads only 16-bit operands in either order)."""
    return element_bytes != 2 and not column_major


@dataclass(frozen=True)
class PaddingCopy:
    """One operand the copy engine cannot address, and the row-padded buffer it is copied to."""

    source: object
    padded: object

    @property
    def blocks(self) -> int:
        return ceil_div(self.padded.numel(), PAD_BLOCK)

    def sizes(self) -> tuple:
        """The kernel's rows, cols and source strides for this copy."""
        return (*self.source.shape, *self.source.stride())

    def needs_wide_offsets(self) -> bool:
        rows, cols = self.source.shape
        source_extent = (rows - 1) * abs(self.source.stride(0)) + (cols - 1) * abs(self.source.stride(1)) + 1
        return max(self.blocks * PAD_BLOCK, source_extent) >= INT32_OFFSETS


def pad_rows(copies: list) -> None:
    """Run the copies (one or two) as one kernel launch."""
    first, second = copies[0], (copies[1] if len(copies) > 1 else None)
    matrices = (first.source, first.padded, *((second.source, second.padded) if second else (None, None)))
    launch_replayed(pad_rows_kernel, matrices, (), lambda: jit_launch(
        pad_rows_kernel, (sum(copy.blocks for copy in copies),),
        (*matrices, *first.sizes(), first.blocks, *(second.sizes() if second else (0, 0, 0, 0))),
        PADDED_COLS0=first.padded.shape[1], PADDED_COLS1=second.padded.shape[1] if second else 1, BLOCK=PAD_BLOCK,
        WIDE=any(copy.needs_wide_offsets() for copy in copies)))


def tma_views(matrices: list, align_rows: bool = False) -> list:
    """Each matrix (rows, cols) itself when the copy engine can address it, else a copy whose rows are padded to
    128 bytes (a view of the original shape). align_rows: copy rows that start 16-byte aligned but off a 128-byte
    line too (Config.ALIGN_ROWS). The copies of one launch run as one kernel: odd leading dimensions
    of A and B pay for it inside the timed launch, as they would in use. At 4095x4097x1023 (fp16, H100) it takes
    13.8 us, Inductor's two padding kernels 17.5 us, torch's two copies 27.2 us (BENCHMARKS.md, eighth run)."""
    views, copies = [], []
    for matrix in matrices:
        if _tma_readable(matrix, PADDED_ROW_BYTES if align_rows else TMA_ALIGNMENT_BYTES):
            views.append(matrix)
            continue
        rows, cols = matrix.shape
        padded = torch.empty((rows, _padded_columns(cols, matrix.element_size())), dtype=matrix.dtype,
                             device=matrix.device)
        views.append(padded[:, :cols])
        copies.append(PaddingCopy(matrix, padded))
    if copies:
        pad_rows(copies)
    return views


def operand_matrix(matrix, column_major: bool):
    """The (rows, cols) matrix the copy engine reads for an operand: a column-major one's transpose."""
    return matrix.t() if column_major else matrix


def is_column_major(matrix) -> bool:
    return matrix.stride(0) == 1 and matrix.stride(1) != 1


@dataclass(frozen=True)
class TmaVariant:
    """The family's knobs that the host side of a launch depends on (the kernel binds them as constants)."""

    epilogue_subtile: bool = False
    stream_k: bool = False
    swap_ab: bool = False  # compute C^T = B^T A^T: the launch passes the transposed views of the three matrices
    align_rows: bool = False  # copy an A or B whose rows start off 128-byte lines too (tma_views)
    narrow_edge: bool = False  # compute the columns past the last whole tile in narrower tiles (edge_columns)
    fused_edge: bool = False  # with narrow_edge: each narrower tile beside a whole one of its rows, in its K loop
    split_edge: bool = False  # with narrow_edge: the narrower tiles apart, their K loops in slices (edge_slices)
    split_tail: bool = False  # the tiles past the last whole wave in K slices (tail_slices); not with stream_k


NARROWEST_EDGE = 16  # the narrowest tile Triton's dot takes


def edge_columns(n: int, block_n: int) -> tuple[int, ...]:
    """Widths of the edge tiles (tma_persistent_tile's EDGE_N, and EDGE_N2 for a second) of a NARROW_EDGE launch on N
    columns: the columns past the last whole BLOCK_N tile rounded up to a power of two, at least NARROWEST_EDGE.
    Where that is a whole tile, two: half a tile, then the rest so rounded, if narrower than the half; a 152-column
    edge beside 256-column tiles is 128 + 32. () where whole tiles cover N, or where the edge tiles would be as wide as
    a whole one."""
    rest = n % block_n
    if not rest:
        return ()
    width = _edge_width(rest)
    if width < block_n:
        return (width,)
    half = block_n // 2
    second = _edge_width(rest - half)
    return (half, second) if second < half else ()


def _edge_width(columns: int) -> int:
    return max(NARROWEST_EDGE, triton.next_power_of_2(columns))


EDGE_SLICE_K_TILES = 4  # the fewest K tiles in a slice of an edge tile: fewer would be mostly the pipeline's fill


def k_slices(programs: int, tiles: int, k_tiles: int, least_k_tiles: int) -> int:
    """K slices per tile where `tiles` tiles are cut so that every program takes one unit, each of at least
    least_k_tiles K tiles; 1 (no split) where that leaves fewer than two, or where there are no tiles to cut."""
    if not tiles:
        return 1
    slices = min(programs // tiles, k_tiles // least_k_tiles)
    return slices if slices >= 2 else 1


def edge_slices(programs: int, edge_tiles: int, k_tiles: int) -> int:
    """K slices per edge tile of a split-edge launch (tma_persistent_tile's EDGE_SPLIT): as many as give every program
    one unit, at least EDGE_SLICE_K_TILES K tiles each; 1 (no split) where that leaves fewer than two. At
    4096x4248x4096 (fp16, H100) 16 edge tiles of 256x32 after four whole waves of 256x128 tiles, in 8 slices, took
    the launch from 236.9-240.0 us (edge tiles fused) to 228.1-231.6 (BENCHMARKS.md, twenty-first run)."""
    return k_slices(programs, edge_tiles, k_tiles, EDGE_SLICE_K_TILES)


def edge_split(config: TileConfig, variant: TmaVariant, widths: tuple[int, ...], M: int, K: int, programs: int) -> int:
    """EDGE_SPLIT of a launch on an M x K A: edge_slices for a split-edge variant's edge tiles, else 1."""
    if not variant.split_edge:
        return 1
    return edge_slices(programs, len(widths) * ceil_div(M, config.BLOCK_SIZE_M), ceil_div(K, config.BLOCK_SIZE_K))


def edge_scratch(config: TileConfig, widths: tuple[int, ...], M: int, dtype, device) -> tuple:
    """(workspace, arrivals) of a split-edge launch: a zeroed running sum per edge tile, in the accumulator's type,
    the first width's tiles first, and their zeroed arrival counters; the last slice of each tile leaves both zero."""
    rows = ceil_div(M, config.BLOCK_SIZE_M)
    return (running_sums(device, rows * config.BLOCK_SIZE_M * sum(widths), dtype),
            arrival_counters(device, rows * len(widths)))


def _accumulator_dtype(input_dtype):
    """Element type of partial tiles in a launch's scratch: the kernel's accumulator (int32 for int8 inputs)."""
    return torch.int32 if input_dtype == torch.int8 else torch.float32


TAIL_SLICE_K_TILES = 8  # the fewest K tiles in a slice of a tile past the last whole wave


def tiles_past_whole_waves(tiles: int, programs: int) -> int:
    """The tiles a persistent launch of `programs` programs runs after its last whole wave: none where the tiles fill
    whole waves or less than one."""
    return tiles % programs if tiles > programs else 0


def tail_slices(tiles: int, programs: int, k_tiles: int) -> int:
    """K slices per tile past the last whole wave of a split-tail launch (tma_persistent_tile's TAIL_SPLIT): as many as
    give every program one unit, at least TAIL_SLICE_K_TILES K tiles each; 1 (no split) where that leaves fewer than
    two, or where the tiles fill whole waves or less than one. At 5120x5120x4096 (fp16, H100) 800 tiles of 128x256 make
    six waves of 132 and 8 tiles more; in 8 slices the launch took 330.8-335.0 us, against 357.4-362.7 with whole
    tiles and 345.5-350.0 with stream-K (BENCHMARKS.md, twenty-second run)."""
    return k_slices(programs, tiles_past_whole_waves(tiles, programs), k_tiles, TAIL_SLICE_K_TILES)


def tail_split(config: TileConfig, variant: TmaVariant, M: int, N: int, K: int, programs: int) -> int:
    """TAIL_SPLIT of a launch on an M x K A and a K x N B: tail_slices for a split-tail variant, else 1."""
    if not variant.split_tail:
        return 1
    return tail_slices(_tiles(config, M, N), programs, ceil_div(K, config.BLOCK_SIZE_K))


def tail_scratch(config: TileConfig, tiles: int, programs: int, dtype, device) -> tuple:
    """(workspace, arrivals) of a split-tail launch: a zeroed running sum per tile past the last whole wave, in the
    accumulator's type, and their zeroed arrival counters; the last slice of each tile leaves both zero."""
    tail = tiles_past_whole_waves(tiles, programs)
    return (running_sums(device, tail * config.BLOCK_SIZE_M * config.BLOCK_SIZE_N, dtype),
            arrival_counters(device, tail))


def stream_k_scratch(config: TileConfig, programs: int, dtype, device) -> tuple:
    """(workspace, arrivals) of a stream-K launch (tma_persistent_tile): two partial-tile slots per program, in the
    accumulator's type, and a zeroed arrival counter per tile the stream-K part may share out (fewer than two
    waves of them)."""
    workspace = torch.empty((2 * programs, config.BLOCK_SIZE_M * config.BLOCK_SIZE_N), dtype=dtype, device=device)
    return workspace, torch.zeros(2 * programs, dtype=torch.int32, device=device)


def split_k_scratch(config: TileConfig, tiles: int, dtype, device) -> tuple:
    """(workspace, arrivals) of a split-K launch (split_k_part): the tiles' partials, in the accumulator's type, and
    arrival counters (fused_partials)."""
    return fused_partials(config, tiles, dtype, device)


def launch_scratch(config: TileConfig, variant: TmaVariant, widths: tuple[int, ...], slices: int, tail: int, M: int,
                   N: int, programs: int, dtype, device) -> tuple:
    """(workspace, arrivals) of one launch, in the accumulator's `dtype`: a split K's, split edge tiles' (`slices`
    > 1), a split tail's (`tail` > 1) or stream-K's scratch, or (None, None) for a launch that takes none."""
    if config.SPLIT_K > 1:
        return split_k_scratch(config, _tiles(config, M, N), dtype, device)
    if slices > 1:
        return edge_scratch(config, widths, M, dtype, device)
    if tail > 1:
        return tail_scratch(config, _tiles(config, M, N), programs, dtype, device)
    return stream_k_scratch(config, programs, dtype, device) if variant.stream_k else (None, None)


def block_parts(side: int) -> tuple[int, int]:
    """A tile side as the kernel computes it: (main, extra), main the largest power of two in it, extra the rest, 0 or a
    power of two at least NARROWEST_EDGE (192 is 128 + 64: compound_tile). Raises ValueError for any other side."""
    main = 1 << (side.bit_length() - 1)
    extra = side - main
    if extra and (extra < NARROWEST_EDGE or extra & (extra - 1)):
        raise ValueError(f"a tile side of {side} is neither a power of two nor the sum of two, each at least "
                         f"{NARROWEST_EDGE}")
    return main, extra


def output_block(rows: int, cols: int, epilogue_subtile: bool) -> list:
    """The block of C's descriptor for a rows x cols output tile (or part of one): half as wide with EPILOGUE_SUBTILE,
    which stores it in two halves."""
    return [rows, cols // 2 if epilogue_subtile else cols]


def is_compound(config: TileConfig) -> bool:
    """Whether a tile side is two parts (block_parts), computed by compound_tile."""
    return any(block_parts(side)[1] for side in (config.BLOCK_SIZE_M, config.BLOCK_SIZE_N))


def _tiles(config: TileConfig, M: int, N: int) -> int:
    return ceil_div(M, config.BLOCK_SIZE_M) * ceil_div(N, config.BLOCK_SIZE_N)


def persistent_grid(config: TileConfig, M: int, N: int, device) -> tuple:
    """The persistent grid: one program per SM, never more than the units of work (tiles, times their K slices)."""
    return (persistent_programs(device, _tiles(config, M, N) * config.SPLIT_K, config.num_ctas),)


def rebased(descriptor: TensorDescriptor, base) -> TensorDescriptor:
    """`descriptor` over another matrix of the same shape, strides and dtype: a copy, without the constructor's
    checks, which matrices of one call signature pass alike (about 3 us a descriptor)."""
    copy = object.__new__(type(descriptor))
    copy.__dict__.update(descriptor.__dict__, base=base)
    return copy


_NO_MATRIX = object()  # C in a template of launch arguments (TmaArguments.template)


def _on(operand, matrix):
    """A launch's operand for another call: a descriptor over `matrix`, `matrix` itself where the operand is a matrix
    (C stored through pointers), None where there is none."""
    if operand is None:
        return None
    return rebased(operand, matrix) if isinstance(operand, TensorDescriptor) else matrix


@dataclass(frozen=True)
class EdgeOperands:
    """What a NARROW_EDGE launch passes for its edge tiles, one entry per edge width (edge_columns)."""

    widths: tuple[int, ...] = ()  # the kernel's EDGE_N (and EDGE_N2)
    b_descs: tuple = ()  # B's descriptor for the tiles of each width
    c_args: tuple = ()  # C's descriptor for them, or C itself where C is stored through pointers
    claims: object = None  # the counter the programs claim edge tiles from, zero at launch

    def kernel_arguments(self) -> tuple:
        """The kernel's b_edge, c_edge, b_edge2, c_edge2 and edge_claims: None where there is no such edge."""
        pairs = list(zip(self.b_descs, self.c_args)) + [(None, None)] * (2 - len(self.widths))
        return (*(operand for pair in pairs for operand in pair), self.claims)

    def on(self, b_view, c, claims=None) -> "EdgeOperands":
        """The same operands over other matrices (see TmaArguments.on), with another claims counter."""
        return EdgeOperands(self.widths, tuple(_on(desc, b_view) for desc in self.b_descs),
                            tuple(_on(arg, c) for arg in self.c_args), claims)


@dataclass(frozen=True)
class CompoundOperands:
    """What a launch passes for the parts of a compound tile (compound_tile): the kernel's a_lower, b_right, c_right,
    c_lower and c_corner, None where the tile has no such part, and its EXTRA_M and EXTRA_N."""

    extra_m: int = 0
    extra_n: int = 0
    a_lower: object = None  # A's descriptor for the rows of the lower part
    b_right: object = None  # B's descriptor for the columns of the right part
    c_parts: tuple = (None, None, None)  # C's descriptors (or C itself) for the right, lower and corner parts

    def kernel_arguments(self) -> tuple:
        return (self.a_lower, self.b_right, *self.c_parts)

    def on(self, a_view, b_view, c) -> "CompoundOperands":
        """The same operands over other matrices (see TmaArguments.on)."""
        if not (self.extra_m or self.extra_n):
            return self
        return CompoundOperands(self.extra_m, self.extra_n, _on(self.a_lower, a_view), _on(self.b_right, b_view),
                                tuple(_on(arg, c) for arg in self.c_parts))

    def options(self) -> dict:
        """EXTRA_M and EXTRA_N where set: kernels specialized before compound tiles existed stay the same."""
        return {name: extra for name, extra in (("EXTRA_M", self.extra_m), ("EXTRA_N", self.extra_n)) if extra}


def tile_operands(config: TileConfig, epilogue_subtile: bool, a_block, b_block, c_block) -> tuple:
    """(A's, B's and C's operand for a tile's main part, CompoundOperands for the other parts) of a launch, the launch's
    and the compile-ahead's alike: a_block(rows) and b_block(cols) make A's and B's descriptors for a part's rows or
    columns, c_block(rows, cols, epilogue_subtile) C's (or return C itself where C is stored through pointers)."""
    main_m, extra_m = block_parts(config.BLOCK_SIZE_M)
    main_n, extra_n = block_parts(config.BLOCK_SIZE_N)
    main = (a_block(main_m), b_block(main_n), c_block(main_m, main_n, epilogue_subtile))
    if not (extra_m or extra_n):
        return (*main, CompoundOperands())
    c_parts = (c_block(main_m, extra_n, epilogue_subtile) if extra_n else None,
               c_block(extra_m, main_n, epilogue_subtile) if extra_m else None,
               c_block(extra_m, extra_n, epilogue_subtile) if extra_m and extra_n else None)
    return (*main, CompoundOperands(extra_m, extra_n, a_block(extra_m) if extra_m else None,
                                    b_block(extra_n) if extra_n else None, c_parts))


@dataclass(frozen=True)
class OperandViews:
    """A and B as a launch's descriptors read them: each operand_matrix of the caller's matrix or of its copy."""

    a: object
    b: object
    a_col: bool  # whether A (B) is read column-major: `a` (`b`) is its transpose
    b_col: bool
    copied: bool  # whether a copy (K-major or padding) made either of them


def tma_operands(variant: TmaVariant, a, b) -> OperandViews:
    """A and B as the copy engine reads them, copied where it must be (a row-major 8-bit or fp32 B into K-major order,
    k_major_copy; operands the copy engine cannot address or, with variant.align_rows, whose rows start off 128-byte
    lines, padded: tma_views). What is copied follows from the call_signature."""
    b_copy = k_major_copy(b) if copies_b_k_major(b.element_size(), is_column_major(b)) else b
    a_col, b_col = is_column_major(a), is_column_major(b_copy)
    operands = [operand_matrix(a, a_col), operand_matrix(b_copy, b_col)]
    a_view, b_view = views = tma_views(operands, variant.align_rows)
    copied = b_copy is not b or any(view is not operand for view, operand in zip(views, operands))
    return OperandViews(a_view, b_view, a_col, b_col, copied)


def edge_claims(device):
    """The zeroed counter a NARROW_EDGE launch's programs claim edge tiles from."""
    return torch.zeros(1, dtype=torch.int32, device=device)


@dataclass(frozen=True)
class TmaArguments:
    """What a launch passes for A, B and C: built on the host at every call."""

    a_desc: TensorDescriptor
    b_desc: TensorDescriptor
    c: object  # C's descriptor when c_tma, else C itself
    stride_cm: int | None  # None with a descriptor: unused, and kept out of the kernel's specialization
    stride_cn: int | None
    a_col: bool
    b_col: bool
    c_tma: bool
    after_copies: bool  # a copy (K-major or padding) runs just before the GEMM (see pdl_options)
    edges: EdgeOperands
    parts: CompoundOperands

    def on(self, views: OperandViews | None, c, claims=None) -> "TmaArguments":
        """These arguments for another call of the same call_signature: each descriptor over the same part of that
        call's operand views (tma_operands) or C, C itself where C is stored through pointers, and the edge tiles'
        `claims` counter (edge_claims) where there are edge tiles."""
        a_view, b_view = (views.a, views.b) if views else (None, None)
        return TmaArguments(_on(self.a_desc, a_view), _on(self.b_desc, b_view), _on(self.c, c), self.stride_cm,
                            self.stride_cn, self.a_col, self.b_col, self.c_tma, self.after_copies,
                            self.edges.on(b_view, c, claims), self.parts.on(a_view, b_view, c))

    def template(self) -> "TmaArguments":
        """These arguments over no caller's matrix, as a Replay keeps them (`on` puts a call's matrices in)."""
        return self.on(None, _NO_MATRIX)

    def leading(self, bias, scale_a, scale_b, workspace=None, arrivals=None) -> tuple:
        """The kernel's arguments before M: the matrices' descriptors (or C), the bias, scales and scratch."""
        return (self.a_desc, self.b_desc, self.c, bias, scale_a, scale_b, workspace, arrivals,
                *self.edges.kernel_arguments(), *self.parts.kernel_arguments())


def tma_arguments(config: TileConfig, variant: TmaVariant, a, b, c) -> TmaArguments:
    """The descriptors of one launch, over A and B as tma_operands reads them (and copies them)."""
    views = tma_operands(variant, a, b)
    bm, bn, bk = config.BLOCK_SIZE_M, config.BLOCK_SIZE_N, config.BLOCK_SIZE_K
    widths = edge_columns(b.shape[1], bn) if variant.narrow_edge else ()
    c_tma = _tma_readable(c)
    if c_tma:
        def c_block(rows, cols, subtile=False):
            return TensorDescriptor.from_tensor(c, output_block(rows, cols, subtile))
        stride_cm = stride_cn = None
    else:
        def c_block(rows, cols, subtile=False):
            return c
        stride_cm, stride_cn = c.stride()

    def a_block(rows):
        return TensorDescriptor.from_tensor(views.a, [bk, rows] if views.a_col else [rows, bk])

    def b_block(cols):
        return TensorDescriptor.from_tensor(views.b, [cols, bk] if views.b_col else [bk, cols])
    edges = EdgeOperands(widths, tuple(b_block(width) for width in widths),
                         tuple(c_block(bm, width) for width in widths), edge_claims(c.device) if widths else None)
    a_desc, b_desc, c_arg, parts = tile_operands(config, variant.epilogue_subtile, a_block, b_block, c_block)
    return TmaArguments(a_desc, b_desc, c_arg, stride_cm, stride_cn, views.a_col, views.b_col, c_tma,
                        views.copied and not INTERPRETED, edges, parts)


@dataclass(frozen=True)
class ReplayedTma:
    """What a replayed TMA launch (a Replay's template) builds again at each call: its arguments over the call's
    matrices (a TmaArguments.template), and its scratch (launch_scratch for the launch's sizes)."""

    arguments: TmaArguments
    scratch: functools.partial

    def leading(self, variant: TmaVariant, a, b, c, bias, scale_a, scale_b) -> tuple:
        """The leading arguments of a launch on these matrices, after their copies, if the launch makes any."""
        claims = edge_claims(c.device) if self.arguments.edges.widths else None
        return self.arguments.on(tma_operands(variant, a, b), c, claims).leading(bias, scale_a, scale_b,
                                                                                  *self.scratch())


def edge_stages(config: TileConfig, edge_n: int) -> int:
    """Pipeline depth of the edge tiles' K loop: as deep as the shared memory of the whole tiles' stages holds. An
    edge tile's stage is a fraction of a whole tile's, so at the same depth too few bytes are in flight to cover
    the latency of the loads."""
    return config.num_stages * (config.BLOCK_SIZE_M + config.BLOCK_SIZE_N) // (config.BLOCK_SIZE_M + edge_n)


def edge_options(config: TileConfig, variant: TmaVariant, widths: tuple[int, ...], n: int, slices: int = 1) -> dict:
    """The kernel's EDGE_N and EDGE_STAGES (and EDGE_N2 and EDGE_STAGES2 for a second edge width), or the widths and
    EDGE_FUSED where variant.fused_edge and N has a whole tile to fuse each edge with, and EDGE_SPLIT where the edge
    tiles run in `slices` > 1 K slices (edge_split); passed only when set: kernels specialized before NARROW_EDGE
    existed, or before it had two widths or slices, stay the same."""
    fused = variant.fused_edge and n >= len(widths) * config.BLOCK_SIZE_N
    options = {"EDGE_FUSED": True} if fused and widths else {}
    for suffix, width in zip(("", "2"), widths):
        options[f"EDGE_N{suffix}"] = width
        if not fused:
            options[f"EDGE_STAGES{suffix}"] = edge_stages(config, width)
    if slices > 1:
        options["EDGE_SPLIT"] = slices
    return options


def tail_options(slices: int) -> dict:
    """The kernel's TAIL_SPLIT where the tiles past the last whole wave run in `slices` > 1 K slices (tail_split);
    passed only when set, so that kernels specialized before the split existed stay the same."""
    return {"TAIL_SPLIT": slices} if slices > 1 else {}


def pdl_options(after_copies: bool) -> dict:
    """Launch options of a GEMM that follows its padding copy: a programmatic dependent launch (Hopper+), whose
    programs wait for the copy inside the kernel (AFTER_COPIES) instead of behind it in the stream, which hides the
    gap between the two kernels: at 4095x4097x1023 (fp16, H100) a launch took 75.3-76.0 us so against 76.6-77.3 us
    (BENCHMARKS.md, tenth run). The interpreter, which knows no grid dependencies, never gets them."""
    return {"AFTER_COPIES": True, "launch_pdl": True} if after_copies else {}


def launch_tma(kernel, config: TileConfig, variant: TmaVariant, a, b, c, bias=None, scale_a=None, scale_b=None):
    """C = scale_a scale_b A @ B (+ bias[m] on row m) with one persistent TMA config. A: (M, K), B: (K, N),
    C: (M, N), any strides; the scales (one-element fp32 tensors) only with fp8 inputs, both or neither.

    C is written in place: through a descriptor when the copy engine can address it, else through masked
    pointer stores. A padded copy of C would cost a copy back out after the kernel (and one in before it,
    to keep the caller's poison in a tile the kernel missed): about 30 us of a 190 us launch at 4095x4097.

    variant.swap_ab: the kernel computes C^T = B^T A^T on the transposed views, so C^T is written in place too.
    config.SPLIT_K > 1 (with fused_reduce): each tile's K loop runs in that many slices (split_k_part).
    variant.split_tail: the tiles past the last whole wave do, in tail_slices slices."""
    result = c  # the caller's C, also where the kernel writes its transpose
    if variant.swap_ab:
        if bias is not None:
            raise ValueError("SWAP_AB computes C^T, whose columns a bias on the rows of C would fall on: no bias")
        a, b, c = b.t(), a.t(), c.t()
    key = replay_key((config, variant), a, b, c, bias, scale_a, scale_b)
    replay = replay_of(kernel, key)
    if replay is not None:
        replay(*replay.template.leading(variant, a, b, c, bias, scale_a, scale_b))
        return result
    last_wave = variant.stream_k or variant.split_tail
    if config.SPLIT_K > 1 and (config.reduction_kernel or last_wave or variant.narrow_edge):
        raise ValueError("the TMA family splits K with FUSED_REDUCE (the slices sum their partials themselves), "
                         "without STREAM_K and NARROW_EDGE")
    if last_wave and variant.narrow_edge:
        raise ValueError("STREAM_K shares out the tiles of the last wave; NARROW_EDGE is another way: not both")
    if variant.stream_k and variant.split_tail:
        raise ValueError("stream-K and the split tail are two ways of sharing out the last wave: not both")
    if is_compound(config) and (config.SPLIT_K > 1 or last_wave or variant.narrow_edge):
        raise ValueError(f"a {config.BLOCK_SIZE_M}x{config.BLOCK_SIZE_N} tile (two parts on a side) is computed whole: "
                         "no SPLIT_K, STREAM_K or NARROW_EDGE")
    M, K = a.shape
    N = b.shape[1]
    args = tma_arguments(config, variant, a, b, c)
    grid = persistent_grid(config, M, N, c.device)
    slices = edge_split(config, variant, args.edges.widths, M, K, grid[0])
    tail = tail_split(config, variant, M, N, K, grid[0])
    scratch = functools.partial(launch_scratch, config, variant, args.edges.widths, slices, tail, M, N, grid[0],
                                _accumulator_dtype(a.dtype), c.device)
    leading = args.leading(bias, scale_a, scale_b, *scratch())
    arguments = (*leading, M, N, K, args.stride_cm, args.stride_cn, bias.stride(0) if bias is not None else 0)
    compiled = kernel[grid](
        *arguments, A_COL=args.a_col, B_COL=args.b_col, C_TMA=args.c_tma, HAS_BIAS=bias is not None,
        HAS_SCALES=scale_a is not None, num_warps=config.num_warps, num_stages=config.num_stages,
        **edge_options(config, variant, args.edges.widths, N, slices), **tail_options(tail), **args.parts.options(),
        **pdl_options(args.after_copies), **dict(config.options),
    )
    if key:
        remember(kernel, key, capture(compiled, grid, arguments, len(leading), (config, variant),
                                      ReplayedTma(args.template(), scratch)))
    return result


def takes_copies(problem, align_rows: bool = False) -> bool:
    """Whether a launch on this problem's contiguous operands copies one of them, as tma_arguments decides: an 8-bit
    or fp32 row-major B (k_major_copy), or a row of A (K elements), of a column-major A's transpose (M), of B (N) or
    of a column-major B's transpose (K) that does not start 16-byte aligned, or with align_rows 128-byte aligned."""
    if copies_b_k_major(problem.dtype_b.itemsize, problem.col_b):
        return True
    row_bytes = [(problem.M if problem.col_a else problem.K) * problem.dtype_a.itemsize,
                 (problem.K if problem.col_b else problem.N) * problem.dtype_b.itemsize]
    alignment = PADDED_ROW_BYTES if align_rows else TMA_ALIGNMENT_BYTES
    return any(row % alignment for row in row_bytes)


def _mock_descriptor(dtype, rows: int, cols: int, block: list):
    """A descriptor on no memory, enough for Triton to specialize and compile the kernel."""
    strides = [_padded_columns(cols, dtype.itemsize), 1]  # as the launch pads odd rows
    return TensorDescriptor(triton.runtime.jit.MockTensor(dtype), [rows, cols], strides, block)


def compile_tma_config(kernel, config: TileConfig, variant: TmaVariant, problem) -> dict:
    """compile_config for the TMA family: compile the specialization launch_tma will use for this problem's
    layouts and dtypes (C contiguous, as the tuner allocates it), without launching."""
    if INTERPRETED:
        return {}
    if variant.swap_ab:
        problem = problem.transposed()
    copies = takes_copies(problem, variant.align_rows)
    if copies_b_k_major(problem.dtype_b.itemsize, problem.col_b):
        problem = replace(problem, col_b=True)  # the launch reads B's K-major copy
    mock = triton.runtime.jit.MockTensor
    M, N, K = problem.M, problem.N, problem.K
    bm, bn, bk = config.BLOCK_SIZE_M, config.BLOCK_SIZE_N, config.BLOCK_SIZE_K

    def a_block(rows):
        return _mock_descriptor(problem.dtype_a, K, M, [bk, rows]) if problem.col_a else _mock_descriptor(
            problem.dtype_a, M, K, [rows, bk])

    def b_block(cols):
        return _mock_descriptor(problem.dtype_b, N, K, [cols, bk]) if problem.col_b else _mock_descriptor(
            problem.dtype_b, K, N, [bk, cols])
    # a contiguous C's rows, as _tma_readable sees them; C^T (SWAP_AB) has no unit inner stride
    c_tma = not variant.swap_ab and N * problem.dtype_c.itemsize % TMA_ALIGNMENT_BYTES == 0
    c_pointer = mock(problem.dtype_c)

    def c_block(rows, cols, subtile=False):
        return _mock_descriptor(problem.dtype_c, M, N, output_block(rows, cols, subtile)) if c_tma else c_pointer
    # the real strides of a contiguous C, or of C^T: Triton specializes on them (divisibility by 16, a 1)
    c_strides = (None, None) if c_tma else ((1, M) if variant.swap_ab else (N, 1))
    a_desc, b_desc, c_arg, parts = tile_operands(config, variant.epilogue_subtile, a_block, b_block, c_block)
    bias = mock(problem.dtype_c) if problem.bias else None
    scaled, scales = mock_scales(problem)
    widths = edge_columns(N, bn) if variant.narrow_edge else ()
    grid = persistent_grid(config, M, N, "cuda")
    slices = edge_split(config, variant, widths, M, K, grid[0])
    tail = tail_split(config, variant, M, N, K, grid[0])
    scratch = (mock(_accumulator_dtype(problem.dtype_a)), mock(torch.int32)) if (
        variant.stream_k or config.SPLIT_K > 1 or slices > 1 or tail > 1) else (None, None)
    edges = EdgeOperands(widths, tuple(b_block(width) for width in widths),
                         tuple(c_block(bm, width) for width in widths),
                         mock(torch.int32) if widths else None)
    return loaded_resources(kernel.warmup(
        a_desc, b_desc, c_arg, bias, *scales, *scratch, *edges.kernel_arguments(), *parts.kernel_arguments(), M, N, K,
        *c_strides, 1 if problem.bias else 0,
        A_COL=problem.col_a, B_COL=problem.col_b, C_TMA=c_tma, HAS_BIAS=problem.bias, HAS_SCALES=scaled,
        num_warps=config.num_warps, num_stages=config.num_stages, grid=grid,
        **edge_options(config, variant, widths, N, slices), **tail_options(tail), **parts.options(),
        **pdl_options(copies), **dict(config.options),
    ))
