"""On the GPU (`pytest -m gpu`): the fast search's parts measured for real.

- configs timed in one CUPTI session (batches) get the times they get in a session each;
- a second size sharing the first one's binaries finds them in Triton's cache (tune_gemm.generate.loader);
- halving and refine pick the exhaustive winner, or one within a few percent of it, on a real space;
- the timing child finds every kernel the compile workers built (one cache entry per kernel), split-K reduction
  kernels and fused reductions too, and refine's later rounds find them from the parts written for those rounds.
"""

from __future__ import annotations

import json
import time

import pytest
import torch
from helpers import problem

from tune_gemm.core.config import Config
from tune_gemm.core.device import detect_device
from tune_gemm.generate.naming import REDUCE_SUFFIX
from tune_gemm.measure import choose_profiler
from tune_gemm.run.pipeline import tune_size
from tune_gemm.search import timer
from tune_gemm.search.checkpoint import discard
from tune_gemm.search.refine import RefinePlan, times_whole_space
from tune_gemm.search.settings import TuneSettings
from tune_gemm.space.ranges import RangeSpace

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

SPACE = RangeSpace(block_m=(16, 64, 128), block_n=(64, 128, 256), block_k=(32, 64), group_m=(1, 8), split_k=(1, 4),
                   num_warps=(4, 8), num_stages=(3, 4))  # 288 configs before pruning


def _tune(tmp_path, size, **overrides):
    device = detect_device()
    settings = TuneSettings(**{"profiler": choose_profiler("cupti", device.vendor), "num_threads": 16, "space": SPACE,
                               "workdir": tmp_path, "search": "exhaustive", **overrides})
    started = time.perf_counter()
    outcome = tune_size(problem(*size), device, settings, compare=False)
    discard(outcome.checkpoint)  # the next call starts afresh
    return outcome, time.perf_counter() - started


def test_batched_cupti_sessions_time_like_one_session_per_config(tmp_path, monkeypatch):
    batched, _ = _tune(tmp_path, (2048, 2048, 2048))
    monkeypatch.setattr(timer, "CUPTI_BATCH", 1)
    single, _ = _tune(tmp_path, (2048, 2048, 2048))
    ratios = (batched.timings.set_index("config")["time_us"] / single.timings.set_index("config")["time_us"]).dropna()
    print(f"batched / single session: median {ratios.median():.4f}, min {ratios.min():.4f}, max {ratios.max():.4f} "
          f"over {len(ratios)} configs")
    assert len(ratios) == len(batched.timings) == len(single.timings)
    assert 0.98 <= ratios.median() <= 1.02
    assert batched.winner_time_us == pytest.approx(single.winner_time_us, rel=0.03)


def test_a_second_size_compiles_from_the_first_ones_binaries(tmp_path, monkeypatch):
    cache = tmp_path / "triton_cache"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))  # empty: the first size builds everything
    first, _ = _tune(tmp_path, (2048, 2048, 2048))
    built = len(list(cache.iterdir()))  # one directory per binary Triton built
    second, _ = _tune(tmp_path, (4096, 4096, 2048))  # same specialization (multiples of 16), same K
    new = len(list(cache.iterdir())) - built
    unshared = set(second.compiled.compiled) - set(first.compiled.compiled)
    print(f"first size: {built} cache entries, compile {first.seconds['compile']:.1f} s for "
          f"{len(first.compiled.compiled)} configs; second: {new} new entries, compile "
          f"{second.seconds['compile']:.1f} s for {len(second.compiled.compiled)} configs ({len(unshared)} unshared)")
    assert len(second.compiled.compiled) - len(unshared) >= 0.8 * len(second.compiled.compiled)
    # without tune_gemm.generate.loader's pin every config of the second size would be a new entry (its line differs)
    assert new <= 2 * len(unshared) + 4


