"""The run-time API: `matmul(a, b)` runs the config tuned for the call's shape, dtypes and layouts on this GPU
(rule in tune_gemm/runtime/lookup.py), as the custom op `tune_gemm::matmul` (torch.compile-able).

    from tune_gemm import matmul, load_results
    load_results("output_tuning.yaml")   # or start the process with TUNE_GEMM_RESULTS=output_tuning.yaml
    c = matmul(a, b)                     # a (M, K), b (K, N): fp16, bf16 or fp32, row- or column-major
    c = matmul(a8, b8, torch.bfloat16, scale_a=sa, scale_b=sb)   # fp8 with per-tensor scales, as torch._scaled_mm
    explain(a, b)                        # which config, by which rule, from which tuned shape
"""

from __future__ import annotations

import os

import torch

from tune_gemm.runtime.dispatch import RESULTS_ENV, Dispatcher, process_dispatcher
from tune_gemm.runtime.lookup import Choice
from tune_gemm.runtime.op import matmul_op


def matmul(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype | None = None, *,
           scale_a: torch.Tensor | None = None, scale_b: torch.Tensor | None = None) -> torch.Tensor:
    """A @ B (2-D, same dtype) with the tuned config; the result is a new row-major tensor of `out_dtype`
    (default: the inputs' dtype, fp16 for fp8 inputs, int32 for int8). fp8 inputs may take one fp32 scale per
    tensor (both or neither): C = scale_a scale_b A @ B.

    Called eagerly, it runs the dispatcher directly: the custom op's own dispatch cost the host 25-92 us a call on the
    H100. Under torch.compile, inside a dispatch mode (FakeTensor tracing, export)
    or where autograd records the call, it goes through the op, which those see and which refuses a backward pass."""
    if _through_op(a, b):
        return matmul_op(a, b, out_dtype, scale_a, scale_b)
    return process_dispatcher().matmul(a, b, out_dtype, scale_a, scale_b)


_PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def _through_op(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether a call must go through the custom op (see matmul)."""
    return (torch.compiler.is_compiling() or torch._C._len_torch_dispatch_stack() > 0
            or type(a) not in _PLAIN_TENSORS or type(b) not in _PLAIN_TENSORS
            or (torch.is_grad_enabled() and (a.requires_grad or b.requires_grad)))


def load_results(*paths: os.PathLike | str) -> None:
    """Add results files (tune_gemm YAML, or `--export json` files) to the process-wide table; later files
    override earlier ones for the same shape. Entries recorded on another GPU are kept but not used here."""
    process_dispatcher().load(*paths)


def clear_results() -> None:
    """Empty the process-wide table: every call then runs the default config."""
    process_dispatcher().clear()


def explain(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype | None = None) -> Choice:
    """What `matmul(a, b, out_dtype)` would run, without running it."""
    return process_dispatcher().choose(a, b, out_dtype)


__all__ = ["RESULTS_ENV", "Choice", "Dispatcher", "clear_results", "explain", "load_results", "matmul"]
