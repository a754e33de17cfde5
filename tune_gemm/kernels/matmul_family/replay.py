"""Launches replayed: after the first launch of a call signature, later ones go through the compiled kernel's own
launcher instead of Triton's argument binding (Replay)."""

import os

import torch

from tune_gemm.kernels.matmul_family.device import INTERPRETED

# Launches after the first of a call signature skip Triton's argument binding (Replay): on by default where Triton
# compiles for CUDA; TUNE_GEMM_REPLAY=0 sends every launch through kernel[grid](...). Not on ROCm: never run there.
REPLAY_LAUNCHES = (not INTERPRETED and torch.version.hip is None
                   and os.environ.get("TUNE_GEMM_REPLAY", "1") != "0")
REPLAYS_PER_KERNEL = 256  # call signatures remembered per kernel; the oldest is dropped past that


class Replay:
    """A launch captured from a first call through Triton's JIT (`kernel[grid](...)`), relaunched on later calls of
    the same call_signature through the compiled kernel's own launcher (`compiled[grid]`). Binding and specializing
    every argument again, which the JIT does at each call, took most of a launch's host time on the H100: 60-66 of
    96-150 us at 4096x4096x512 for a persistent TMA config, the compiled kernel's launcher 21-23. A Replay keeps the
    grid and every argument after the first `leading` ones (sizes, strides, and None for the compile-time constants,
    which the launcher skips), all fixed by the call signature; each call passes the leading ones (the matrices, or
    their descriptors)."""

    __slots__ = ("owners", "runner", "fixed", "template")

    def __init__(self, owners: tuple, runner, fixed: tuple, template=None):
        self.owners = owners  # the config objects its key names by id, kept alive so that no other takes that id
        self.runner = runner
        self.fixed = fixed
        # what the family rebuilds its leading arguments from: a ReplayedTma, or the warp-group kernel's descriptors
        self.template = template

    def __call__(self, *leading) -> None:
        self.runner(*leading, *self.fixed)


def capture(compiled, grid: tuple, args: tuple, leading: int, owners: tuple, template=None) -> Replay | None:
    """The Replay of a launch `kernel[grid](*args, **constants)` that returned `compiled`; None where a parameter past
    `args` is not a compile-time constant (its value would come from the call's keywords), or where there is no
    compiled kernel to relaunch (the interpreter), or no launcher of its own to relaunch it with (a Triton without
    `compiled[grid]`)."""
    params = getattr(getattr(getattr(compiled, "src", None), "fn", None), "params", None)
    if params is None or not hasattr(type(compiled), "__getitem__") or len(params) < len(args):
        return None
    if not all(getattr(param, "is_constexpr", False) for param in params[len(args):]):
        return None
    runner = compiled[(*grid, 1, 1)[:3]]  # the compiled kernel's launcher reads all three grid dimensions
    return Replay(owners, runner, (*args[leading:], *[None] * (len(params) - len(args))), template)


def replays_of(kernel) -> dict:
    """The launches captured for `kernel` (a Triton kernel, or a stand-in that launches one), by the caller's key.
    Kept on the kernel itself, so that they go when it goes (a generated module unloaded), and looked up without
    hashing it (a Triton kernel hashes its source hash, under a lock)."""
    replays = getattr(kernel, "tune_gemm_replays", None)
    if replays is None:
        replays = kernel.tune_gemm_replays = {}
    return replays


def replay_key(owners: tuple, *tensors) -> tuple | None:
    """The key a launch of these config objects (`owners`, named by id) on `tensors` is replayed under; None where
    launches are not replayed (REPLAY_LAUNCHES)."""
    return (*map(id, owners), call_signature(*tensors)) if REPLAY_LAUNCHES else None


def replay_of(kernel, key: tuple | None) -> Replay | None:
    """The Replay `kernel` keeps under `key`, if any."""
    return replays_of(kernel).get(key) if key else None


def remember(kernel, key: tuple, replay: Replay | None) -> None:
    """Keep `replay` (if one was captured) under `key`, dropping the oldest past REPLAYS_PER_KERNEL."""
    if replay is None:
        return
    replays = replays_of(kernel)
    if len(replays) >= REPLAYS_PER_KERNEL:
        del replays[next(iter(replays))]
    replays[key] = replay


def launch_replayed(kernel, leading: tuple, owners: tuple, through_the_jit) -> None:
    """Launch `kernel` on a call whose tensors (or None) are `leading`, its first arguments: replayed after the first
    launch of their call signature and `owners`, which fix the grid, the constants and every later argument. The first
    goes through `through_the_jit()` (jit_launch), so that only it computes those."""
    key = replay_key(owners, *leading)
    replay = replay_of(kernel, key)
    if replay is not None:
        replay(*leading)
        return
    compiled, grid, args = through_the_jit()
    if key:
        remember(kernel, key, capture(compiled, grid, args, len(leading), owners))


def jit_launch(kernel, grid: tuple, args: tuple, **constants) -> tuple:
    """`kernel[grid](*args, **constants)` through Triton's JIT: (the compiled kernel it returns, grid, args)."""
    return kernel[grid](*args, **constants), grid, args


def _tensor_signature(t) -> tuple | None:
    return None if t is None else (t.shape, t.stride(), t.dtype, t.data_ptr() % 16 == 0)


def call_signature(*tensors) -> tuple:
    """What a launch's compiled kernel and every argument but the tensors' addresses follow from: the current device
    (its SM count sizes persistent grids), and each tensor's shape, strides, dtype and whether its address is 16-byte
    aligned (Triton specializes pointers on that, and the TMA family's copies follow it), or None."""
    return (torch.cuda.current_device(), *map(_tensor_signature, tensors))

