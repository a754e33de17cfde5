"""On a Hopper GPU (`pytest -m gpu`): the warp-group family (Gluon) compiles ahead of launch the very binary the launch
uses and runs right: two, three and four consumer warp groups, fp16 and bf16, B row- or column-major, a bias, an fp32 C,
sizes that leave partial tiles on every side and K tails, through generated modules and through the run-time
launcher; and the pruner keeps it on this GPU."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from helpers import check_compiled_ahead, problem

from tune_gemm.core.config import Config
from tune_gemm.core.device import detect_device
from tune_gemm.kernels.bound import launcher_for
from tune_gemm.space.prune import prune

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0),
                       reason="needs a Hopper GPU (compute capability 9.0: warpgroup MMA)"),
]

WG = {"PERSISTENT_TMA": 1, "WARP_GROUPS": 1}
CONFIGS = [
    Config(192, 192, 32, 8, 1, 12, 5, **WG),
    Config(192, 192, 64, 4, 1, 12, 3, **WG),
    Config(128, 192, 64, 4, 1, 8, 4, **WG),
    Config(128, 192, 32, 1, 1, 8, 2, **WG),
    Config(192, 96, 64, 8, 1, 12, 5, **WG),  # parts 64 + 32
    Config(256, 160, 32, 1, 1, 16, 5, **WG),  # four warp groups; parts 128 + 32
    Config(192, 160, 64, 8, 1, 12, 3, **WG),
    Config(128, 160, 32, 4, 1, 8, 6, **WG),
    Config(128, 320, 32, 4, 1, 8, 5, **WG),  # parts 256 + 64: wider than any other kernel's tile
    Config(128, 384, 32, 8, 1, 8, 4, **WG),  # parts 256 + 128
]
SIZES = [  # M, N, K, col_b: every size leaves partial tiles on both sides but the first
    (3072, 1536, 4096, False),
    (1000, 776, 520, False),  # K = 16.25 tiles of 32: a tail the copy engine fills with zeros
    (577, 1000, 4104, True),
    (200, 392, 136, True),  # fewer tiles than SMs
    (4000, 4104, 1000, False),  # more tiles than SMs: programs walk several
]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("M,N,K,col_b", SIZES)
def test_compiled_ahead_and_correct(tmp_path, dtype, M, N, K, col_b):
    ahead = check_compiled_ahead(tmp_path, problem(M, N, K, dtype, col_b=col_b), CONFIGS)
    assert set(ahead.values()) == {"ok"}, ahead


@pytest.mark.parametrize("dtype_c", ["fp16", "fp32"])
def test_a_bias_and_an_fp32_output(tmp_path, dtype_c):
    p = replace(problem(1000, 1032, 1000, "fp16", col_b=True, dtype_c=dtype_c), bias=True)
    # an fp32 C's staging buffers (three warp groups x 64 x 192 x 4 bytes) leave room for two stages of 32-element K
    configs = [Config(192, 192, 32, 8, 1, 12, 2, **WG), Config(128, 192, 32, 4, 1, 8, 3, **WG),
               Config(256, 160, 32, 4, 1, 16, 2, **WG), Config(128, 320, 32, 4, 1, 8, 2, **WG)]
    assert set(check_compiled_ahead(tmp_path, p, configs).values()) == {"ok"}


def test_the_run_time_launcher_runs_any_shape():
    torch.manual_seed(3)
    launcher = launcher_for(CONFIGS[0])
    for M, N, K in ((3072, 1536, 4096), (333, 2008, 744)):
        a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(N, K, device="cuda", dtype=torch.bfloat16).T  # column-major
        c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)
        launcher(a, b, c)
        reference = a.double() @ b.double()
        assert ((c.double() - reference).norm() / reference.norm()).item() < 1e-2


def test_the_launcher_refuses_a_column_major_a():
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16).T
    b = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
    with pytest.raises(ValueError, match="row-major"):
        launcher_for(CONFIGS[0])(a, b, torch.empty(1024, 1024, device="cuda", dtype=torch.float16))


def test_pruning_keeps_warp_group_configs_on_this_gpu():
    device = detect_device()
    assert device.warp_groups
    kept = prune(problem(3072, 1536, 4096), device).configs
    assert any(config.WARP_GROUPS for config in kept)
    assert any(config.BLOCK_SIZE_N == 320 for config in prune(problem(2048, 2560, 4096), device).configs)
