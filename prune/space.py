"""The hard-coded full range space, as in the seed: every combination of these values is a candidate."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, fields, replace

from prune.config import Config, minimum_value


@dataclass(frozen=True)
class RangeSpace:
    block_m: tuple[int, ...] = (16, 32, 64, 128, 256)
    block_n: tuple[int, ...] = (16, 32, 64, 128, 256)
    block_k: tuple[int, ...] = (16, 32, 64, 128, 256)
    group_m: tuple[int, ...] = (1, 4, 8, 16, 32)
    split_k: tuple[int, ...] = (1, 2, 4, 8, 16)
    num_warps: tuple[int, ...] = (1, 2, 4, 8)
    num_stages: tuple[int, ...] = (1, 2, 3, 4, 5)
    # AMD-only knobs: (None,) means not set, as on NVIDIA
    waves_per_eu: tuple[int | None, ...] = (None,)
    matrix_instr_nonkdim: tuple[int | None, ...] = (None,)
    kpack: tuple[int | None, ...] = (None,)

    def _ranges(self) -> list[tuple]:
        return [getattr(self, f.name) for f in fields(self)]  # in Config's field order

    def configs(self) -> list[Config]:
        return [Config(*values) for values in itertools.product(*self._ranges())]

    def __len__(self) -> int:
        size = 1
        for values in self._ranges():
            size *= len(values)
        return size


FULL_SPACE = RangeSpace()
# On AMD the ROCm script's knob ranges join the space.
AMD_SPACE = replace(FULL_SPACE, waves_per_eu=(0,), matrix_instr_nonkdim=(16, 32), kpack=(1, 2))


def space_for(vendor: str) -> RangeSpace:
    return AMD_SPACE if vendor == "amd" else FULL_SPACE


_SPACE_KEYS = {
    "BLOCK_SIZE_M": "block_m", "BLOCK_SIZE_N": "block_n", "BLOCK_SIZE_K": "block_k", "GROUP_SIZE_M": "group_m",
    "SPLIT_K": "split_k", "num_warps": "num_warps", "num_stages": "num_stages", "waves_per_eu": "waves_per_eu",
    "matrix_instr_nonkdim": "matrix_instr_nonkdim", "kpack": "kpack",
}


def space_from_mapping(mapping: object, where: str, base: RangeSpace = FULL_SPACE) -> RangeSpace:
    """A RangeSpace whose listed fields replace `base`'s values, e.g. {BLOCK_SIZE_M: [64, 128]}.

    Raises ValueError naming the field at fault."""
    if not isinstance(mapping, dict):
        raise ValueError(f"{where}: must be a mapping of config field -> list of values")
    values = {}
    for key, choices in mapping.items():
        if key not in _SPACE_KEYS:
            raise ValueError(f"{where}: unknown field {key!r}; use {', '.join(_SPACE_KEYS)}")
        if isinstance(choices, int) and not isinstance(choices, bool):
            choices = [choices]
        least = minimum_value(key)
        if (not isinstance(choices, list) or not choices
                or not all(isinstance(c, int) and not isinstance(c, bool) and c >= least for c in choices)):
            raise ValueError(f"{where}: {key} must be an integer >= {least} or a non-empty list of them")
        if key.startswith("BLOCK_SIZE") and any(c & (c - 1) for c in choices):
            raise ValueError(f"{where}: {key} values must be powers of two (tl.arange needs them)")
        values[_SPACE_KEYS[key]] = tuple(sorted(set(choices)))
    return replace(base, **values)
