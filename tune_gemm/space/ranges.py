"""The hard-coded full range space, as in the seed: every combination of these values is a candidate."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, fields, replace

from tune_gemm.core.config import (
    CLUSTER_SIZES,
    HOPPER_KNOBS,
    SWITCHES,
    Config,
    FusedReduce,
    NarrowEdge,
    StreamK,
    check_field,
    field_value,
    largest_switch_value,
    minimum_value,
    switch_values,
)
from tune_gemm.core.geometry import is_tile_side


@dataclass(frozen=True)
class RangeSpace:
    block_m: tuple[int, ...] = (16, 32, 64, 128, 256)
    block_n: tuple[int, ...] = (16, 32, 64, 128, 256)
    block_k: tuple[int, ...] = (16, 32, 64, 128, 256)
    group_m: tuple[int, ...] = (1, 4, 8, 16, 32)
    split_k: tuple[int, ...] = (1, 2, 4, 8, 16)
    num_warps: tuple[int, ...] = (1, 2, 4, 8)
    num_stages: tuple[int, ...] = (1, 2, 3, 4, 5)
    num_ctas: tuple[int, ...] = (1,)  # CTAs per program (thread-block cluster), in either kernel family
    static_shape: tuple[int, ...] = (0,)  # 1: sizes and strides as compile-time constants (plain family)
    fused_reduce: tuple[int, ...] = (0,)  # SLOTS, ATOMIC: split-K partials summed inside the GEMM
    # AMD-only knobs: (None,) means not set, as on NVIDIA
    waves_per_eu: tuple[int | None, ...] = (None,)
    matrix_instr_nonkdim: tuple[int | None, ...] = (None,)
    kpack: tuple[int | None, ...] = (None,)
    # Kernel family knobs: a space is of the plain family unless it says otherwise
    persistent_tma: tuple[int, ...] = (0,)
    warp_specialize: tuple[int, ...] = (0,)
    epilogue_subtile: tuple[int, ...] = (0,)
    stream_k: tuple[int, ...] = (0,)
    swap_ab: tuple[int, ...] = (0,)
    align_rows: tuple[int, ...] = (0,)
    narrow_edge: tuple[int, ...] = (0,)
    warp_groups: tuple[int, ...] = (0,)
    schedule_hint: tuple[str | None, ...] = (None,)  # AMD-only, as the knobs above
    # A second product of values the space also holds (its own `also` ignored): configs whose values the rules keep
    # for few problems, apart so that the pruner does not walk them with every other field's values
    also: RangeSpace | None = None

    def parts(self) -> tuple[RangeSpace, ...]:
        """The products the space is the union of: its own values, then those of `also`."""
        own = replace(self, also=None)
        return (own,) if self.also is None else (own, replace(self.also, also=None))

    def _ranges(self) -> dict[str, tuple]:
        """Config field -> values, for every field but the kernel-family knobs (of this product alone)."""
        return {(field := _CONFIG_FIELD[f.name]): tuple(field_value(field, value) for value in getattr(self, f.name))
                for f in fields(self) if f.name not in _FAMILY_FIELDS and f.name != "also"}

    def families(self) -> list[dict[str, int]]:
        """Kernel-family knob settings: the knobs after PERSISTENT_TMA exist only with it, and WARP_GROUPS (the last)
        only alone with it, its kernel having none of the others. A mode's values are its members."""
        return [{knob: field_value(knob, value) for knob, value in zip(HOPPER_KNOBS, values)}
                for values in itertools.product(*(getattr(self, field) for field in _FAMILY_FIELDS))
                if (values[0] or not any(values[1:])) and not (values[-1] and any(values[1:-1]))]

    def tile_ranges(self) -> dict[str, tuple]:
        """Config field -> values for the fields but the family knobs, each value checked once: tile_configs is every
        combination of them, which the pruner walks without building a Config for each."""
        ranges = self._ranges()
        for field, values in ranges.items():
            for value in values:
                check_field(field, value)
        return ranges

    def tile_configs(self) -> list[Config]:
        """Every combination of the other fields, with the family knobs off, product by product (parts)."""
        configs = []
        for part in self.parts():
            ranges = part.tile_ranges()
            configs += [Config.from_checked(dict(zip(ranges, values)))
                        for values in itertools.product(*ranges.values())]
        return configs

    def configs(self) -> list[Config]:
        return [tile.with_family(family) for part in self.parts() for tile in part.tile_configs()
                for family in part.families()]

    def __len__(self) -> int:
        total = 0
        for part in self.parts():
            size = len(part.families())
            for values in part._ranges().values():
                size *= len(values)
            total += size
        return total


