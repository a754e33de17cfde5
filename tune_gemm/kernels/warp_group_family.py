# ---------------------------------------------------------------------------------------------
# Warp-group kernel family (Hopper, compute capability 9.0), written in Gluon, Triton's language
# with explicit layouts and warp roles: a persistent grid whose programs each run one loader warp
# and one consumer warp group (4 warps) per 64 rows of the tile (two to four). The loader fills a
# ring of shared memory stages through TMA; each consumer multiplies its 64 rows by the two column
# parts of a compound tile (192 = 128 + 64, 160 = 128 + 32, 96 = 64 + 32; with two warp groups also
# 320 = 256 + 64 and 384 = 256 + 128, wider than any other kernel's tile) and stores them through
# TMA. Triton's own compiler splits every part of a compound tile between all the warp groups, and
# the 64-row parts then run as matrix instructions 32 or 64 columns wide; here every instruction is
# as wide as its part. Generated modules that hold WARP_GROUPS configs import it (Gluon needs a Triton
# that has it).
# ---------------------------------------------------------------------------------------------
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import (
    TensorDescriptor as GluonTensorDescriptor,
)

from tune_gemm.core.geometry import block_parts
from tune_gemm.kernels.matmul_family.device import INTERPRETED
from tune_gemm.kernels.matmul_family.host import loaded_resources
from tune_gemm.kernels.matmul_family.replay import (
    capture,
    remember,
    replay_key,
    replay_of,
)
from tune_gemm.kernels.matmul_family.specs import TileConfig
from tune_gemm.kernels.tma_family.copies import is_column_major
from tune_gemm.kernels.tma_family.operands import rebased
from tune_gemm.kernels.tma_family.slicing import persistent_grid

GROUP_ROWS = gl.constexpr(64)  # rows of C one consumer warp group computes: the warpgroup MMA's M
# Registers a thread of a consumer warp group may hold (setmaxnreg) where there are three: its accumulators take 96 at
# 192 columns. The loader warp's group takes what it needs to issue copies (with two or three consumer warp groups);
# the default partition (the first consumer) gets the rest.
CONSUMER_REGISTERS_OF_THREE = gl.constexpr(168)
LOADER_REGISTERS = gl.constexpr(40)
# Two consumer warp groups and the loader's make 12 warps, launched with 168 registers a thread: each consumer may take
# 232, room for 64 x 384 fp32 accumulators (192 registers a thread). At 168, 128x320 spilled 464 bytes; at 232 it and
# 128x384 compile without a stack (sm_90a, Triton 3.6).
CONSUMER_REGISTERS_OF_TWO = gl.constexpr(232)
# Four consumer warp groups and the loader's make 20 warps, launched with 96 registers a thread: the pool the partitions
# share. With the loader at the least setmaxnreg takes, each consumer gets 112 (the first 120), room for 64 x 160 fp32
# accumulators (80 registers a thread) without spilling; with the loader at 40 the first consumer got 104 and spilled
# (compiled for sm_90a, Triton 3.6).
CONSUMER_REGISTERS_OF_FOUR = gl.constexpr(112)
LOADER_REGISTERS_OF_FOUR = gl.constexpr(24)


@gluon.jit
def warp_group_tile_of(tile, num_pid_m, num_pid_n, group_size_m):
    """(pid_m, pid_n) of the tile-th output tile, group_size_m rows of tiles at a time, so that the programs running
    at once share A's and B's tiles in L2: grouped_tile's order, for a group size that arrives as a run-time value
    (grouped_tile takes it as a constant, which a partition's arguments cannot be)."""
    in_group = group_size_m * num_pid_n
    first_m = tile // in_group * group_size_m
    rows = gl.minimum(num_pid_m - first_m, group_size_m)
    return first_m + (tile % in_group) % rows, (tile % in_group) // rows


