"""The plain kernel family (pointer loads, any GPU): device code, launch, replayed launches, and the checks a
generated module runs. Generated modules import it as a library; tune_gemm.kernels.bound launches it at run time.

    device   the @triton.jit code: matmul_tile, its split-K reduction, and the helpers every family shares
    specs    Problem and TileConfig: what a launch is given
    replay   launches after the first of a call signature, through the compiled kernel's launcher
    host     the host side: grid, split-K buffers, launch and compile_config
    harness  operands, the check against float64, and a generated module's main()

Module-level switches (REPLAY_LAUNCHES, INTERPRETED, the kept-zero buffers) live in the submodule that reads them.
"""

from tune_gemm.kernels.matmul_family.device import (
    ATOMIC_SUM,
    DOT_MIN_ROWS,
    INTERPRETED,
    REDUCE_BLOCK,
    SLOT_SUM,
    UPCAST_DOT_OPERANDS,
    add_row_bias,
    apply_scales,
    arrives_last,
    dot_accumulate,
    finish_split_tile,
    grouped_tile,
    load_operands,
    matmul_tile,
    matmul_tile_static_shape,
    operand_tiles,
    row_products,
    splitk_reduce_tile,
    summed_partials,
    tile_partials,
)
from tune_gemm.kernels.matmul_family.harness import (
    INT_RANGE,
    check_config,
    init_values,
    main,
    make_operand,
    make_operands,
    poison,
    quantize,
    relative_error,
    test_gemm,
)
from tune_gemm.kernels.matmul_family.host import (
    arrival_counters,
    compile_config,
    fused_partials,
    launch,
    loaded_resources,
    mock_scales,
    partial_dtype,
    running_sums,
    split_buffers,
)
from tune_gemm.kernels.matmul_family.replay import (
    REPLAY_LAUNCHES,
    REPLAYS_PER_KERNEL,
    Replay,
    call_signature,
    capture,
    jit_launch,
    launch_replayed,
    remember,
    replay_key,
    replay_of,
    replays_of,
)
from tune_gemm.kernels.matmul_family.specs import Problem, TileConfig, is_fp8

__all__ = [
    "ATOMIC_SUM", "DOT_MIN_ROWS", "INTERPRETED", "INT_RANGE", "REDUCE_BLOCK", "REPLAYS_PER_KERNEL", "REPLAY_LAUNCHES",
    "SLOT_SUM", "UPCAST_DOT_OPERANDS", "Problem", "Replay", "TileConfig", "add_row_bias", "apply_scales",
    "arrival_counters", "arrives_last", "call_signature", "capture", "check_config", "compile_config", "dot_accumulate",
    "finish_split_tile", "fused_partials", "grouped_tile", "init_values", "is_fp8", "jit_launch", "launch",
    "launch_replayed", "load_operands", "loaded_resources", "main", "make_operand", "make_operands", "matmul_tile",
    "matmul_tile_static_shape", "mock_scales", "operand_tiles", "partial_dtype", "poison", "quantize",
    "relative_error", "remember", "replay_key", "replay_of", "replays_of", "row_products", "running_sums",
    "split_buffers", "splitk_reduce_tile", "summed_partials", "test_gemm", "tile_partials",
]
