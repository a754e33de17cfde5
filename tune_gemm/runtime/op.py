"""`tune_gemm::matmul`, the run-time matmul as a PyTorch custom op, so that torch.compile (fullgraph=True too)
keeps it as one opaque call instead of tracing into Triton launches.

The op runs `process_dispatcher().matmul`: the process-wide table, filled from TUNE_GEMM_RESULTS and
`load_results`. Its fake (meta) implementation gives the output's shape and dtype, which is all that tracing
needs. No autograd formula is registered: the op is for inference.
"""

from __future__ import annotations

import torch

from tune_gemm.runtime.dispatch import (
    DTYPES_OF_TORCH,
    default_output,
    process_dispatcher,
)


@torch.library.custom_op("tune_gemm::matmul", mutates_args=())
def matmul_op(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype | None = None,
              scale_a: torch.Tensor | None = None, scale_b: torch.Tensor | None = None) -> torch.Tensor:
    return process_dispatcher().matmul(a, b, out_dtype, scale_a, scale_b)


@matmul_op.register_fake
def _(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype | None = None,
      scale_a: torch.Tensor | None = None, scale_b: torch.Tensor | None = None) -> torch.Tensor:
    torch._check(a.dim() == 2 and b.dim() == 2, lambda: "tune_gemm matmul needs 2-D operands")
    torch._check(a.shape[1] == b.shape[0], lambda: f"shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied")
    known = DTYPES_OF_TORCH.get(a.dtype)  # the op itself refuses any other dtype
    dtype = out_dtype or (default_output(known).torch_dtype if known else a.dtype)
    return a.new_empty((a.shape[0], b.shape[1]), dtype=dtype)
