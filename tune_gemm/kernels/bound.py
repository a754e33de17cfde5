"""Run-time launchers: one config of the tuner's kernel families (tune_gemm.kernels.matmul_family,
tune_gemm.kernels.tma_family for PERSISTENT_TMA configs, tune_gemm.kernels.warp_group_family for WARP_GROUPS ones) run
on any shape.

Why not the generated modules the tuner writes: a generated module is written per problem size and holds
one named kernel per config (calling the same family functions) so that profilers can attribute time by kernel name. At run time one config
serves many shapes and no profiler needs that name, so the families' own tile kernels (`matmul_tile`, or
`matmul_tile_static_shape` for STATIC_SHAPE configs, and its split-K `splitk_reduce_tile` unless FUSED_REDUCE, or
`tma_persistent_tile`, its K split always fused, or `warp_group_gemm`) are launched with the config's block sizes and
knobs bound as compile-time constants, exactly what a generated per-config kernel binds. The families' launch
functions do the rest (grid, EVEN_K, split-K partials and reduction, TMA descriptors), so the tuner and the
run-time share one kernel and one launch path per family, and nothing is written to disk. Triton compiles and
caches one binary per config, dtypes and argument specialization (in memory, and on disk across processes);
`launcher_for` caches the launcher per config.

The family modules read TRITON_INTERPRET when they are first imported (as every Triton module does when its
kernels are decorated): set it before importing this module to run on the CPU.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import tune_gemm.kernels.matmul_family as family
from tune_gemm.core.config import Config, kernel_switches, tma_variant_knobs
from tune_gemm.kernels import tma_family

INTERPRETED: bool = family.INTERPRETED


class _Bound:
    """A family kernel with one config's compile-time constants bound: `bound[grid](*args, **kwargs)` launches
    it like a generated per-config kernel, which is what the families' launch functions expect of a kernel."""

    def __init__(self, kernel, constants: dict):
        self._kernel = kernel
        self._constants = constants

    def __getitem__(self, grid):
        return functools.partial(self._kernel[grid], **self._constants)


@dataclass(frozen=True)
class Launcher:
    """`launcher(a, b, c)` writes A @ B into C (any strides) with one config; `launcher(a, b, c, bias, scale_a,
    scale_b)` adds a bias per row and fp8's per-tensor scales, as the families' launch functions take them."""

    config: Config
    run: Callable  # the family's launch function with the bound kernels and the config's launch options

    def __call__(self, a, b, c, *extra):
        return self.run(a, b, c, *extra)


def _tile_constants(config: Config) -> dict:
    return {"BLOCK_SIZE_M": config.BLOCK_SIZE_M, "BLOCK_SIZE_N": config.BLOCK_SIZE_N,
            "BLOCK_SIZE_K": config.BLOCK_SIZE_K, "GROUP_SIZE_M": config.GROUP_SIZE_M}


def tma_variant(config: Config) -> tma_family.TmaVariant:
    """The TMA family knobs a launch of `config` acts on, as a generated module's VARIANT_<config> holds them."""
    return tma_family.TmaVariant(**tma_variant_knobs(config))


@functools.cache
def launcher_for(config: Config) -> Launcher:
    """The (cached) launcher of a config; its launch options (AMD knobs, num_ctas) are passed as in generated
    modules."""
    tile = family.TileConfig(BLOCK_SIZE_M=config.BLOCK_SIZE_M, BLOCK_SIZE_N=config.BLOCK_SIZE_N,
                             BLOCK_SIZE_K=config.BLOCK_SIZE_K, GROUP_SIZE_M=config.GROUP_SIZE_M,
                             SPLIT_K=config.SPLIT_K, num_warps=config.num_warps, num_stages=config.num_stages,
                             options=tuple(config.launch_options.items()),
                             fused_reduce=int(config.FUSED_REDUCE))
    if config.WARP_GROUPS:
        from tune_gemm.kernels import (
            warp_group_family,  # Gluon: imported only where such a config runs
        )

        kernel = _Bound(warp_group_family.warp_group_gemm,
                        {"BLOCK_SIZE_M": config.BLOCK_SIZE_M, "GROUP_SIZE_M": config.GROUP_SIZE_M,
                         "STAGES": config.num_stages})
        return Launcher(config, functools.partial(warp_group_family.launch_warp_groups, kernel, tile))
    if config.PERSISTENT_TMA:
        knobs = kernel_switches(config)
        kernel = _Bound(tma_family.tma_persistent_tile,
                        {**_tile_constants(config), **knobs, "SPLIT_K": config.SPLIT_K,
                         "FUSED_REDUCE": int(config.FUSED_REDUCE)})
        return Launcher(config, functools.partial(tma_family.launch_tma, kernel, tile, tma_variant(config)))
    tile_kernel = family.matmul_tile_static_shape if config.STATIC_SHAPE else family.matmul_tile
    kernel = _Bound(tile_kernel, {**_tile_constants(config), "SPLIT_K": config.SPLIT_K,
                                  "FUSED_REDUCE": int(config.FUSED_REDUCE)})
    reduce_kernel = None
    if config.reduction_kernel:
        reduce_kernel = _Bound(family.splitk_reduce_tile, {"SPLIT_K": config.SPLIT_K, "BLOCK": family.REDUCE_BLOCK.value})
    return Launcher(config, functools.partial(family.launch, kernel, reduce_kernel, tile))
