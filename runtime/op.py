"""`tune_gemm::matmul`, the run-time matmul as a PyTorch custom op, so that torch.compile (fullgraph=True too)
keeps it as one opaque call instead of tracing into Triton launches.

The op runs `process_dispatcher().matmul`: the process-wide table, filled from TUNE_GEMM_RESULTS and
`load_results`. Its fake (meta) implementation gives the output's shape and dtype, which is all that tracing
needs. No autograd formula is registered: the op is for inference.
"""

from __future__ import annotations

import torch

from runtime.dispatch import process_dispatcher


@torch.library.custom_op("tune_gemm::matmul", mutates_args=())
def matmul_op(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype | None = None) -> torch.Tensor:
    return process_dispatcher().matmul(a, b, out_dtype)


@matmul_op.register_fake
def _(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype | None = None) -> torch.Tensor:
    torch._check(a.dim() == 2 and b.dim() == 2, lambda: "tune_gemm matmul needs 2-D operands")
    torch._check(a.shape[1] == b.shape[0], lambda: f"shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied")
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out_dtype or a.dtype)
