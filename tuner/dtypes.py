"""Element types the tuner accepts: their names on the command line and in YAML, and their facts."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tuner.errors import UserError


@dataclass(frozen=True)
class DType:
    name: str  # spelling on the command line and in results files (ROCm script's names)
    torch_dtype: torch.dtype
    bytes: int
    # Relative-norm error allowed against a float64 reference when this type is an input.
    # fp16/bf16 round inputs and output to 11/8 mantissa bits; fp32 goes through tf32 in tl.dot.
    tolerance: float


DTYPES: dict[str, DType] = {
    "fp16": DType("fp16", torch.float16, 2, 1e-2),
    "bf16": DType("bf16", torch.bfloat16, 2, 2e-2),
    "fp32": DType("fp32", torch.float32, 4, 5e-3),
}

# Types the ROCm script knows that we do not run yet: refused with a clear message.
_KNOWN_UNSUPPORTED = ("fp8", "bf8", "int8", "int32")


def dtype_named(name: str, what: str = "dtype") -> DType:
    """The DType called `name`; a UserError naming `what` otherwise."""
    if name in DTYPES:
        return DTYPES[name]
    if name in _KNOWN_UNSUPPORTED:
        raise UserError(f"{what} {name!r} is not supported yet; use one of {', '.join(DTYPES)}")
    raise UserError(f"{what} {name!r} is not a known dtype; use one of {', '.join(DTYPES)}")


def check_combination(dtype_a: DType, dtype_b: DType, dtype_c: DType, where: str = "") -> None:
    """Refuse mixed input types (the kernel feeds A and B to one tl.dot); `where` names the entry."""
    prefix = f"{where}: " if where else ""
    if dtype_a != dtype_b:
        raise UserError(f"{prefix}dtype_a {dtype_a.name} with dtype_b {dtype_b.name} is not supported: "
                        "A and B must have the same dtype")
    if dtype_c.bytes < dtype_a.bytes:
        raise UserError(f"{prefix}dtype_c {dtype_c.name} is narrower than the inputs ({dtype_a.name}): not supported")
