# ---------------------------------------------------------------------------------------------
# Kernel family: the code every generated kernel file shares. The generator copies this source
# into each generated_kernel*.py; the per-config kernels below it only bind constants.
# ---------------------------------------------------------------------------------------------
import argparse
import os
import sys
from dataclasses import dataclass
from multiprocessing.pool import ThreadPool

if "--interpret" in sys.argv:  # must be set before Triton is imported
    os.environ["TRITON_INTERPRET"] = "1"

import torch
import triton
import triton.language as tl

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
REDUCE_BLOCK = tl.constexpr(64)  # tile edge of the split-K reduction kernel
# Triton's interpreter (seen with 3.9) returns garbage from tl.dot on bf16 operands; upcasting them
# first gives the exact products. Compiled kernels never take this branch.
UPCAST_DOT_OPERANDS = tl.constexpr(INTERPRETED)


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


@dataclass(frozen=True)
class TileConfig:
    BLOCK_SIZE_M: int
    BLOCK_SIZE_N: int
    BLOCK_SIZE_K: int
    GROUP_SIZE_M: int
    SPLIT_K: int
    num_warps: int
    num_stages: int
    options: tuple = ()  # (name, value) launch options of the backend, e.g. AMD's waves_per_eu


@triton.jit
def matmul_tile(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, stride_cs,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, SPLIT_K: tl.constexpr, EVEN_K: tl.constexpr,
):
    """One output tile of C = A @ B; with SPLIT_K > 1, one K slice's fp32 partial tile (slice stride_cs)."""
    pid = tl.program_id(axis=0)
    pid_k = tl.program_id(axis=1)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    # Walk GROUP_SIZE_M rows of tiles column by column: programs that run together share B tiles in L2.
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    # Rows and columns past the edge wrap around, so loads stay in bounds without a mask;
    # the store at the end is masked instead.
    offs_am = offs_m % M
    offs_bn = offs_n % N
    offs_k = pid_k * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K * SPLIT_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = K - k * BLOCK_SIZE_K * SPLIT_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        if UPCAST_DOT_OPERANDS:
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K * SPLIT_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * SPLIT_K * stride_bk

    c_ptrs = c_ptr + pid_k * stride_cs + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@triton.jit
def splitk_reduce_tile(
    p_ptr, c_ptr, M, N, stride_ps, stride_pm, stride_pn, stride_cm, stride_cn,
    SPLIT_K: tl.constexpr, BLOCK: tl.constexpr,
):
    """Sum the SPLIT_K fp32 partial tiles into C, in C's dtype."""
    offs_m = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    offs_n = tl.program_id(axis=1) * BLOCK + tl.arange(0, BLOCK)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    p_ptrs = p_ptr + offs_m[:, None] * stride_pm + offs_n[None, :] * stride_pn
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for s in tl.static_range(SPLIT_K):
        acc += tl.load(p_ptrs + s * stride_ps, mask=mask, other=0.0)
    tl.store(c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn, acc.to(c_ptr.dtype.element_ty),
             mask=mask)


def _grid(config: TileConfig, M: int, N: int) -> tuple:
    return (triton.cdiv(M, config.BLOCK_SIZE_M) * triton.cdiv(N, config.BLOCK_SIZE_N), config.SPLIT_K)


def launch(kernel, reduce_kernel, config: TileConfig, a, b, c):
    """C = A @ B with one config. A: (M, K), B: (K, N), C: (M, N), any strides."""
    M, K = a.shape
    N = b.shape[1]
    out = c if config.SPLIT_K == 1 else torch.empty((config.SPLIT_K, M, N), dtype=torch.float32, device=c.device)
    slice_stride = 0 if config.SPLIT_K == 1 else out.stride(0)
    kernel[_grid(config, M, N)](
        a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(-2), out.stride(-1),
        slice_stride, EVEN_K=K % (config.BLOCK_SIZE_K * config.SPLIT_K) == 0,
        num_warps=config.num_warps, num_stages=config.num_stages, **dict(config.options),
    )
    if config.SPLIT_K > 1:
        reduce_kernel[(triton.cdiv(M, REDUCE_BLOCK.value), triton.cdiv(N, REDUCE_BLOCK.value))](
            out, c, M, N, out.stride(0), out.stride(1), out.stride(2), c.stride(0), c.stride(1))
    return c