@gluon.jit
def warp_group_gemm(a_desc, b_desc, b_right, c_desc, c_right, bias_ptr, M, N, K, stride_bias,
                    BLOCK_SIZE_M: gl.constexpr, GROUP_SIZE_M: gl.constexpr, STAGES: gl.constexpr):
    """C = A @ B (+ a bias per row of C) by a persistent grid: program p computes tiles p, p + P, p + 2P, ...

    A tile is BLOCK_SIZE_M (64 per consumer warp group: 128, 192 or 256) by the widths of b_desc's and b_right's
    blocks, its left and right column parts (block_parts: 192 = 128 + 64, 160 = 128 + 32, 96 = 64 + 32,
    320 = 256 + 64, 384 = 256 + 128). A is row-major; B is read through b_desc and b_right either as it is, blocks
    of [BLOCK_K, part], or, column-major, through its transpose, blocks of [part, BLOCK_K]. c_desc and c_right store
    a warp group's 64 rows of the two parts. Reads past the edges return zeros, stores past them are dropped, so M, N
    and K need no masks. bias_ptr is None or a vector with one value per row of C."""
    WARP_GROUPS: gl.constexpr = BLOCK_SIZE_M // GROUP_ROWS
    gl.static_assert(WARP_GROUPS >= 2 and WARP_GROUPS <= 4, "two to four consumer warp groups")
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES * WARP_GROUPS, GROUP_ROWS, BLOCK_K], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    b_right_ring = gl.allocate_shared_memory(b_right.dtype, [STAGES] + b_right.block_type.shape, b_right.layout)
    c_staging = gl.allocate_shared_memory(c_desc.dtype, [WARP_GROUPS] + c_desc.block_type.shape, c_desc.layout)
    c_right_staging = gl.allocate_shared_memory(c_right.dtype, [WARP_GROUPS] + c_right.block_type.shape,
                                                c_right.layout)
    # ready[s]: stage s holds its K tile (the copy engine arrives); free[s]: every consumer is done with it
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    free = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for stage in gl.static_range(STAGES):
        mbarrier.init(ready.index(stage), count=1)
        mbarrier.init(free.index(stage), count=WARP_GROUPS)
    fence_async_shared()
    # Partitions get their operands as run-time values: each reads the tile's shape from the shapes of the buffers
    # itself (a helper's returned constants come back as run-time values too), and GROUP_SIZE_M arrives as a number.
    # A constant written into a partition's own argument tuple stays a constant: each consumer's warp group, so that
    # its ring and staging indices are fixed when it compiles.
    consumer_args = (c_desc, c_right, bias_ptr, a_ring, b_ring, b_right_ring, c_staging, c_right_staging, ready,
                     free, M, N, K, stride_bias, GROUP_SIZE_M)
    loader_args = (a_desc, b_desc, b_right, a_ring, b_ring, b_right_ring, ready, free, M, N, K, GROUP_SIZE_M)
    if WARP_GROUPS == 4:
        gl.warp_specialize([(consumer, (consumer_args, 0)), (consumer, (consumer_args, 1)),
                            (consumer, (consumer_args, 2)), (consumer, (consumer_args, 3)),
                            (loader, loader_args)],
                           [4, 4, 4, 1],
                           [CONSUMER_REGISTERS_OF_FOUR, CONSUMER_REGISTERS_OF_FOUR, CONSUMER_REGISTERS_OF_FOUR,
                            LOADER_REGISTERS_OF_FOUR])
    elif WARP_GROUPS == 3:
        gl.warp_specialize([(consumer, (consumer_args, 0)), (consumer, (consumer_args, 1)),
                            (consumer, (consumer_args, 2)), (loader, loader_args)],
                           [4, 4, 1], [CONSUMER_REGISTERS_OF_THREE, CONSUMER_REGISTERS_OF_THREE, LOADER_REGISTERS])
    else:
        gl.warp_specialize([(consumer, (consumer_args, 0)), (consumer, (consumer_args, 1)),
                            (loader, loader_args)],
                           [4, 1], [CONSUMER_REGISTERS_OF_TWO, LOADER_REGISTERS])


