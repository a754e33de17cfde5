"""The Triton matmul tutorial's stock autotuning list for CUDA (tutorials/03-matrix-multiplication.py, its eight
fp16 configs): what a user gets who copies the tutorial instead of tuning.

Written as tune_gemm Configs (SPLIT_K 1: the tutorial has no split-K) so that they run on the same kernel family
as the tuned winners: the comparison is of configs, not of kernels. `benchmarks/bench_gemm.py` times all eight
on each size and keeps the fastest, as `@triton.autotune` over this list would; the report shows that column.
"""

from tune_gemm.core.config import Config

TUTORIAL_CONFIGS = tuple(
    Config(BLOCK_SIZE_M=m, BLOCK_SIZE_N=n, BLOCK_SIZE_K=k, GROUP_SIZE_M=8, SPLIT_K=1, num_warps=warps, num_stages=stages)
    for m, n, k, warps, stages in (
        (128, 256, 64, 8, 3),
        (64, 256, 32, 4, 4),
        (128, 128, 32, 4, 4),
        (128, 64, 32, 4, 4),
        (64, 128, 32, 4, 4),
        (128, 32, 32, 4, 4),
        (64, 32, 32, 2, 5),
        (32, 64, 32, 2, 5),
    )
)
