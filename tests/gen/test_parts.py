"""tune_gemm.generate.parts: every config in exactly one small part module, each part loads alone with just its configs, a
kernel keeps its Triton cache key in any module that holds it, and the first part of a large space loads far
faster than the whole module."""

from __future__ import annotations

import time

import pytest
from helpers import fresh_kernel_families, problem

from tune_gemm.core.config import Config
from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.generate import write_module
from tune_gemm.generate.loader import load_module
from tune_gemm.generate.naming import kernel_name
from tune_gemm.generate.parts import write_parts
from tune_gemm.space.prune import prune

PLAIN = Config.parse("BM32_BN32_BK32_GM1_SK1_nW4_nS2")
SPLIT = Config.parse("BM64_BN32_BK32_GM1_SK2_nW4_nS2")  # with a reduce kernel
TMA = Config(64, 64, 64, 2, 1, 4, 2, PERSISTENT_TMA=1)  # its part imports the TMA family, the others' do not


@pytest.fixture
def compiled_kernels(monkeypatch):
    fresh_kernel_families(monkeypatch)  # the families a generated module imports decorated as it is, as JIT functions
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # JIT functions, as on a GPU (no GPU needed to load)


def test_every_config_is_in_exactly_one_part_and_each_part_holds_just_its_own(tmp_path, small_space):
    configs = prune(problem(32, 32, 32), INTERPRETER_PROFILE, small_space).configs
    assert len(configs) > 10
    parts = write_parts(problem(32, 32, 32), configs, tmp_path, size=4)
    names = [str(c) for c in configs]
    assert list(parts) == names  # each config once, in the order of the list
    by_part: dict = {}
    for name, path in parts.items():
        by_part.setdefault(path, []).append(name)
    assert len(by_part) == -(-len(names) // 4) and all(len(held) <= 4 for held in by_part.values())
    assert [name for held in by_part.values() for name in held] == names  # contiguous slices
    for path, held in by_part.items():
        module = load_module(path)
        assert list(module.LAUNCHERS) == held and list(module.COMPILERS) == held


def test_without_a_size_a_small_space_is_one_part(tmp_path):
    parts = write_parts(problem(64, 64, 64), [PLAIN, SPLIT], tmp_path)
    assert len(set(parts.values())) == 1 and list(parts) == [str(PLAIN), str(SPLIT)]


def test_a_kernel_has_one_cache_key_in_its_part_and_in_the_whole_module(tmp_path, compiled_kernels):
    configs = [TMA, PLAIN, SPLIT]
    whole = load_module(write_module(problem(64, 64, 64), configs, tmp_path))
    parts = write_parts(problem(64, 64, 64), configs, tmp_path, size=1)
    for config in configs:
        part = load_module(parts[str(config)])
        in_part, in_whole = getattr(part, kernel_name(config)), getattr(whole, kernel_name(config))
        assert in_part.fn.__code__.co_filename != in_whole.fn.__code__.co_filename
        assert in_part.cache_key == in_whole.cache_key
    keys = {getattr(whole, kernel_name(config)).cache_key for config in configs}
    assert len(keys) == len(configs)  # the keys still tell configs apart


@pytest.mark.slow  # a load-time benchmark
def test_the_first_part_of_a_large_space_loads_far_faster_than_the_whole_module(tmp_path, compiled_kernels):
    size = problem(1024, 1024, 1024)
    # 6,000 of its 22,000 configs: a module's import time grows faster than its size, and the whole space's would
    # take minutes to import
    configs = prune(size, INTERPRETER_PROFILE).configs[:6000]
    assert len(configs) > 5000  # a large space: its whole module takes seconds to import
    whole = write_module(size, configs, tmp_path)
    parts = write_parts(size, configs, tmp_path)
    first = parts[str(configs[0])]
    load_module(parts[str(configs[-1])])  # another part first: torch and triton are imported for both timings

    started = time.perf_counter()
    module = load_module(first)
    part_seconds = time.perf_counter() - started
    started = time.perf_counter()
    load_module(whole)
    whole_seconds = time.perf_counter() - started
    assert str(configs[0]) in module.COMPILERS
    assert part_seconds * 10 < whole_seconds, (part_seconds, whole_seconds)