@gluon.jit
def loader(a_desc, b_desc, b_right, a_ring, b_ring, b_right_ring, ready, free, M, N, K, group_size_m):
    """One warp: for every K tile of every tile of this program, wait until its stage is free, then copy A's rows of
    each warp group and B's two column parts into it."""
    STAGES: gl.constexpr = b_ring.type.shape[0]
    WARP_GROUPS: gl.constexpr = a_ring.type.shape[0] // STAGES
    B_COL: gl.constexpr = b_ring.type.shape[1] != b_right_ring.type.shape[1]
    BLOCK_K: gl.constexpr = a_desc.block_type.shape[1]
    LEFT: gl.constexpr = b_ring.type.shape[1] if B_COL else b_ring.type.shape[2]
    BLOCK_N: gl.constexpr = LEFT + (b_right_ring.type.shape[1] if B_COL else b_right_ring.type.shape[2])
    STAGE_BYTES: gl.constexpr = (WARP_GROUPS * a_desc.block_type.nbytes + b_desc.block_type.nbytes
                                 + b_right.block_type.nbytes)
    num_pid_m = gl.cdiv(M, GROUP_ROWS * WARP_GROUPS)
    num_pid_n = gl.cdiv(N, BLOCK_N)
    k_tiles = gl.cdiv(K, BLOCK_K)
    count = 0  # K tiles loaded by this program so far: stage count % STAGES, in its (count // STAGES)-th round
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = warp_group_tile_of(tile, num_pid_m, num_pid_n, group_size_m)
        off_m = pid_m * GROUP_ROWS * WARP_GROUPS
        off_n = pid_n * BLOCK_N
        for k_tile in range(k_tiles):
            stage = count % STAGES
            # a stage's first round waits on nothing: the phase before a fresh barrier's first counts as complete
            mbarrier.wait(free.index(stage), (count // STAGES & 1) ^ 1)
            mbarrier.expect(ready.index(stage), STAGE_BYTES)
            off_k = k_tile * BLOCK_K
            for group in gl.static_range(WARP_GROUPS):
                tma.async_copy_global_to_shared(a_desc, [off_m + group * GROUP_ROWS, off_k], ready.index(stage),
                                                a_ring.index(stage * WARP_GROUPS + group))
            if B_COL:
                tma.async_copy_global_to_shared(b_desc, [off_n, off_k], ready.index(stage), b_ring.index(stage))
                tma.async_copy_global_to_shared(b_right, [off_n + LEFT, off_k], ready.index(stage),
                                                b_right_ring.index(stage))
            else:
                tma.async_copy_global_to_shared(b_desc, [off_k, off_n], ready.index(stage), b_ring.index(stage))
                tma.async_copy_global_to_shared(b_right, [off_k, off_n + LEFT], ready.index(stage),
                                                b_right_ring.index(stage))
            count += 1


@gluon.jit
def consumer(operands, GROUP: gl.constexpr):
    """Warp group GROUP: for every tile of this program, multiply its 64 rows by both column parts over all K tiles,
    each product one warpgroup MMA as wide as its part, then add the bias and store the two parts."""
    (c_desc, c_right, bias_ptr, a_ring, b_ring, b_right_ring, c_staging, c_right_staging, ready, free, M, N, K,
     stride_bias, group_size_m) = operands
    STAGES: gl.constexpr = b_ring.type.shape[0]
    WARP_GROUPS: gl.constexpr = a_ring.type.shape[0] // STAGES
    B_COL: gl.constexpr = b_ring.type.shape[1] != b_right_ring.type.shape[1]
    BLOCK_K: gl.constexpr = a_ring.type.shape[2]
    LEFT: gl.constexpr = c_staging.type.shape[2]
    RIGHT: gl.constexpr = c_right_staging.type.shape[2]
    left_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                          instr_shape=[16, LEFT, 16])
    right_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                           instr_shape=[16, RIGHT, 16])
    num_pid_m = gl.cdiv(M, GROUP_ROWS * WARP_GROUPS)
    num_pid_n = gl.cdiv(N, LEFT + RIGHT)
    k_tiles = gl.cdiv(K, BLOCK_K)
    c_left_buffer = c_staging.index(GROUP)
    c_right_buffer = c_right_staging.index(GROUP)
    count = 0  # as the loader counts
    for tile in range(gl.program_id(0), num_pid_m * num_pid_n, gl.num_programs(0)):
        pid_m, pid_n = warp_group_tile_of(tile, num_pid_m, num_pid_n, group_size_m)
        off_m = pid_m * GROUP_ROWS * WARP_GROUPS + GROUP * GROUP_ROWS
        off_n = pid_n * (LEFT + RIGHT)
        acc = gl.zeros((GROUP_ROWS, LEFT), gl.float32, left_layout)
        acc_right = gl.zeros((GROUP_ROWS, RIGHT), gl.float32, right_layout)
        for k_tile in range(k_tiles):
            stage = count % STAGES
            mbarrier.wait(ready.index(stage), count // STAGES & 1)
            a = a_ring.index(stage * WARP_GROUPS + GROUP)
            b = b_ring.index(stage)
            b_right = b_right_ring.index(stage)
            if B_COL:  # the stage holds B^T's blocks: the MMA reads them transposed
                b = b.permute((1, 0))
                b_right = b_right.permute((1, 0))
            acc_right = warpgroup_mma(a, b_right, acc_right, is_async=True)
            acc = warpgroup_mma(a, b, acc, is_async=True)
            # this K tile's two products stay in flight; the previous tile's are done, so its stage is free
            acc, acc_right = warpgroup_mma_wait(num_outstanding=2, deps=(acc, acc_right))
            mbarrier.arrive(free.index((count + STAGES - 1) % STAGES), pred=k_tile > 0)
            count += 1
        acc, acc_right = warpgroup_mma_wait(num_outstanding=0, deps=(acc, acc_right))
        mbarrier.arrive(free.index((count + STAGES - 1) % STAGES))
        if bias_ptr is not None:
            acc = add_bias(acc, bias_ptr, off_m, M, stride_bias, left_layout)
            acc_right = add_bias(acc_right, bias_ptr, off_m, M, stride_bias, right_layout)
        tma.store_wait(pendings=0)  # the previous tile's stores have left the staging buffers
        c_left_buffer.store(acc.to(c_desc.dtype))
        c_right_buffer.store(acc_right.to(c_right.dtype))
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_left_buffer)
        tma.async_copy_shared_to_global(c_right, [off_m, off_n + LEFT], c_right_buffer)
    tma.store_wait(pendings=0)


