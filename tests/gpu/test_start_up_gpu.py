"""On the GPU (`pytest -m gpu`): the helpers tune_gemm.run.start_up starts ahead of a run's first size (compile workers, a
timing child in standby, both with a real GPU driver and the run's timer) are the ones its search then uses."""

from __future__ import annotations

import re

import pytest
import torch
from helpers import problem

from tune_gemm.compile.pool import WORKER_PROCESSES
from tune_gemm.core.device import detect_device
from tune_gemm.measure import choose_profiler
from tune_gemm.measure.standby import STANDBY
from tune_gemm.run.pipeline import tune_size
from tune_gemm.run.start_up import helpers_ready, start_helpers
from tune_gemm.search.checkpoint import discard
from tune_gemm.search.settings import TuneSettings
from tune_gemm.space.ranges import RangeSpace

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

SPACE = RangeSpace(block_m=(64, 128), block_n=(64, 128), block_k=(64,), group_m=(8,), split_k=(1,), num_warps=(4,),
                   num_stages=(3,))


def test_the_first_size_uses_the_helpers_started_ahead_of_it(tmp_path):
    WORKER_PROCESSES.stop()
    STANDBY.stop()
    device = detect_device()
    settings = TuneSettings(profiler=choose_profiler("auto", device.vendor), num_threads=4, space=SPACE,
                            workdir=tmp_path, verbose=True, time_budget=60)
    start_helpers(settings)
    waited = helpers_ready(settings)
    print(f"compile workers and timing child ready after {waited:.1f} s")
    assert waited > 0 and WORKER_PROCESSES.wait_ready(0.0) and STANDBY.wait_ready(0.0)
    starts = WORKER_PROCESSES.starts
    logged = []
    outcome = tune_size(problem(1024, 1024, 1024), device, settings, compare=False, log=logged.append)
    discard(outcome.checkpoint)
    assert "start-up" not in outcome.seconds  # nothing left to wait for
    assert WORKER_PROCESSES.starts == starts  # the workers started ahead compiled the size
    timelines = [re.search(r"child timeline \(s since launch\): (.*)", line) for line in logged]
    first = next(found[1] for found in timelines if found)
    assert first.startswith("imports") and ", ready " in first  # the first child was the one waiting in standby
