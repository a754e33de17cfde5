"""What a launch of the kernel families is given: the problem (sizes, layouts, dtypes) and one config's tile."""

from dataclasses import dataclass, replace

import torch


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



def is_fp8(dtype) -> bool:
    return dtype.is_floating_point and dtype.itemsize == 1