@gluon.jit
def add_bias(acc, bias_ptr, off_m, M, stride_bias, layout: gl.constexpr):
    """acc + the bias of C's rows off_m.. (one value per row)."""
    rows = off_m + gl.arange(0, acc.shape[0], layout=gl.SliceLayout(1, layout))
    bias = gl.load(bias_ptr + rows * stride_bias, mask=rows < M, other=0.0)
    return acc + bias.to(gl.float32)[:, None]


_GLUON_DTYPES = {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16, torch.float32: gl.float32}


def _descriptor(matrix, block: list) -> GluonTensorDescriptor:
    """A descriptor of a row-major matrix (unit inner stride) read or written in `block`s, staged in shared memory
    with the swizzle the matrix instructions read without bank conflicts."""
    layout = gl.NVMMASharedLayout.get_default_for(block, _GLUON_DTYPES[matrix.dtype])
    return GluonTensorDescriptor(matrix, list(matrix.shape), list(matrix.stride()), block, layout)


def warp_group_operands(config: TileConfig, a, b_read, c, b_col: bool) -> tuple:
    """The kernel's five descriptors: A's, B's left and right parts', C's left and right parts'. A and C are row-major;
    b_read is B itself, or with b_col a column-major B's (row-major) transpose, read in K-major blocks. The launch
    passes the real matrices, the compile-ahead mock ones, so that both specialize the kernel alike."""
    left, right = block_parts(config.BLOCK_SIZE_N)
    bk = config.BLOCK_SIZE_K

    def b_block(cols):
        return _descriptor(b_read, [cols, bk] if b_col else [bk, cols])
    return (_descriptor(a, [GROUP_ROWS.value, bk]), b_block(left), b_block(right),
            _descriptor(c, [GROUP_ROWS.value, left]), _descriptor(c, [GROUP_ROWS.value, right]))


