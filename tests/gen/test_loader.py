"""tune_gemm.generate.loader: a config's kernel has one Triton cache key in the module of every size that holds it."""

from __future__ import annotations

import importlib.util

import pytest
from helpers import fresh_kernel_families, problem

from tune_gemm.core.config import Config
from tune_gemm.generate import write_module
from tune_gemm.generate.loader import helper_functions, load_module, pin_kernel_lines, settle_helper_keys
from tune_gemm.generate.naming import kernel_name

SHARED = Config.parse("BM32_BN32_BK32_GM1_SK1_nW4_nS2")
OTHERS = [Config.parse("BM16_BN16_BK16_GM1_SK1_nW1_nS1"), Config.parse("BM64_BN32_BK32_GM1_SK2_nW4_nS2")]


@pytest.fixture
def compiled_kernels(monkeypatch):
    fresh_kernel_families(monkeypatch)  # the families a generated module imports decorated as it is, as JIT functions
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


def _update_hash_as_triton_3_6(finder, func):
    """Triton 3.6's DependenciesFinder._update_hash: the callee's recorded globals are merged before its key is
    computed, so a callee asked for the first time contributes none (Triton 3.9 computes the key first)."""
    finder.used_global_vals.update(func.used_global_vals)
    finder.hasher.update((func.cache_key + str(getattr(func, "noinline", False))).encode("utf-8"))


def _keys_in_order(monkeypatch, path, names: list[str], load) -> dict[str, str]:
    """The kernels' keys asked for in this order by a process that loads `path` alone: the families its kernels call
    imported anew, so that no key an earlier load computed is there yet."""
    fresh_kernel_families(monkeypatch)
    module = load(path)
    return {name: getattr(module, name).cache_key for name in names}


def _pinned_only(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pin_kernel_lines(module)
    return module


def test_kernel_keys_do_not_depend_on_which_kernel_a_process_asks_for_first(tmp_path, compiled_kernels, monkeypatch):
    from triton.runtime import jit

    monkeypatch.setattr(jit.DependenciesFinder, "_update_hash", _update_hash_as_triton_3_6)
    configs = [SHARED, Config.parse("BM64_BN64_BK64_GM1_SK1_nW4_nS2_TMA1")]
    path = write_module(problem(64, 64, 64), configs, tmp_path)
    names = [kernel_name(config) for config in configs]
    # under the emulated Triton 3.6, the plain kernel's key depends on whether a TMA kernel (whose helpers reach
    # dot_accumulate's constant first) was asked for before it: what the compile workers and the child disagreed on
    assert _keys_in_order(monkeypatch, path, names, _pinned_only) != _keys_in_order(monkeypatch, path, names[::-1], _pinned_only)
    assert _keys_in_order(monkeypatch, path, names, load_module) == _keys_in_order(monkeypatch, path, names[::-1], load_module)


def test_settling_the_helpers_leaves_the_keys_triton_computes_when_it_is_order_independent(tmp_path,
                                                                                           compiled_kernels,
                                                                                           monkeypatch):
    path = write_module(problem(64, 64, 64), [SHARED, *OTHERS], tmp_path)
    names = [kernel_name(config) for config in (SHARED, *OTHERS)]
    assert _keys_in_order(monkeypatch, path, names, _pinned_only) == _keys_in_order(monkeypatch, path, names, load_module)
    assert settle_helper_keys(load_module(path)) >= 1


def test_the_helpers_are_the_family_functions_the_kernels_call(tmp_path, compiled_kernels):
    configs = [SHARED, OTHERS[1], Config.parse("BM64_BN64_BK64_GM1_SK1_nW4_nS2_TMA1")]
    module = load_module(write_module(problem(64, 64, 64), configs, tmp_path))
    helpers = {helper.__name__: helper.__module__ for helper in helper_functions(module)}
    # the tile functions the kernels call, and what those call in turn, in the family modules that define them
    assert helpers["matmul_tile"] == helpers["dot_accumulate"] == "tune_gemm.kernels.matmul_family.device"
    assert helpers["splitk_reduce_tile"] == "tune_gemm.kernels.matmul_family.device"
    assert helpers["tma_persistent_tile"] == helpers["split_k_part"] == "tune_gemm.kernels.tma_family.device"
    # neither the module's own per-config kernels nor Triton's own functions
    assert not {kernel_name(config) for config in configs} & set(helpers)
    assert all(owner.startswith("tune_gemm.kernels.") for owner in helpers.values())
    assert settle_helper_keys(module) >= 1


def test_under_the_interpreter_there_is_nothing_to_settle(tmp_path):
    path = write_module(problem(64, 64, 64), [SHARED], tmp_path)
    assert settle_helper_keys(load_module(path)) == 0


def test_a_module_cache_with_a_limit_keeps_the_most_recently_used_modules(tmp_path, monkeypatch):
    import tune_gemm.generate.loader

    paths = [write_module(problem(16 * n, 16, 16), [SHARED], tmp_path) for n in (1, 2, 3)]
    loaded, real = [], tune_gemm.generate.loader.load_module
    monkeypatch.setattr(tune_gemm.generate.loader, "load_module", lambda path: loaded.append(path) or real(path))
    cache = tune_gemm.generate.loader.ModuleCache(limit=2)
    first = cache.get(paths[0])
    cache.get(paths[1])
    assert cache.get(paths[0]) is first  # still held, and now the most recent
    cache.get(paths[2])  # over the limit: paths[1], the least recently used, goes
    assert cache.get(paths[0]) is first
    cache.get(paths[1])
    assert loaded == [str(p) for p in (paths[0], paths[1], paths[2], paths[1])]
    unlimited = tune_gemm.generate.loader.ModuleCache()
    for path in paths * 2:
        unlimited.get(path)
    assert len(loaded) == 4 + 3


def test_a_module_cache_loads_a_module_again_once_another_file_is_written_at_its_path(tmp_path, monkeypatch):
    import tune_gemm.generate.loader

    size = problem(32, 32, 32)
    first_path = write_module(size, [SHARED], tmp_path)
    loaded, real = [], tune_gemm.generate.loader.load_module
    monkeypatch.setattr(tune_gemm.generate.loader, "load_module", lambda path: loaded.append(path) or real(path))
    cache = tune_gemm.generate.loader.ModuleCache(limit=2)
    first = cache.get(first_path)
    assert cache.get(first_path) is first and len(loaded) == 1  # the same file: loaded once
    other = OTHERS[0]
    assert write_module(size, [other], tmp_path) == first_path  # --benchmark: the next entry of the same size
    second = cache.get(first_path)
    assert second is not first and len(loaded) == 2
    assert kernel_name(other) in vars(second) and kernel_name(other) not in vars(first)
    first_path.unlink()  # removed once its size is done: what was loaded stays usable
    assert cache.get(first_path) is second and len(loaded) == 2


def test_file_versions_tell_a_replaced_file_from_the_one_before(tmp_path):
    import tune_gemm.generate.loader

    path = write_module(problem(32, 32, 32), [SHARED], tmp_path)
    before = tune_gemm.generate.loader.file_version(path)
    assert before is not None and tune_gemm.generate.loader.file_version(path) == before
    write_module(problem(32, 32, 32), [SHARED], tmp_path)  # the same text, written again: another file
    assert tune_gemm.generate.loader.file_version(path) != before
    assert tune_gemm.generate.loader.file_version(tmp_path / "none.py") is None
