"""`GemmProblem`: what is tuned — C[M,N] = A[M,K] @ B[K,N] with given layouts and element types."""

from __future__ import annotations

from dataclasses import dataclass, replace

from tune_gemm.core.dtypes import DType


@dataclass(frozen=True)
class GemmProblem:
    M: int
    N: int
    K: int
    dtype_a: DType
    dtype_b: DType
    dtype_c: DType
    col_a: bool = False  # A stored column-major (ROCm files: rowMajorA 'N')
    col_b: bool = False
    bias: bool = False  # C gets bias[m] added to row m (ROCm --bias_vector; results files: bias_vector)

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K

    @property
    def arithmetic_intensity(self) -> float:
        """Flops per byte of A, B and C, each moved once: under a GPU's flops per byte of memory bandwidth, the GEMM
        is bound by memory."""
        moved = (self.M * self.K * self.dtype_a.bytes + self.K * self.N * self.dtype_b.bytes
                 + self.M * self.N * self.dtype_c.bytes)
        return self.flops / moved

    def transposed(self) -> GemmProblem:
        """The problem C^T = B^T A^T: B^T is the first operand, column-major where B is row-major."""
        return replace(self, M=self.N, N=self.M, dtype_a=self.dtype_b, dtype_b=self.dtype_a, col_a=not self.col_b,
                       col_b=not self.col_a)

    @property
    def layouts(self) -> tuple[str, str]:
        """A's and B's layout letters as the ROCm script writes them: 'T' row-major, 'N' column-major."""
        return ("N" if self.col_a else "T"), ("N" if self.col_b else "T")

    @property
    def label(self) -> str:
        bias = " +bias" if self.bias else ""
        return f"{self.M}x{self.N}x{self.K} {self.dtype_a.name}->{self.dtype_c.name} {''.join(self.layouts)}{bias}"

    @property
    def file_tag(self) -> str:
        """What names this problem's files (generated_kernel_<tag>.py, checkpoints, scratch folders): <M>x<N>x<K>, then
        the layouts where either is column-major (_NT), the dtypes where not all fp16 (_<A>_<C>, or _<A>_<B>_<C> where
        A's and B's differ) and _bias. Sizes are cut apart by 'x', so no two problems share a tag."""
        tag = f"{self.M}x{self.N}x{self.K}"
        if self.col_a or self.col_b:
            tag += "_" + "".join(self.layouts)
        dtypes = (self.dtype_a.name, self.dtype_b.name, self.dtype_c.name)
        if dtypes != ("fp16", "fp16", "fp16"):
            tag += "_" + "_".join(dtypes if self.dtype_b != self.dtype_a else (dtypes[0], dtypes[2]))
        if self.bias:
            tag += "_bias"
        return tag

    def tflops(self, time_us: float) -> float:
        return self.flops / (time_us * 1e-6) / 1e12
