"""gen.loader: a config's kernel has one Triton cache key in the module of every size that holds it."""

from __future__ import annotations

import importlib.util

import pytest

from gen import write_module
from gen.loader import load_module
from gen.naming import kernel_name
from helpers import problem
from prune.config import Config

SHARED = Config.parse("BM32_BN32_BK32_GM1_SK1_nW4_nS2")
OTHERS = [Config.parse("BM16_BN16_BK16_GM1_SK1_nW1_nS1"), Config.parse("BM64_BN32_BK32_GM1_SK2_nW4_nS2")]


@pytest.fixture
def compiled_kernels(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)  # JIT functions, as on a GPU (no GPU needed for keys)


def test_the_same_config_gets_the_same_cache_key_in_two_sizes(tmp_path, compiled_kernels):
    # the shared config sits on different lines: second in one module, third in the other
    small = write_module(problem(64, 64, 64), [OTHERS[0], SHARED], tmp_path)
    large = write_module(problem(128, 128, 128), [*OTHERS, SHARED], tmp_path)
    kernels = [getattr(load_module(path), kernel_name(SHARED)) for path in (small, large)]
    assert kernels[0].def_file_line_number != kernels[1].def_file_line_number
    assert kernels[0].cache_key == kernels[1].cache_key

    # loaded without the pin, Triton's key follows the line, and the second size would compile it again
    spec = importlib.util.spec_from_file_location("unpinned", large)
    unpinned = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(unpinned)
    assert getattr(unpinned, kernel_name(SHARED)).cache_key != kernels[0].cache_key


def test_different_configs_keep_different_keys(tmp_path, compiled_kernels):
    module = load_module(write_module(problem(64, 64, 64), [SHARED, *OTHERS], tmp_path))
    keys = {getattr(module, kernel_name(config)).cache_key for config in [SHARED, *OTHERS]}
    assert len(keys) == 3
