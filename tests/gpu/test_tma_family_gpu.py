"""On a Hopper GPU (`pytest -m gpu`): the persistent TMA family compiles ahead of launch, runs right, times whole."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from helpers import problem

from gen import write_module
from gen.loader import load_module
from prune.config import Config

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0),
                       reason="needs a Hopper (or newer) NVIDIA GPU"),
]

CONFIGS = [
    Config(128, 128, 64, 8, 1, 4, 4, PERSISTENT_TMA=1),
    Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, EPILOGUE_SUBTILE=1),
    Config(128, 256, 64, 8, 1, 8, 3, PERSISTENT_TMA=1, WARP_SPECIALIZE=1),
]



@pytest.mark.parametrize("dtype", ["fp16", "bf16"])  # the rules keep the family to 16-bit inputs
@pytest.mark.parametrize("M,N,K,col_a,col_b", [
    (1024, 1024, 1024, False, False),
    (4095, 4097, 1023, False, False),  # odd leading dimensions: padded copies
    (1000, 1000, 1000, True, True),
    (777, 2048, 512, False, True),
])
def test_compiled_ahead_and_correct(tmp_path, dtype, M, N, K, col_a, col_b):
    module = load_module(write_module(problem(M, N, K, dtype, col_a, col_b), CONFIGS, tmp_path))
    ahead = {}
    for name, launcher in module.LAUNCHERS.items():
        try:
            module.COMPILERS[name]()  # what the compile pool does: mock descriptors, no launch
            ahead[name] = "ok"
        except Exception as error:  # noqa: BLE001 - reported below; the launch must still be right
            ahead[name] = f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"
        error = module.check_config(launcher, module.PROBLEM, "cuda", seed=7)
        assert error <= module.PROBLEM.tolerance, (name, error)
    print(f"compile ahead {dtype} {M}x{N}x{K} {col_a} {col_b}: {ahead}")
    assert "ok" in ahead.values(), ahead


def test_bias_on_gpu(tmp_path):
    p = replace(problem(1000, 1024, 512), bias=True)
    module = load_module(write_module(p, CONFIGS[:2], tmp_path))
    for launcher in module.LAUNCHERS.values():
        a, b, c, bias = module.make_operands(module.PROBLEM, "cuda", seed=1)
        c.fill_(float("nan"))
        launcher(a, b, c, bias)
        assert module.relative_error(c, a, b, bias) <= module.PROBLEM.tolerance


def test_cupti_counts_the_padding_copies(tmp_path):
    """A launch that pads odd rows runs copy kernels too: the timer must count them, not just the GEMM."""
    from profiling.backends import CuptiTimer
    from profiling.schema import per_launch_totals

    module = load_module(write_module(problem(4095, 4097, 1023), CONFIGS[:1], tmp_path))
    (name, launcher), = module.LAUNCHERS.items()
    a, b, c = module.make_operands(module.PROBLEM, "cuda")
    rows = CuptiTimer().measure(name, lambda i: launcher(a, b, c), 6)
    kernels_per_launch = len(rows) / 6
    assert kernels_per_launch > 1  # the GEMM plus its copies
    totals = per_launch_totals(rows, name)
    gemm_only = [r.duration_ns for r in rows if r.kernel_name.startswith("matmul_kernel_")]
    assert len(totals) == 6 and all(t.duration_ns > g for t, g in zip(totals, gemm_only))