def launch_warp_groups(kernel, config: TileConfig, a, b, c, bias=None, scale_a=None, scale_b=None):
    """Write A @ B (+ bias per row) into C with one warp-group config: A and C row-major, B either way, each matrix's
    rows 16-byte aligned as the copy engine needs. The pruner keeps such configs only for 16-bit inputs (no scales),
    a row-major A and aligned rows (tune_gemm.space.rules warp_groups); a scale or a column-major A raises ValueError, and so
    does the Triton interpreter, which does not run Gluon."""
    if INTERPRETED:
        raise ValueError("the warp-group kernel is Gluon, which the Triton interpreter does not run: it needs a "
                         "Hopper GPU")
    if scale_a is not None or scale_b is not None:
        raise ValueError("the warp-group kernel takes 16-bit inputs, which have no scales")
    if is_column_major(a) or a.stride(1) != 1:
        raise ValueError("the warp-group kernel reads A row-major")
    b_col = is_column_major(b)
    b_read = b.T if b_col else b
    key = replay_key((config,), a, b, c, bias)
    replay = replay_of(kernel, key)
    if replay is not None:  # a Replay (matmul_family): the descriptors over this call's matrices
        replay(*map(rebased, replay.template, (a, b_read, b_read, c, c)), bias)
        return c
    M, K = a.shape
    N = b.shape[1]
    grid = persistent_grid(config, M, N, a.device)
    descriptors = warp_group_operands(config, a, b_read, c, b_col)
    arguments = (*descriptors, bias, M, N, K, bias.stride(0) if bias is not None else 0)
    compiled = kernel[grid](*arguments, num_warps=4, **dict(config.options))
    if key:
        remember(kernel, key, capture(compiled, grid, arguments, len(descriptors) + 1, (config,),
                                      tuple(rebased(descriptor, None) for descriptor in descriptors)))
    return c


def compile_warp_group_config(kernel, config: TileConfig, problem) -> dict:
    """compile_config for the warp-group family: compile the specialization launch_warp_groups uses for this problem's
    layouts and dtypes (C contiguous, as the tuner allocates it), without launching."""
    if INTERPRETED:
        return {}
    mock = triton.runtime.jit.MockTensor

    def row_major(dtype, rows, cols):
        tensor = mock(dtype)
        tensor.shape = (rows, cols)
        tensor.stride = lambda *dim: (cols, 1)[dim[0]] if dim else (cols, 1)
        return tensor

    M, N, K = problem.M, problem.N, problem.K
    b_read = row_major(problem.dtype_b, N, K) if problem.col_b else row_major(problem.dtype_b, K, N)
    operands = warp_group_operands(config, row_major(problem.dtype_a, M, K), b_read, row_major(problem.dtype_c, M, N),
                                   problem.col_b)
    bias = mock(problem.dtype_c) if problem.bias else None
    # stride_bias as the launch passes it: Triton specializes an integer argument of 1
    return loaded_resources(kernel.warmup(*operands, bias, M, N, K, 1 if problem.bias else 0, num_warps=4,
                                          grid=persistent_grid(config, M, N, "cuda"), **dict(config.options)))
