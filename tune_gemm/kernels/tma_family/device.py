"""The persistent TMA family's device code (Hopper and newer): one program per SM (per cluster of num_ctas SMs) walks
the output tiles, loading A and B tiles through tensor descriptors (the tensor memory accelerator) and storing C
through one when the copy engine can address C, through masked pointer stores otherwise (tma_persistent_tile); its
parts for compound tiles, narrow edge tiles, stream-K and split K."""

import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_wait

from tune_gemm.kernels.matmul_family.device import (
    ATOMIC_SUM,
    add_row_bias,
    apply_scales,
    arrives_last,
    dot_accumulate,
    grouped_tile,
    summed_partials,
    tile_partials,
)


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
    69.7 us with the wide one first."""
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
    one wave of 132 SMs and took 60.8-60.9 us, against 90.9-92.5 for 144 tiles of 128x256. The narrow products go
    first and the main one last: 66.0-66.8 us the other way round. In a loop flattened with the tile loop, ptxas
    serializes the products ("wgmma.mma_async instructions are serialized due to non wgmma instructions defining
    accumulator registers"): 88.6-89.3 us. The parts are issued as narrower matrix instructions (64 and 32 columns
    at 192x192, with 8 warps), which keep the tensor pipe less busy than a
    whole tile's: 71.8% against cuBLAS's 82.6% at 3072x1536x4096, both 128 CTAs fed the same bytes from L2.
    The warp-group family (WARP_GROUPS, tune_gemm.kernels.warp_group_family) computes such tiles with a warp group
    per 64 rows and instructions as wide as each part: 56.0 us there."""
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
    tiles apart took 209-213 us against 220-224 us dealt round robin. Claims
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
    against this design's 90.7 (128x256)."""
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
    with all tiles' first slices first. Each slice puts its partial tile where the
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
