"""On a GPU (`pytest -m gpu`, device machine): tune real sizes with each timer and check the winners."""

from __future__ import annotations

import pytest
import torch
import yaml
from helpers import H100_FP16_PEAK_TFLOPS

from tune_gemm.cli import main

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

SIZES = [(16, 4096, 4096), (512, 512, 512), (1000, 1000, 1000)]
GPU_SPACE = """\
BLOCK_SIZE_M: [16, 64, 128]
BLOCK_SIZE_N: [32, 64, 128]
BLOCK_SIZE_K: [32, 64]
GROUP_SIZE_M: [1, 8]
SPLIT_K: [1, 4]
num_warps: [4, 8]
num_stages: [3, 4]
"""


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    """Results of tuning SIZES once per timer: {timer: [entries]}."""
    directory = tmp_path_factory.mktemp("gpu")
    space = directory / "space.yaml"
    space.write_text(GPU_SPACE)
    sizes = directory / "sizes.yaml"
    sizes.write_text("".join(f"- {{M: {m}, N: {n}, K: {k}}}\n" for m, n, k in SIZES))
    results = {}
    for timer in ("cupti", "events"):
        out = directory / f"{timer}.yaml"
        code = main(["--gemm_size_file", str(sizes), "--space", str(space), "--profiler", timer, "--compare",
                     "--tuning_results_file", str(out)])
        assert code == 0
        results[timer] = yaml.safe_load(out.read_text())
    return results


@pytest.mark.parametrize("timer", ["cupti", "events"])
def test_every_size_has_a_checked_plausible_winner(tuned, timer):
    entries = tuned[timer]
    assert [(e["M"], e["N"], e["K"]) for e in entries] == SIZES
    for entry in entries:
        assert entry["profiler"] == timer
        assert 0 < entry["tflops"] < H100_FP16_PEAK_TFLOPS
        assert entry["matmul_time_us"] > 0
        if all(dim % 16 == 0 for dim in (entry["N"], entry["K"])):
            # a tuned Triton kernel within 3x of cuBLAS: far slower means the timer or the kernel is broken.
            # (Leading dimensions that are no multiple of 16 elements get no vector loads: see README.)
            assert entry["time_us"] < 3 * entry["matmul_time_us"], entry


def test_timers_agree_on_the_winners_speed(tuned):
    for cupti, events in zip(tuned["cupti"], tuned["events"]):
        # events time whole launches: the gaps between event records and kernels add a few us
        # (measured on H100: 19.2 vs 15.2 us at 16x4096x4096); beyond that the winners must agree,
        # and so must torch.matmul
        assert events["time_us"] == pytest.approx(cupti["time_us"], rel=0.25, abs=5.0), (cupti, events)
        assert events["matmul_time_us"] == pytest.approx(cupti["matmul_time_us"], rel=0.25, abs=5.0)


def test_recorded_winners_pass_compare_wo_tuning(tuned, tmp_path):
    out = tmp_path / "cupti.yaml"
    out.write_text(yaml.safe_dump(tuned["cupti"]))
    assert main(["--gemm_size_file", str(out), "--compare_wo_tuning"]) == 0


def test_gpu_faults_are_survived(tmp_path, monkeypatch):
    """A real illegal-address kernel, an abort and an exception, injected into three configs."""
    from tune_gemm.compile.faults import ENV_VAR

    space = tmp_path / "space.yaml"
    space.write_text("BLOCK_SIZE_M: [64, 128]\nBLOCK_SIZE_N: [64, 128]\nBLOCK_SIZE_K: [64]\nGROUP_SIZE_M: [1]\n"
                     "SPLIT_K: [1]\nnum_warps: [4]\nnum_stages: [3]\nPERSISTENT_TMA: [0]\n"
                     "STATIC_SHAPE: [0]\n")  # 4 plain configs
    faulty = {"BM64_BN64_BK64_GM1_SK1_nW4_nS3": "memory", "BM64_BN128_BK64_GM1_SK1_nW4_nS3": "crash",
              "BM128_BN64_BK64_GM1_SK1_nW4_nS3": "raise"}
    monkeypatch.setenv(ENV_VAR, ",".join(f"{name}={fault}" for name, fault in faulty.items()))
    out = tmp_path / "out.yaml"
    assert main(["-m", "1024", "-n", "1024", "-k", "1024", "--space", str(space), "--compare",
                 "--tuning_results_file", str(out)]) == 0
    [entry] = yaml.safe_load(out.read_text())
    assert (entry["BLOCK_SIZE_M"], entry["BLOCK_SIZE_N"]) == (128, 128)  # the only healthy config
