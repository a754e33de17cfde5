"""The vendor-library baseline the child times on the configs' own inputs, and the label saying which one ran.

fp16/bf16 inputs: torch.matmul (torch.addmm with the bias); into a wider fp32 C, torch.mm with out_dtype (cuBLAS's
own mixed-output GEMM, CUDA only), the bias added after. fp32 inputs: the same, with TF32 allowed for the
time it runs (torch.set_float32_matmul_precision("high")), since the configs' tl.dot runs fp32 as tf32: against
cuBLAS's full-precision fp32 (torch's default: 7.7x as long at 4096^3 on an H100, BENCHMARKS.md thirty-first
run) any config would look fast. fp8: torch._scaled_mm with the same per-tensor
scales, where its rules hold: A row-major, B column-major, K and N multiples of 16, not e5m2 on both sides
(cuBLASLt has no e5m2 x e5m2). int8: torch._int_mm where it runs: M > 16, K and N multiples of 8. Elsewhere
the fallback is torch.matmul on the inputs dequantized once, before the timing: fp8 to C's dtype (times the
scales), int8 to fp32 (int8 products and their sums up to 2^24 are exact there). The bias, a vector per row of
C, is added by a second call after the library's (_scaled_mm's bias runs along rows, not columns): its time
counts, as the configs' epilogue does. Whichever runs, its CSV rows are named schema.BASELINE_NAME; the label
goes into the results entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported where a baseline is labelled or run: results files load without it
    import torch

MATMUL = "torch.matmul"
MATMUL_TF32 = "torch.matmul (tf32)"
SCALED_MM = "torch._scaled_mm"
INT_MM = "torch._int_mm"
FP8_DEQUANTIZED = "torch.matmul (fp8 dequantized)"
INT8_AS_FP32 = "torch.matmul (int8 as fp32)"


def _is_fp8(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point and dtype.itemsize == 1


def _label(dtype_a: torch.dtype, M: int, N: int, K: int, a_rows_unit: bool, b_columns_unit: bool) -> str:
    """Which baseline runs on inputs of this dtype and shape; `a_rows_unit`: A's elements along K are adjacent
    (A.stride(1) == 1), `b_columns_unit`: B's are (B.stride(0) == 1), as torch._scaled_mm wants them."""
    import torch

    if _is_fp8(dtype_a):
        fits = a_rows_unit and b_columns_unit and K % 16 == 0 and N % 16 == 0 and dtype_a != torch.float8_e5m2
        return SCALED_MM if fits else FP8_DEQUANTIZED
    if not dtype_a.is_floating_point:
        return INT_MM if M > 16 and K % 8 == 0 and N % 8 == 0 else INT8_AS_FP32
    return MATMUL_TF32 if dtype_a == torch.float32 else MATMUL


@contextmanager
def peer_precision(dtype: torch.dtype) -> Iterator[None]:
    """fp32 matmuls may run as TF32 inside (torch's "high" precision) where the inputs are fp32, as the configs'
    tl.dot runs them; the precision in force before is restored on leaving. Peers compiled inside (max-autotune)
    must run inside too: Dynamo guards on that setting."""
    import torch

    if dtype != torch.float32:
        yield
        return
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def baseline_label(problem) -> str:
    """The label of the baseline the child runs for a tuner GemmProblem (the results entry and the report show
    it). A one-row A is stored with unit strides whatever its layout, as is a one-column B (see make_operand)."""
    p = problem
    return _label(p.dtype_a.torch_dtype, p.M, p.N, p.K, not p.col_a or p.M == 1, p.col_b or p.N == 1)


def _add_bias(c: torch.Tensor, bias: torch.Tensor | None) -> None:
    if bias is not None:
        c.add_(bias[:, None])


def _dense(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, bias: torch.Tensor | None) -> None:
    import torch

    if out.dtype != a.dtype:  # fp16/bf16 into fp32: cuBLAS writes the wider C itself (aten mm.dtype; CUDA only)
        torch.mm(a, b, out_dtype=out.dtype, out=out)
        _add_bias(out, bias)
        return
    if bias is not None:
        torch.addmm(bias[:, None], a, b, out=out)
    else:
        torch.matmul(a, b, out=out)


def _prepared(label: str, operands: tuple) -> Callable[[], None]:
    """The call timed on one operand set (the generated module's make_operands tuple)."""
    import torch

    a, b, c, *extra = operands
    bias = extra[0] if extra else None
    if label in (MATMUL, MATMUL_TF32):
        return lambda: _dense(a, b, c, bias)
    if label == INT_MM:
        return lambda: (torch._int_mm(a, b, out=c), _add_bias(c, bias))
    if label == SCALED_MM:
        scale_a, scale_b = extra[1:]
        return lambda: (torch._scaled_mm(a, b, scale_a=scale_a, scale_b=scale_b, out_dtype=c.dtype, out=c),
                        _add_bias(c, bias))
    if label == FP8_DEQUANTIZED:
        scale_a, scale_b = extra[1:]
        a_wide, b_wide = (a.float() * scale_a).to(c.dtype), (b.float() * scale_b).to(c.dtype)
        return lambda: _dense(a_wide, b_wide, c, bias)
    out = torch.empty(c.shape, dtype=torch.float32, device=c.device)  # INT8_AS_FP32
    a_wide, b_wide = a.float(), b.float()
    bias_wide = None if bias is None else bias.float()
    return lambda: _dense(a_wide, b_wide, out, bias_wide)


@dataclass(frozen=True)
class Baseline:
    label: str
    calls: list[Callable[[], None]]  # one per operand set, in the sets' order
    dtype: torch.dtype  # the inputs': fp32 ones are timed inside peer_precision

    def __call__(self, launch: int) -> None:
        """Run the baseline on the operand set of this launch (the sets rotate, as for the configs). Time it inside
        `precision()`: setting the precision at each call would add host time before every launch."""
        self.calls[launch % len(self.calls)]()

    def precision(self) -> AbstractContextManager[None]:
        """peer_precision for this baseline's inputs: TF32 allowed for fp32 ones."""
        return peer_precision(self.dtype)


def baseline_for(operand_sets: list[tuple]) -> Baseline:
    """The baseline for these operand sets (a generated module's make_operands tuples, all of one problem),
    ready to run on each of them; chosen from the first set's dtype, shapes and strides."""
    a, b = operand_sets[0][:2]
    M, K = a.shape
    label = _label(a.dtype, M, b.shape[1], K, a.stride(1) == 1, b.stride(0) == 1)
    return Baseline(label, [_prepared(label, operands) for operands in operand_sets], a.dtype)