COMPOUND_SIDES = (16, 32, 64, 128, 192, 256)  # tile sides with the TMA family's compound tiles (192 = 128 + 64)
# and the warp-group kernel's 96 = 64 + 32, 160 = 128 + 32, 320 = 256 + 64 and 384 = 256 + 128
COMPOUND_WIDTHS = (16, 32, 64, 96, 128, 160, 192, 256, 320, 384)
# The RangeSpace fields of the kernel-family knobs, in HOPPER_KNOBS's order (PERSISTENT_TMA first).
_FAMILY_FIELDS = tuple(knob.lower() for knob in HOPPER_KNOBS)
# The persistent TMA family joins the full space; the rules keep it only where the GPU has TMA (Hopper+).
# STREAM_K 1 (stream-K) stays out of it: measured on the H100 it lost to its twin without on every shape tried
#; a space file can still ask for it. SPLIT_TAIL joins it; the rules keep it only where the
# tiles past the last whole wave are few enough to cut into several K slices each.
# num_ctas > 1 stays out too: measured on the H100 (Triton 3.6, 4096^3 and 8192^3 fp16), every config tried ran
# 3-21% slower with num_ctas=2 than the same config with 1, in the plain and the TMA family alike (a later run at
# 4096^3: 13-59% slower); a space file can ask for it (`num_ctas: [1, 2]`).
# STATIC_SHAPE joins it too; the rules keep it only for launch-bound sizes, where it was measured to pay.
# SWAP_AB joins it; the rules keep it only where C^T takes fewer tiles than C.
# ALIGN_ROWS joins it; the rules keep it only where A's or B's rows are 16-byte aligned but off 128-byte lines.
# NARROW_EDGE joins it, all three ways (APART, FUSED and SPLIT); the rules keep it only where N leaves a last column of
# tiles at least a quarter empty, and SPLIT only where the edge tiles are few enough to split.
# Tile sides of 192 (128 + 64) join it, for the TMA family's compound tiles; the rules keep them only where such tiles
# fill the SMs' waves enough better than the power-of-two tiles around them to make up for their cost.
# FUSED_REDUCE joins it, both ways (SLOTS and ATOMIC: each won at some shape on the H100, BENCHMARKS.md, nineteenth
# run); the rules keep it only for split-K configs, and in the TMA family every split-K config has it (the family has
# no reduction kernel).
# WARP_GROUPS joins it, with the 12 warps of its 192-row tiles (three consumer warp groups) and tiles 96 wide
# (64 + 32); the rules keep it only on Hopper (compute capability 9.0) for 16-bit row-major A, 128- or 192-row tiles
# of compound width (192 = 128 + 64, 96 = 64 + 32), and 12 warps and 96-wide tiles for nothing else. Measured on the
# H100 (Triton 3.6, fp16), its 192x192 tiles took 56.0 us at 3072x1536x4096 against
# 61.4 for the TMA family's and 55.0 for cuBLAS. Its 256-row tiles (four consumer warp groups, 16 warps) join it with
# tiles 160 wide (128 + 32) for every row count, which fill the SMs' waves where no power-of-two tile does: 256x160 took
# 65.3 us at 2048x2560x4096 (one wave of 128 tiles) against 92.8 for the TMA family's 128x256 and 60.4 for cuBLAS;
# tuned there, the winner went from 0.81x cuBLAS (128x128) to 0.92x (128x160). Its 128-row tiles
# 320 and 384 wide (256 + 64, 256 + 128: cuBLAS's tile at 2048x2560x4096 is 320x128 of C^T) join it too: 128x320 took
# 61.5 us there, 1.004x cuBLAS, where 256x160 took 66.3.
# Tiles of fewer rows than a matrix instruction's (BLOCK_M < 16), which the plain family multiplies without one, for M
# < 16 (decoding): with B's columns few (down to 1) and its rows long (up to 4096), as a reduction kernel reads a
# column-major B, whose columns run along K. Measured on the H100 (Triton 3.6, fp16, B column-major)
# at 1x4096x4096, 1x28672x4096 and 1x4096x14336: 18.8, 89.1 and 49.1 us (L2 flushed, interleaved)
# where the best tl.dot tiles (16 rows) took 22.3, 93.7 and 55.6 and cuBLAS 24.1, 96.9 and 56.9. Its own product
# (RangeSpace.also): joined to the others, its block sizes would double every size's pruning. Rows of 4096 and 32
# warps, as max-autotune's reduction kernel reads 1x4096x14336 (1024 threads of 8 bytes each a step): with
# STATIC_SHAPE, 44.6 us where 2048 with 8 warps took 46.3 and max-autotune 45.2; 16 warps were slower than 8 wherever
# measured (49.4 there, 117 against 82 at 1x28672x4096) and stay the warp-group kernel's (BENCHMARKS.md, thirty-third
# run).
SMALL_ROW_SPACE = RangeSpace(block_m=(1, 2, 4, 8), block_n=(1, 2, 4, 8, 16, 32, 64, 128),
                             block_k=(16, 32, 64, 128, 256, 512, 1024, 2048, 4096), num_warps=(1, 2, 4, 8, 32),
                             num_stages=(1, 2, 3),
                             static_shape=(0, 1), fused_reduce=tuple(FusedReduce))
