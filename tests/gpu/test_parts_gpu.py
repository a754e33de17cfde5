"""On the GPU (`pytest -m gpu`): part modules (tune_gemm.generate.parts) for real.

- a binary compiled from a part module is found in Triton's cache from the whole module and from a part of
  another slicing (no new cache entry);
- the 1024³ fp16 space (about 9000 configs on the H100) starts compiling and timing at once: under a 60-second
  budget many configs are timed (before part modules, the first config compiled only after 41 s), round 1 refines
  the best shapes round 0 sampled, and the budget that cut the search leaves time for its closing round, whose
  flushed times pick the winner.
"""

from __future__ import annotations

import re

import pytest
import torch
from helpers import problem

from tune_gemm.compile.pool import compile_all
from tune_gemm.core.config import Config
from tune_gemm.core.device import detect_device
from tune_gemm.generate import write_module
from tune_gemm.generate.parts import write_parts
from tune_gemm.measure import choose_profiler
from tune_gemm.measure.child_timeline import REUSED_ORIGIN
from tune_gemm.run.pipeline import tune_size
from tune_gemm.search.checkpoint import discard
from tune_gemm.search.search import sample_seconds
from tune_gemm.search.settings import TuneSettings
from tune_gemm.space.ranges import space_for

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

NAMES = ["BM64_BN64_BK32_GM1_SK1_nW4_nS3", "BM128_BN64_BK32_GM8_SK1_nW4_nS3", "BM64_BN128_BK64_GM1_SK1_nW8_nS3",
         "BM128_BN128_BK32_GM8_SK1_nW8_nS4", "BM64_BN64_BK64_GM1_SK4_nW4_nS3", "BM32_BN64_BK64_GM1_SK1_nW4_nS4"]


def test_binaries_built_from_parts_are_found_from_any_module_holding_the_config(tmp_path, monkeypatch):
    cache = tmp_path / "triton_cache"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))  # empty: the parts build everything
    size, configs = problem(1024, 1024, 1024), [Config.parse(name) for name in NAMES]
    whole = write_module(size, configs, tmp_path)
    for folder in ("two", "four"):
        (tmp_path / folder).mkdir()
    by_two = write_parts(size, configs, tmp_path / "two", size=2)
    built = compile_all(whole, NAMES, 4, interpret=False, parts=by_two)  # spawned workers, each config from its part
    assert sorted(built.compiled) == sorted(NAMES), built.failed
    entries = len(list(cache.iterdir()))

    from_whole = compile_all(whole, NAMES, 2, interpret=False, pool="thread")
    by_four = write_parts(size, configs[::-1], tmp_path / "four", size=4)  # other slices, other lines
    from_others = compile_all(whole, NAMES, 2, interpret=False, pool="thread", parts=by_four)
    print(f"{entries} cache entries after compiling from parts of 2; after the whole module and parts of 4: "
          f"{len(list(cache.iterdir()))}")
    assert sorted(from_whole.compiled) == sorted(from_others.compiled) == sorted(NAMES)
    assert len(list(cache.iterdir())) == entries  # every binary was found: no new entry


def test_the_1024_cube_space_starts_timing_at_once(tmp_path):
    device = detect_device()
    settings = TuneSettings(profiler=choose_profiler("cupti", device.vendor), num_threads=16,
                            space=space_for(device.vendor), workdir=tmp_path, time_budget=60.0, verbose=True)
    logged = []
    outcome = tune_size(problem(1024, 1024, 1024), device, settings, compare=True, log=logged.append)
    discard(outcome.checkpoint)
    compiled = len(outcome.compiled.compiled) + len(outcome.compiled.failed)
    print(f"1024^3: {outcome.candidates} configs; in the 60 s budget {compiled} compiled, {outcome.searched.timed} "
          f"timed; winner {outcome.winner} {outcome.winner_time_us:.2f} us (torch.matmul {outcome.matmul_time_us})")
    assert outcome.candidates > 5000
    assert outcome.searched.timed >= 100
    closing = outcome.searched.rounds[-1]
    # every finalist timed again: the closing round ran in round 1's child, reused
    assert closing.closing and closing.configs == closing.planned == 8 and outcome.searched.flushed, \
        outcome.searched.rounds
    # round 0 stopped at 48 s, leaving round 1 its reserve to refine the best shapes it sampled
    sampled, refined = outcome.searched.rounds[:2]
    assert sampled.cut_at == sample_seconds(60.0) == 48.0 and refined.index == 1 and refined.configs >= 1, \
        outcome.searched.rounds
    assert outcome.check_error is not None and outcome.check_error <= problem(1024, 1024, 1024).dtype_a.tolerance
    # round 0's child, started for it, then ran the later rounds (each a job handed to it, warm)
    children = re.findall(r"child timeline \(s since ([^)]*)\)", "\n".join(logged))
    assert children[0] == "launch" and REUSED_ORIGIN in children[1:], children