def _operand_strides(rows: int, cols: int, column_major: bool) -> tuple:
    return (1, rows) if column_major else (cols, 1)


def compile_config(kernel, reduce_kernel, config: TileConfig, problem: Problem) -> dict:
    """Compile one config for this problem's exact argument specialization, without launching it.

    Returns the compiled kernel's resource use; raises what Triton raises (e.g. OutOfResources)."""
    if INTERPRETED:
        return {}
    mock = triton.runtime.jit.MockTensor
    M, N, K = problem.M, problem.N, problem.K
    out_dtype = problem.dtype_c if config.SPLIT_K == 1 else torch.float32
    out_strides = (N, 1, 0) if config.SPLIT_K == 1 else (N, 1, M * N)
    compiled = kernel.warmup(
        mock(problem.dtype_a), mock(problem.dtype_b), mock(out_dtype), M, N, K,
        *_operand_strides(M, K, problem.col_a), *_operand_strides(K, N, problem.col_b), *out_strides,
        EVEN_K=K % (config.BLOCK_SIZE_K * config.SPLIT_K) == 0,
        num_warps=config.num_warps, num_stages=config.num_stages, grid=_grid(config, M, N), **dict(config.options),
    )
    compiled._init_handles()  # loads the binary: raises OutOfResources when it cannot run
    if config.SPLIT_K > 1:
        reduce_kernel.warmup(mock(torch.float32), mock(problem.dtype_c), M, N, M * N, N, 1, N, 1,
                             grid=(1, 1))._init_handles()
    return {"registers": compiled.n_regs, "spills": compiled.n_spills, "shared_bytes": compiled.metadata.shared}


def make_operand(rows: int, cols: int, column_major: bool, dtype, device, generator):
    """A random (rows, cols) matrix, stored column-major when asked. Never zeros: they hide bugs."""
    if column_major:
        return torch.randn((cols, rows), generator=generator, device=device).to(dtype).t()
    return torch.randn((rows, cols), generator=generator, device=device).to(dtype)


def make_operands(problem: Problem, device, seed: int = 0):
    generator = torch.Generator(device=device).manual_seed(seed)
    a = make_operand(problem.M, problem.K, problem.col_a, problem.dtype_a, device, generator)
    b = make_operand(problem.K, problem.N, problem.col_b, problem.dtype_b, device, generator)
    c = torch.empty((problem.M, problem.N), dtype=problem.dtype_c, device=device)
    return a, b, c


def relative_error(c, a, b) -> float:
    """||C - A@B|| / ||A@B|| with A@B computed in float64; NaN anywhere in C gives inf."""
    reference = a.double() @ b.double()
    result = c.double()
    if not torch.isfinite(result).all():
        return float("inf")
    return (torch.linalg.norm(result - reference) / torch.linalg.norm(reference)).item()


def check_config(launcher, problem: Problem, device, seed: int = 0) -> float:
    """Run one launcher on fresh random inputs with C poisoned (NaN) first; returns the relative error."""
    a, b, c = make_operands(problem, device, seed)
    c.fill_(float("nan"))
    launcher(a, b, c)
    return relative_error(c, a, b)


def test_gemm(launchers: dict, problem: Problem, device, time_kernels: bool) -> int:
    """Check every config against float64 (and time it on a GPU); returns the number of failures."""
    failures = 0
    for name, launcher in launchers.items():
        error = check_config(launcher, problem, device)
        ok = error <= problem.tolerance
        failures += not ok
        line = f"{'PASS' if ok else 'FAIL'} {name}: relative error {error:.2e}"
        if time_kernels:
            a, b, c = make_operands(problem, device)
            ms = triton.testing.do_bench(lambda: launcher(a, b, c), return_mode="median")
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
