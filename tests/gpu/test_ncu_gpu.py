"""On the GPU: ncu for real, against the cupti timer, on two sizes (`pytest -m gpu`)."""

from __future__ import annotations

import time

import pytest
import torch
from helpers import problem

from tune_gemm.core.device import detect_device
from tune_gemm.measure import choose_profiler
from tune_gemm.run.pipeline import tune_size
from tune_gemm.search.settings import TuneSettings
from tune_gemm.space.ranges import RangeSpace

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

SPACE = RangeSpace(block_m=(16, 64, 128), block_n=(64, 128), block_k=(64,), group_m=(1, 8), split_k=(1, 4),
                   num_warps=(4, 8), num_stages=(3, 4))
# Same winner, or a winner whose cupti time is within this of cupti's own winner: ncu replays each
# kernel alone with caches flushed, cupti times them in a stream, so near-ties may swap.
NOISE = 0.05


@pytest.mark.parametrize("M,N,K", [(16, 4096, 4096), (2048, 2048, 2048)])
def test_ncu_picks_the_cupti_winner_or_one_within_noise(tmp_path, M, N, K):
    device = detect_device()
    outcomes, seconds = {}, {}
    for name in ("cupti", "ncu"):
        settings = TuneSettings(profiler=choose_profiler(name, device.vendor), num_threads=16, workdir=tmp_path,
                                space=SPACE, search="exhaustive")  # both timers see every config
        started = time.perf_counter()
        outcomes[name] = tune_size(problem(M, N, K), device, settings, compare=False)
        seconds[name] = time.perf_counter() - started
    cupti, ncu = outcomes["cupti"], outcomes["ncu"]
    for name, outcome in outcomes.items():
        print(f"{M}x{N}x{K} {name}: winner {outcome.winner} {outcome.winner_time_us:.2f} us, torch.matmul "
              f"{outcome.matmul_time_us:.2f} us, {len(outcome.timings)} configs in {seconds[name]:.1f} s")
    assert len(ncu.timings) == len(cupti.timings)  # ncu saw every config
    assert ncu.matmul_time_us == pytest.approx(cupti.matmul_time_us, rel=0.3)
    cupti_time_of_ncu_winner = cupti.timings.set_index("config").loc[str(ncu.winner), "time_us"]
    assert cupti_time_of_ncu_winner <= cupti.winner_time_us * (1 + NOISE)
