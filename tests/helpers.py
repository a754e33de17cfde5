"""Helpers shared by the tests: small problems and a small range space."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import torch

from tune_gemm.core.device import DeviceProfile
from tune_gemm.core.dtypes import DTYPES
from tune_gemm.core.problem import GemmProblem

# The dtypes the run-time matmul takes (fp8 and int8 stay with the tuner: it takes no scales, makes no int32).
RUNTIME_DTYPES = [name for name, dtype in DTYPES.items() if dtype.kind == "float"]

H100_FP16_PEAK_TFLOPS = 990  # dense fp16 tensor-core peak: no honest timing can beat it
# An NVIDIA GPU with fp8 dots (compute capability 8.9+), for the GPU tests of fp8 configs
HAS_FP8 = torch.cuda.is_available() and torch.version.hip is None and torch.cuda.get_device_capability() >= (8, 9)
needs_fp8 = pytest.mark.skipif(not HAS_FP8, reason="needs an NVIDIA GPU with fp8 dots (compute capability 8.9+)")

SMALL_SPACE_YAML = """\
BLOCK_SIZE_M: [16, 32]
BLOCK_SIZE_N: [16, 32]
BLOCK_SIZE_K: [16, 32]
GROUP_SIZE_M: [1, 2]
SPLIT_K: [1, 2]
num_warps: [1]
num_stages: [1, 2]
PERSISTENT_TMA: [0]
STATIC_SHAPE: [0]
FUSED_REDUCE: [0]
"""


BENCHMARKS_DIR = Path(__file__).resolve().parents[1] / "benchmarks"


def load_benchmark(name: str):
    """benchmarks/<name>.py imported as module `name` (the benchmarks are scripts, not a package); registered in
    sys.modules first, so that its dataclasses resolve their annotations through it."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, BENCHMARKS_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def problem(M: int, N: int, K: int, dtype: str = "fp16", col_a: bool = False, col_b: bool = False,
            dtype_c: str | None = None) -> GemmProblem:
    d = DTYPES[dtype]
    return GemmProblem(M, N, K, d, d, DTYPES[dtype_c or dtype], col_a=col_a, col_b=col_b)

# AMD GPUs written as data (public specifications; per GCD for the MI250X): used to show which
# configs survive pruning on AMD without one. MFMA 16x16 by default, wave size 64, 64 KiB LDS.
MI250X = DeviceProfile(name="AMD Instinct MI250X (one GCD)", vendor="amd", max_shared_bytes=65_536, sm_count=110,
                       warp_size=64, l2_bytes=8 * 2**20, memory_bytes=64 * 2**30, max_registers_per_thread=512,
                       instr_m=16, instr_n=16, instr_k_bytes=32)
MI300X = DeviceProfile(name="AMD Instinct MI300X", vendor="amd", max_shared_bytes=65_536, sm_count=304, warp_size=64,
                       l2_bytes=4 * 2**20, memory_bytes=192 * 2**30, max_registers_per_thread=512, instr_m=16,
                       instr_n=16, instr_k_bytes=32)


class KernelSpy:
    """Stands in for a kernel: records the grid and the arguments of each launch, then launches the real kernel."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.launches = []  # (args, kwargs) of each launch
        self.grids = []  # the grid of each launch

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.launches.append((args, kwargs))
            self.grids.append(grid)
            return self.kernel[grid](*args, **kwargs)
        return launch

    def named(self, launch: int = 0) -> dict:
        """A launch's positional arguments by the kernel's parameter names."""
        args, _ = self.launches[launch]
        return dict(zip(self.kernel.arg_names, args))


class ReplayingKernel:
    """Stands in for a kernel under the interpreter as Triton's JIT does on a GPU: each launch returns a compiled
    kernel (_CompiledStandIn), so that a generated module captures its launches and replays later ones
    (tune_gemm.kernels.matmul_family.Replay) through that kernel's launcher, which runs the real kernel again. Counts both."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.launched = 0  # launches through kernel[grid](...)
        self.replayed = 0  # launches through a compiled kernel's launcher

    def __getitem__(self, grid):
        def launch(*args, **constants):
            self.launched += 1
            self.kernel[grid](*args, **constants)
            return _CompiledStandIn(self, len(args), constants)
        return launch