@pytest.mark.parametrize("search", ["halving", "refine"])
@pytest.mark.parametrize("size", [(4096, 4096, 4096), (16, 4096, 4096)])
def test_a_faster_search_lands_on_the_exhaustive_winner_or_close(tmp_path, size, search):
    exhaustive, exhaustive_s = _tune(tmp_path, size)
    fast, fast_s = _tune(tmp_path, size, search=search)
    times = exhaustive.timings.set_index("config")["time_us"]
    print(f"{size}: exhaustive {exhaustive.winner} {exhaustive.winner_time_us:.2f} us in {exhaustive_s:.1f} s; "
          f"{search} {fast.winner} {fast.winner_time_us:.2f} us in {fast_s:.1f} s; rounds "
          + ", ".join(f"{r.configs}x{r.iters}" for r in fast.searched.rounds))
    # the exhaustive search's own time of the fast search's pick: within 3% of its winner (near-ties may swap)
    assert times[str(fast.winner)] <= 1.03 * exhaustive.winner_time_us
    launches = [sum(r.configs * r.iters for r in outcome.searched.rounds) for outcome in (fast, exhaustive)]
    if search == "refine" and times_whole_space([Config.parse(name) for name in times.index], RefinePlan()):
        assert launches[0] == launches[1]  # few variants per shape: refine times the space whole, in one round
    else:  # what makes it faster: fewer timed launches (halving), fewer configs (refine)
        assert launches[0] < launches[1]


MIXED = RangeSpace(block_m=(64, 128), block_n=(128,), block_k=(64,), group_m=(8,), split_k=(1,), num_warps=(4, 8),
                   num_stages=(3,), persistent_tma=(0, 1))  # plain and TMA kernels in one module
# split-K kernels, their partials summed by reduction kernels or in the GEMM (FUSED_REDUCE)
SPLIT = RangeSpace(block_m=(64,), block_n=(32, 64), block_k=(128,), group_m=(1,), split_k=(1, 8), num_warps=(4,),
                   num_stages=(3,), fused_reduce=(0, 1))


@pytest.mark.parametrize("size, space", [((4096, 4096, 4096), MIXED), ((128, 256, 8192), SPLIT)],
                         ids=["plain-and-tma", "split-k"])
def test_the_timing_child_builds_no_kernel_the_compile_workers_built(tmp_path, monkeypatch, size, space):
    cache = tmp_path / "triton_cache"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    outcome, _ = _tune(tmp_path, size, space=space)
    _assert_each_kernel_built_once(cache, outcome)


STAGED = RangeSpace(block_m=(64, 128), block_n=(128, 256), block_k=(64,), group_m=(1, 8), split_k=(1,),
                    num_warps=(4, 8), num_stages=(3, 4))  # shapes of up to 4 variants: refine runs its three rounds


def test_later_rounds_load_their_configs_from_parts_of_their_own_and_find_the_binaries_built(tmp_path, monkeypatch):
    # rounds 1 and 2 load their configs from parts written for them (tune_gemm.search.runner, regroup): round 2's finalists
    # were compiled from other modules, and a second cache entry would be the child building one again
    cache = tmp_path / "triton_cache"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache))
    outcome, _ = _tune(tmp_path, (4096, 4096, 4096), space=STAGED, search="refine")
    assert [r.index for r in outcome.searched.rounds] == [0, 1, 2], outcome.searched.rounds
    assert all(r.configs for r in outcome.searched.rounds), outcome.searched.rounds
    _assert_each_kernel_built_once(cache, outcome)


def _assert_each_kernel_built_once(cache, outcome) -> None:
    entries: dict[str, int] = {}
    for metadata in cache.glob("*/*.json"):
        if not metadata.name.startswith("__grp__"):
            name = json.loads(metadata.read_text()).get("name", "")
            entries[name] = entries.get(name, 0) + 1
    kernels = {name: count for name, count in entries.items() if name.startswith("matmul_kernel_")}
    print(f"{len(outcome.compiled.compiled)} configs compiled; cache entries per kernel: {kernels}")
    # tune_gemm.generate.loader settles Triton 3.6's order-dependent keys: a second entry would be the child building it again
    gemms = [name for name in kernels if not name.endswith(REDUCE_SUFFIX)]  # a split-K config's reduction apart
    assert len(gemms) == len(outcome.compiled.compiled) and set(kernels.values()) == {1}
