"""Element types the tuner accepts: their names on the command line and in YAML, and their facts."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from tune_gemm.core.errors import UserError

if TYPE_CHECKING:  # an annotation only: importing prune here would import tune_gemm.core.problem, which needs this module
    import torch

    from tune_gemm.core.device import DeviceProfile


@dataclass(frozen=True)
class DType:
    name: str  # spelling on the command line and in results files (ROCm script's names)
    torch_name: str  # the torch dtype's attribute name, e.g. "float16": torch is imported when it is first asked for
    bytes: int
    # Relative-norm error allowed against a float64 reference when this type is an input (see DTYPES).
    tolerance: float
    kind: str = "float"  # "float"; "fp8": per-tensor scales in the epilogue; "int": integer dot, int32 output

    @cached_property
    def torch_dtype(self) -> torch.dtype:
        """The torch dtype, e.g. torch.float16 (the command line parses names without importing torch)."""
        import torch

        return getattr(torch, self.torch_name)

    @property
    def scaled(self) -> bool:
        """Inputs of this type come with one fp32 scale per tensor (scale_a, scale_b), as torch._scaled_mm takes."""
        return self.kind == "fp8"


# Tolerances (relative Frobenius norm of C - R against R computed in float64 from the exact inputs):
#   fp16/bf16: inputs and output rounded to 11/8 mantissa bits.
#   fp32: tl.dot runs fp32 inputs as tf32 (10 mantissa bits) on NVIDIA tensor cores: ~1e-3 relative.
#   fp8/bf8: the reference dequantizes the fp8 values exactly (a.double() * scale_a), so the error is only
#     the output rounding (bf16 output: ~2e-3 rms) plus the accumulator: Hopper's fp8 MMA adds in reduced
#     precision (~14 mantissa bits) and Triton lets it for the whole K loop. 2e-2 covers both with room; a
#     scale left out or applied twice is off by a factor of ~100 (the scales map |x| <= ~5 onto the type's range).
#   int8: products and sums are exact in int32 at these ranges (|x| <= 127, int32 overflows past K ~ 130,000
#     equal-signed products), so any error is a bug.
# bf8 and fp8 are the ROCm script's names for OCP float8_e5m2 and float8_e4m3fn (NVIDIA sm_89+, AMD gfx950);
# AMD MI300 (gfx942) has only the fnuz variants, which are not mapped here.
DTYPES: dict[str, DType] = {
    "fp16": DType("fp16", "float16", 2, 1e-2),
    "bf16": DType("bf16", "bfloat16", 2, 2e-2),
    "fp32": DType("fp32", "float32", 4, 5e-3),
    "fp8": DType("fp8", "float8_e4m3fn", 1, 2e-2, kind="fp8"),
    "bf8": DType("bf8", "float8_e5m2", 1, 2e-2, kind="fp8"),
    "int8": DType("int8", "int8", 1, 0.0, kind="int"),
    "int32": DType("int32", "int32", 4, 0.0, kind="int"),  # output of int8 inputs only
}

# Other spellings accepted on input; results files always get the names above.
ALIASES = {"e4m3": "fp8", "e5m2": "bf8"}

_FLOAT_OUTPUTS = ("fp16", "bf16", "fp32")


def dtype_named(name: str, what: str = "dtype") -> DType:
    """The DType called `name` (or an alias of it); a UserError naming `what` otherwise."""
    name = ALIASES.get(name, name)
    if name in DTYPES:
        return DTYPES[name]
    raise UserError(f"{what} {name!r} is not a known dtype; use one of {', '.join([*DTYPES, *ALIASES])}")


def _combination_error(dtype_a: DType, dtype_b: DType, dtype_c: DType) -> str | None:
    if dtype_a != dtype_b:
        return f"dtype_a {dtype_a.name} with dtype_b {dtype_b.name} is not supported: A and B must have the same dtype"
    if dtype_a.name == "int32":
        return "int32 is an output type only (dtype_c of int8 inputs)"
    if dtype_a.kind == "int":
        return None if dtype_c.name == "int32" else f"int8 inputs need dtype_c int32, not {dtype_c.name}"
    if dtype_c.name not in _FLOAT_OUTPUTS:
        outputs = ", ".join(_FLOAT_OUTPUTS)
        return f"dtype_c {dtype_c.name} with {dtype_a.name} inputs is not supported: use one of {outputs}"
    if dtype_a.kind != "fp8" and dtype_c.bytes < dtype_a.bytes:
        return f"dtype_c {dtype_c.name} is narrower than the inputs ({dtype_a.name}): not supported"
    return None


def check_combination(dtype_a: DType, dtype_b: DType, dtype_c: DType, where: str = "") -> None:
    """Refuse what the kernels cannot run: mixed inputs (one tl.dot takes both), int8 without an int32 output,
    a float input with an integer or fp8 output, an output narrower than 16-bit inputs. `where` names the entry."""
    error = _combination_error(dtype_a, dtype_b, dtype_c)
    if error:
        raise UserError(f"{where}: {error}" if where else error)


def check_device_runs(dtype: DType, device: DeviceProfile, where: str) -> None:
    """Refuse fp8 inputs on a GPU without fp8 matrix instructions (tune_gemm.core.device's fp8 fact); `where` names the size."""
    if dtype.kind == "fp8" and not device.fp8:
        raise UserError(f"{where}: {dtype.name} inputs need a GPU with fp8 matrix instructions (NVIDIA compute "
                        f"capability 8.9+, AMD gfx950+); {device.name} has none")