class _CompiledStandIn:
    """What kernel[grid](...) returns on a GPU, as far as tune_gemm.kernels.matmul_family.capture reads it: the kernel's parameters
    (src.fn.params) and a launcher (compiled[grid]) that takes every positional argument, None for the constants."""

    def __init__(self, owner: ReplayingKernel, count: int, constants: dict):
        import inspect
        from types import SimpleNamespace

        parameters = inspect.signature(owner.kernel.fn).parameters.values()
        params = [SimpleNamespace(is_constexpr="constexpr" in str(p.annotation)) for p in parameters]
        self.src = SimpleNamespace(fn=SimpleNamespace(params=params))
        self.owner, self.count, self.constants = owner, count, constants

    def __getitem__(self, grid):
        def runner(*args):
            assert all(arg is None for arg in args[self.count:])  # the constants' places
            self.owner.replayed += 1
            self.owner.kernel[grid](*args[:self.count], **self.constants)
        return runner


def replaying(monkeypatch, module, *names: str) -> dict:
    """Launches replayed in a generated module under the interpreter: the families' REPLAY_LAUNCHES on, the current
    device 0, and each named kernel a ReplayingKernel (returned by name), found in the generated module (a config's
    kernel) or in the kernel family module that launches it (the TMA family's copy kernels)."""
    from tune_gemm.kernels.matmul_family import replay
    from tune_gemm.kernels.tma_family import copies

    monkeypatch.setattr(replay, "REPLAY_LAUNCHES", True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    kernels = {}
    for name in names:
        owner = module if hasattr(module, name) else copies
        kernels[name] = ReplayingKernel(getattr(owner, name))
        monkeypatch.setattr(owner, name, kernels[name])
    return kernels


def fresh_kernel_families(monkeypatch) -> None:
    """Forget the kernel family modules this process has imported, so that the next import (a generated module's)
    decorates their kernels anew as TRITON_INTERPRET now says; the modules before come back after the test. A process
    of the tuner runs in one mode; a test that turns the interpreter off for one module needs families to match."""
    import sys

    import tune_gemm.kernels

    kernels = Path(tune_gemm.kernels.__file__).parent
    names = ["tune_gemm.kernels.warp_group_family"]
    for package in ("matmul_family", "tma_family"):
        names += [f"tune_gemm.kernels.{package}", *(f"tune_gemm.kernels.{package}.{path.stem}"
                                                     for path in (kernels / package).glob("*.py"))]
    for name in names:
        if name not in sys.modules:  # imported during the test: gone again after it
            monkeypatch.setitem(sys.modules, name, None)
        monkeypatch.delitem(sys.modules, name)
    for family in ("matmul_family", "tma_family", "warp_group_family"):
        if not hasattr(tune_gemm.kernels, family):
            monkeypatch.setattr(tune_gemm.kernels, family, None, raising=False)
        monkeypatch.delattr(tune_gemm.kernels, family)


def spied(monkeypatch, module, config) -> KernelSpy:
    """A KernelSpy on `config`'s kernel in a generated module (its launcher looks the kernel up at call time)."""
    from tune_gemm.generate.naming import kernel_name

    spy = KernelSpy(getattr(module, kernel_name(config)))
    monkeypatch.setattr(module, kernel_name(config), spy)
    return spy


def spied_check(monkeypatch, module, config, seed: int = 0) -> tuple:
    """(relative error, launch keyword arguments, grid) of `config`'s launcher in a generated module, checked on the
    CPU against float64 through a KernelSpy (one launch of its kernel)."""
    from tune_gemm.kernels.matmul_family import check_config

    spy = spied(monkeypatch, module, config)
    error = check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cpu", seed=seed)
    [(_, kwargs)] = spy.launches
    [grid] = spy.grids
    return error, kwargs, grid


def timed_outcome(size: GemmProblem, times: dict[str, float], **fields):
    """A tune_gemm.run.pipeline.SizeOutcome as a search over the configs `times` (name -> µs) would return it, for tests
    of what is built from outcomes (no kernel runs)."""
    import pandas as pd

    from tune_gemm.compile.pool import CompileOutcome
    from tune_gemm.core.config import Config
    from tune_gemm.measure.runner import ChildOutcome
    from tune_gemm.run.pipeline import SizeOutcome
    from tune_gemm.search.search import SearchOutcome

    order = sorted(times, key=times.get)
    table = pd.DataFrame({"config": order, "time_us": [times[n] for n in order], "instances": [5] * len(order)})
    compiled = CompileOutcome(compiled=list(times), seconds=1.0)
    return SizeOutcome(problem=size, candidates=len(times), space_size=64, compiled=compiled, profiled=ChildOutcome(),
                       timings=table, winner=Config.parse(order[0]), winner_time_us=times[order[0]],
                       matmul_time_us=9.0, seconds={"compile": 1.0, "profile": 2.0},
                       searched=SearchOutcome(compiled, ChildOutcome(), table, 9.0, [], len(times)), **fields)


def small_space_file_space():
    """The range space a run given SMALL_SPACE_YAML as its --space file tunes."""
    import yaml

    from tune_gemm.space.ranges import space_for, space_from_mapping

    return space_from_mapping(yaml.safe_load(SMALL_SPACE_YAML), "space", space_for("interpreter"))


def small_space_names(size: GemmProblem) -> list[str]:
    """The configs of SMALL_SPACE_YAML that the interpreter keeps for `size`, in the search's visiting order: what a
    run given that space file tunes, and what its chunks share out."""
    from tune_gemm.core.device import INTERPRETER_PROFILE
    from tune_gemm.search.order import visiting_order
    from tune_gemm.space.prune import prune

    return [str(c) for c in visiting_order(prune(size, INTERPRETER_PROFILE, small_space_file_space()).configs)]


# The top of a stand-in for a generated module in the child's tests: a 2x2x2 fp32 problem of the kernel family,
# whose make_operands and check_config the child runs on it as on a generated module's; each test adds its
# launchers (LAUNCHERS, config name -> function of a, b, c).
FAKE_MODULE_HEAD = """\
import os, time
import torch
from tune_gemm.kernels.matmul_family import Problem
PROBLEM = Problem(M=2, N=2, K=2, col_a=False, col_b=False, dtype_a=torch.float32, dtype_b=torch.float32,
                  dtype_c=torch.float32, tolerance=1e-5)
"""


def checkpoint_timed(checkpoint: Path) -> int:
    """Configs with a time in round 0 of a tuner checkpoint file; 0 while it is missing or being replaced."""
    try:
        return len(json.loads(checkpoint.read_text())["rounds"][0]["times"])
    except (OSError, ValueError, LookupError):
        return 0


def kill_once_timed(process: subprocess.Popen, checkpoint: Path, at_least: int, seconds: float = 120) -> int:
    """kill -9 `process` as soon as its checkpoint holds `at_least` timed configs (or it ended, or `seconds`
    passed); returns how many the checkpoint held then."""
    deadline = time.monotonic() + seconds
    while checkpoint_timed(checkpoint) < at_least and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    return checkpoint_timed(checkpoint)


def binaries(kernel) -> int:
    """How many binaries Triton holds in memory for `kernel` on this GPU (its internal cache, Triton 3.3+)."""
    import torch

    return len(kernel.device_caches[torch.cuda.current_device()][0])


def check_compiled_ahead(tmp_path, p, configs: list) -> dict:
    """Compile each config ahead as the compile pool does (mock arguments, no launch), then check it against float64
    with C poisoned; a launch that compiles another binary means the compile-ahead missed its specialization.
    Returns what the compile-ahead said per config (a config whose compile fails is counted, as the tuner does)."""
    from tune_gemm.generate import write_module
    from tune_gemm.generate.loader import load_module
    from tune_gemm.generate.naming import kernel_name
    from tune_gemm.kernels.matmul_family import check_config

    module = load_module(write_module(p, configs, tmp_path))
    ahead, failures = {}, {}
    for config in configs:
        name, kernel = str(config), getattr(module, kernel_name(config))
        try:
            module.COMPILERS[name]()
        except Exception as error:  # noqa: BLE001 - reported; the tuner counts compile failures, never launches them
            ahead[name] = f"{type(error).__name__}: {' '.join(str(error).split())[:300]}"
            continue
        ahead[name] = "ok"
        compiled = binaries(kernel)
        error = check_config(module.LAUNCHERS[name], module.PROBLEM, "cuda", seed=7)
        if not error <= p.dtype_a.tolerance:
            failures[name] = error
        if binaries(kernel) != compiled:
            failures[name] = "the launch compiled a binary of its own: compile-ahead specialized differently"
    print(f"compile ahead {p.label}: {ahead}")
    assert not failures, failures
    assert "ok" in ahead.values(), ahead
    return ahead
