"""A generated module's checks: operands as the ROCm script's --init_type fills them, each config's result against
float64 with C poisoned first, and the module's main() (python generated_kernel_<size>.py [--interpret])."""

import argparse
import functools
import os
from multiprocessing.pool import ThreadPool

import torch
import triton

from tune_gemm.kernels.matmul_family.device import INTERPRETED
from tune_gemm.kernels.matmul_family.specs import Problem, is_fp8


def init_values(shape: tuple, init_type: str, generator, device):
    """fp32 values for a tensor stored as `shape`, as the ROCm script's --init_type names them."""
    if init_type == "randn":  # normal distribution
        return torch.randn(shape, generator=generator, device=device)
    if init_type == "hpl":  # uniform in [-0.5, 0.5), as HPL fills its matrices
        return torch.rand(shape, generator=generator, device=device) - 0.5
    if init_type == "trig_float":  # sin of each element's position in storage order: deterministic
        count = shape[0] * shape[1]
        return torch.arange(count, dtype=torch.float64, device=device).sin().float().reshape(shape)
    if init_type == "zeros":  # timing only: zeros flatter a kernel and hide wrong results
        return torch.zeros(shape, device=device)
    raise ValueError(f"unknown init_type {init_type!r}")


INT_RANGE = 127  # integer operands (and the int32 bias) take values in [-127, 127]: int8's range



def quantize(values, dtype) -> tuple:
    """(values in `dtype`, their per-tensor fp32 scale or None). fp8: the values divided by a scale that maps
    their largest magnitude onto the type's largest finite value, so that they use its whole range (one scale
    per tensor, as torch._scaled_mm takes); integers: the values spread over [-INT_RANGE, INT_RANGE] and
    rounded, no scale (the kernel has none for them); other types: the values cast."""
    if dtype.is_floating_point and not is_fp8(dtype):
        return values.to(dtype), None
    peak = values.abs().max().clamp(min=torch.finfo(torch.float32).tiny)  # zeros stay zeros
    if is_fp8(dtype):
        scale = (peak / torch.finfo(dtype).max).reshape(1)
        return (values / scale).to(dtype), scale
    return (values * (INT_RANGE / peak)).round().to(dtype), None


def make_operand(rows: int, cols: int, column_major: bool, dtype, device, generator, init_type: str = "randn"):
    """(a (rows, cols) matrix filled as `init_type` says, stored column-major when asked; its scale or None)."""
    values, scale = quantize(init_values((cols, rows) if column_major else (rows, cols), init_type, generator, device),
                             dtype)
    return (values.t() if column_major else values), scale


def make_operands(problem: Problem, device, seed: int = 0, init_type: str = "randn") -> tuple:
    """The launcher's arguments: (a, b, c), then the bias vector (M values, C's dtype) when the problem has one;
    fp8 inputs: always (a, b, c, bias or None, scale_a, scale_b)."""
    generator = torch.Generator(device=device).manual_seed(seed)
    a, scale_a = make_operand(problem.M, problem.K, problem.col_a, problem.dtype_a, device, generator, init_type)
    b, scale_b = make_operand(problem.K, problem.N, problem.col_b, problem.dtype_b, device, generator, init_type)
    c = torch.empty((problem.M, problem.N), dtype=problem.dtype_c, device=device)
    bias = quantize(init_values((1, problem.M), init_type, generator, device)[0], problem.dtype_c)[0] if (
        problem.bias) else None
    if scale_a is not None:
        return a, b, c, bias, scale_a, scale_b
    return (a, b, c) if bias is None else (a, b, c, bias)


def relative_error(c, a, b, bias=None, scale_a=None, scale_b=None) -> float:
    """||C - R|| / ||R|| with R = A@B (+ bias[m] on row m) computed in float64 from the dequantized inputs
    (A times scale_a, B times scale_b, when given); NaN anywhere in C gives inf."""
    a, b = a.double(), b.double()
    if scale_a is not None:
        a, b = a * scale_a.double(), b * scale_b.double()
    reference = a @ b
    if bias is not None:
        reference += bias.double()[:, None]
    result = c.double()
    if not torch.isfinite(result).all():
        return float("inf")
    return (torch.linalg.norm(result - reference) / torch.linalg.norm(reference)).item()


def poison(c) -> None:
    """Fill C with values no kernel computes, so that an element left unwritten fails the check: NaN, or the
    most negative integer for an integer C (far outside any product of INT_RANGE values)."""
    c.fill_(float("nan") if c.dtype.is_floating_point else torch.iinfo(c.dtype).min)


def check_config(launcher, problem: Problem, device, seed: int = 0) -> float:
    """Run one launcher on fresh random inputs with C poisoned first; returns the relative error.

    The inputs are always randn, whatever init_type the timing used: on zeros any kernel passes."""
    a, b, c, *extra = make_operands(problem, device, seed)  # extra: [], [bias] or [bias or None, scale_a, scale_b]
    poison(c)
    launcher(a, b, c, *extra)
    return relative_error(c, a, b, *extra)


def test_gemm(launchers: dict, problem: Problem, device, time_kernels: bool) -> int:
    """Check every config against float64 (and time it on a GPU); returns the number of failures."""
    failures = 0
    for name, launcher in launchers.items():
        error = check_config(launcher, problem, device)
        ok = error <= problem.tolerance
        failures += not ok
        line = f"{'PASS' if ok else 'FAIL'} {name}: relative error {error:.2e}"
        if time_kernels:
            operands = make_operands(problem, device)
            ms = triton.testing.do_bench(functools.partial(launcher, *operands), return_mode="median")
            line += f", {ms * 1e3:.1f} us, {2 * problem.M * problem.N * problem.K / ms / 1e9:.1f} TFLOP/s"
        print(line)
    return failures


def main(launchers: dict, compilers: dict, problem: Problem) -> int:
    parser = argparse.ArgumentParser(description=f"Configs tuned for {problem.M}x{problem.N}x{problem.K}")
    parser.add_argument("--interpret", action="store_true", help="run on the CPU under the Triton interpreter")
    parser.add_argument("--jobs", type=int, default=os.cpu_count(), help="compile threads")
    parser.add_argument("--config", action="append", help="only this config (repeatable)")
    args = parser.parse_args()
    chosen = {name: launcher for name, launcher in launchers.items() if not args.config or name in args.config}
    device = "cpu" if INTERPRETED else "cuda"
    if not INTERPRETED:
        with ThreadPool(args.jobs) as pool:
            pool.map(lambda name: compilers[name](), list(chosen))
    return 1 if test_gemm(chosen, problem, device, time_kernels=not INTERPRETED) else 0