FULL_SPACE = RangeSpace(block_m=COMPOUND_SIDES, block_n=COMPOUND_WIDTHS, num_warps=(1, 2, 4, 8, 12, 16),
                        warp_groups=(0, 1), persistent_tma=(0, 1), warp_specialize=(0, 1),
                        epilogue_subtile=(0, 1), static_shape=(0, 1), fused_reduce=tuple(FusedReduce),
                        swap_ab=(0, 1), align_rows=(0, 1), narrow_edge=tuple(NarrowEdge),
                        stream_k=(StreamK.OFF, StreamK.SPLIT_TAIL), also=SMALL_ROW_SPACE)
# On AMD the ROCm script's knob ranges join the space, and the Hopper kernel family (with its compound tiles) leaves it,
# as do STATIC_SHAPE, FUSED_REDUCE and the tiles shorter than an instruction until they are measured there (a space file
# can ask for them).
# Its scheduling hint "none" (the ROCm script's default) goes into results: the ROCm script's reader needs one.
AMD_SPACE = replace(FULL_SPACE, also=None, block_m=RangeSpace.block_m, block_n=RangeSpace.block_n,
                    num_warps=RangeSpace.num_warps, warp_groups=(0,), waves_per_eu=(0,),
                    matrix_instr_nonkdim=(16, 32), kpack=(1, 2), persistent_tma=(0,), warp_specialize=(0,),
                    epilogue_subtile=(0,), stream_k=(0,), swap_ab=(0,), align_rows=(0,), narrow_edge=(0,),
                    static_shape=(0,), fused_reduce=(0,), schedule_hint=("none",))


def space_for(vendor: str) -> RangeSpace:
    return AMD_SPACE if vendor == "amd" else FULL_SPACE


def deterministic(space: RangeSpace) -> RangeSpace:
    """`space` without the configs whose C may differ in its last bits from launch to launch: those whose split-K
    slices add their partials into a running sum in no set order (FusedReduce.ATOMIC), and those whose edge tiles' K
    slices (NarrowEdge.SPLIT) or last tiles' K slices (StreamK.SPLIT_TAIL) do."""
    kept = tuple(value for value in space.fused_reduce if value != FusedReduce.ATOMIC)
    if not kept:
        raise ValueError(f"FUSED_REDUCE values {_listed(space.fused_reduce)} hold only atomic sums, which are not "
                         "deterministic: add 0 or 1")
    edges = tuple(value for value in space.narrow_edge if value != NarrowEdge.SPLIT)
    if not edges:
        raise ValueError(f"NARROW_EDGE values {_listed(space.narrow_edge)} hold only split edges, which sum atomically "
                         "and are not deterministic: add 0, 1 or 2")
    tails = tuple(value for value in space.stream_k if value != StreamK.SPLIT_TAIL)
    if not tails:
        raise ValueError(f"STREAM_K values {_listed(space.stream_k)} hold only split tails, which sum atomically and "
                         "are not deterministic: add 0 or 1")
    also = None if space.also is None else deterministic(space.also)
    return replace(space, fused_reduce=kept, narrow_edge=edges, stream_k=tails, also=also)


def _listed(values: tuple[int, ...]) -> list[int]:
    """A space field's values as a message shows them: plain ints, a mode's members too."""
    return [int(value) for value in values]


_SPACE_KEYS = {
    "BLOCK_SIZE_M": "block_m", "BLOCK_SIZE_N": "block_n", "BLOCK_SIZE_K": "block_k", "GROUP_SIZE_M": "group_m",
    "SPLIT_K": "split_k", "num_warps": "num_warps", "num_stages": "num_stages", "num_ctas": "num_ctas",
    "waves_per_eu": "waves_per_eu", "matrix_instr_nonkdim": "matrix_instr_nonkdim", "kpack": "kpack",
    "PERSISTENT_TMA": "persistent_tma", "WARP_SPECIALIZE": "warp_specialize", "EPILOGUE_SUBTILE": "epilogue_subtile",
    "STREAM_K": "stream_k", "SWAP_AB": "swap_ab", "ALIGN_ROWS": "align_rows", "NARROW_EDGE": "narrow_edge",
    "WARP_GROUPS": "warp_groups", "STATIC_SHAPE": "static_shape", "FUSED_REDUCE": "fused_reduce",
    "schedule_hint": "schedule_hint",
}
_CONFIG_FIELD = {space_field: config_field for config_field, space_field in _SPACE_KEYS.items()}


def space_from_mapping(mapping: object, where: str, base: RangeSpace = FULL_SPACE) -> RangeSpace:
    """A RangeSpace whose listed fields replace `base`'s values, e.g. {BLOCK_SIZE_M: [64, 128]}.

    Raises ValueError naming the field at fault."""
    if not isinstance(mapping, dict):
        raise ValueError(f"{where}: must be a mapping of config field -> list of values")
    values = {}
    for key, choices in mapping.items():
        if key not in _SPACE_KEYS:
            raise ValueError(f"{where}: unknown field {key!r}; use {', '.join(_SPACE_KEYS)}")
        if isinstance(choices, (int, str)) and not isinstance(choices, bool):
            choices = [choices]
        if key == "schedule_hint":
            values[key] = _hints(choices, where)
            continue
        # num_stages 0 is read from ROCm files only (AMD's old stream pipeliner): the rules model stages >= 1
        least = 1 if key == "num_stages" else minimum_value(key)
        if (not isinstance(choices, list) or not choices
                or not all(isinstance(c, int) and not isinstance(c, bool) and c >= least for c in choices)):
            raise ValueError(f"{where}: {key} must be an integer >= {least} or a non-empty list of them")
        if key in SWITCHES and any(c > largest_switch_value(key) for c in choices):
            raise ValueError(f"{where}: {key} values must be {switch_values(key)}")
        if key == "num_ctas" and not set(choices) <= set(CLUSTER_SIZES):
            raise ValueError(f"{where}: num_ctas values must be among {CLUSTER_SIZES} (CTAs per cluster)")
        if key == "BLOCK_SIZE_K" and any(c & (c - 1) for c in choices):
            raise ValueError(f"{where}: {key} values must be powers of two (tl.arange needs them)")
        if key in ("BLOCK_SIZE_M", "BLOCK_SIZE_N") and not all(is_tile_side(c) for c in choices):
            raise ValueError(f"{where}: {key} values must be powers of two, or sums of two (192 = 128 + 64) for the "
                             "TMA family's compound tiles")
        values[_SPACE_KEYS[key]] = tuple(sorted(set(choices)))
    space = replace(base, **values)
    if values:  # a space the file names values of is one product: the tiles shorter than an instruction go
        space = replace(space, also=None)
    if 1 not in space.persistent_tma:  # the knobs that exist only with TMA go with it
        space = replace(space, warp_specialize=(0,), epilogue_subtile=(0,), stream_k=(0,), swap_ab=(0,),
                        align_rows=(0,), narrow_edge=(0,), warp_groups=(0,))
    return space


def _hints(choices: object, where: str) -> tuple[str, ...]:
    """Scheduling hints of a space file, each one a Config accepts."""
    if not isinstance(choices, list) or not choices:
        raise ValueError(f"{where}: schedule_hint must be a hint or a non-empty list of them")
    for hint in choices:
        try:
            Config(16, 16, 16, schedule_hint=hint)
        except ValueError as error:
            raise ValueError(f"{where}: {error}") from None
    return tuple(sorted(set(choices)))
