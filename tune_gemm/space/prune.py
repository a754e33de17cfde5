"""Pruning: the range space, the GPU's facts and the rules that cut the space down for one size."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from tune_gemm.core.config import HOPPER_KNOBS, Config
from tune_gemm.core.device import DeviceProfile
from tune_gemm.core.problem import GemmProblem
from tune_gemm.space.ranges import FULL_SPACE, RangeSpace
from tune_gemm.space.rules import FAMILY_RULES, RULES, Rule, repeats_group_order

GROUP_RULE = "group_m"


@dataclass(frozen=True)
class PruneResult:
    configs: list[Config]
    space_size: int
    removed_by_rule: dict[str, int]  # configs each rule removed first, in rule order

    def largest_removals(self, count: int = 3) -> str:
        """The rules that removed the most configs first, most first ("block_size 8320, ..."): why a space that kept
        nothing kept nothing, so that a user's --space can be mended."""
        ranked = sorted(self.removed_by_rule.items(), key=lambda item: -item[1])[:count]
        return ", ".join(f"{rule} {removed}" for rule, removed in ranked if removed)


def _one_group_order(rule: Rule, group_values: tuple[int, ...]) -> Rule:
    """The group_m rule's other half, which needs the space's GROUP_SIZE_M values: of those that group every row of
    tiles, or of any where there is one column of tiles (all alike), only the smallest is kept."""
    return replace(rule, keep=lambda problem, config, device: (rule.keep(problem, config, device)
                                                               and not repeats_group_order(problem, config, group_values)))


def prune(
    problem: GemmProblem, device: DeviceProfile, space: RangeSpace = FULL_SPACE, rules: tuple[Rule, ...] = RULES,
    family_rules: tuple[Rule, ...] = FAMILY_RULES,
) -> PruneResult:
    """The configs of `space` that pass every rule for this problem on this device.

    `rules` never look at the kernel-family knobs, so they are checked once per tile config and a
    failure removes all its family variants; `family_rules` then check each variant. The outcome is
    that of checking every config of the space against `rules + family_rules` in order, the group_m rule
    completed with the space's GROUP_SIZE_M values (_one_group_order); a rule that names the fields it reads
    (Rule.reads) is asked once per combination of their values, its answer then reused. The space is pruned product by
    product (RangeSpace.parts), each with its own kernel families."""
    removed = {rule.name: 0 for rule in rules + family_rules}
    kept: list[Config] = []
    for part in space.parts():
        kept += _pruned_part(problem, device, part, rules, family_rules, removed)
    return PruneResult(kept, len(space), removed)


def _pruned_part(problem: GemmProblem, device: DeviceProfile, space: RangeSpace, rules: tuple[Rule, ...],
                 family_rules: tuple[Rule, ...], removed: dict[str, int]) -> list[Config]:
    """prune() over one product of the space (RangeSpace.parts), counting each removal in `removed`."""
    families = space.families()
    rules = tuple(_one_group_order(rule, space.group_m) if rule.name == GROUP_RULE else rule for rule in rules)
    group_rule = next((rule for rule in rules if rule.name == GROUP_RULE), None)
    ranges = space.tile_ranges()
    names, values = tuple(ranges), tuple(ranges.values())
    # the tile stage: every combination of the fields' values, one axis per field
    axes = [_Axis((name,), np.arange(len(field_values))[:, None], (field_values,))
            for name, field_values in zip(names, values)]

    def tile_at(index: tuple[int, ...]) -> Config:
        return Config.from_checked({name: field_values[code]
                                    for name, field_values, code in zip(names, values, index)})
    tile_grid = _Grid(axes)
    tiles_alive = _survivors(tile_grid, rules, problem, device, tile_at, removed, weight=len(families))
    if not tiles_alive.size or not families:
        return []
    # the family stage: each surviving tile config (in the walk's order) with each kernel family
    tile_codes = np.stack(np.unravel_index(tiles_alive, tile_grid.shape), axis=1)
    tiles = [tile_grid.config(int(flat), tile_at) for flat in tiles_alive]
    knob_values = tuple(tuple(sorted({family[knob] for family in families})) for knob in HOPPER_KNOBS)
    family_codes = np.array([[knob_values[j].index(family[knob]) for j, knob in enumerate(HOPPER_KNOBS)]
                             for family in families])
    family_grid = _Grid([_Axis(names, tile_codes, values), _Axis(HOPPER_KNOBS, family_codes, knob_values)])

    def variant_at(index: tuple[int, int]) -> Config:
        tile, family = tiles[index[0]], families[index[1]]
        return tile.with_family(family) if any(family.values()) else tile
    kept = []
    for flat in _survivors(family_grid, family_rules, problem, device, variant_at, removed).tolist():
        config = family_grid.config(flat, variant_at)
        if config.SWAP_AB and group_rule and not group_rule.keep(problem, config, device):
            removed[group_rule.name] += 1  # C^T's rows of tiles run along N: the tile stage counted M's
        else:
            kept.append(config)
    return kept


@dataclass(frozen=True)
class _Axis:
    """One axis of a _Grid: its points, each setting config `fields` to the values its `codes` (points x fields)
    index in `values` (one tuple per field)."""
    fields: tuple[str, ...]
    codes: np.ndarray
    values: tuple[tuple, ...]


class _Grid:
    """Configs as every combination of one point per axis, in row-major order (the order the pruner keeps them in),
    each known by its flat index; a Config is built only for the few a rule must be asked about."""

    def __init__(self, axes: list[_Axis]):
        self.axes = axes
        self.shape = tuple(len(axis.codes) for axis in axes)
        self.strides = tuple(int(np.prod(self.shape[position + 1:])) for position in range(len(axes)))
        self._built: dict[int, Config] = {}

    def keys(self, reads: tuple[str, ...], flats: np.ndarray) -> tuple[np.ndarray, int]:
        """The combination of the values of the fields `reads` of each config in `flats` as one number below the
        second value returned; a field no axis sets is off throughout and adds nothing."""
        key, count = np.zeros(len(flats), dtype=np.int64), 1
        for axis, stride in zip(self.axes, self.strides):
            partial, read = np.zeros(len(axis.codes), dtype=np.int64), False
            for column, (field, field_values) in enumerate(zip(axis.fields, axis.values)):
                if field in reads:
                    partial += axis.codes[:, column] * count
                    count *= len(field_values)
                    read = True
            if read:
                key += partial[flats // stride % len(axis.codes)]
        return key, count

    def config(self, flat: int, build: Callable[[tuple[int, ...]], Config]) -> Config:
        if flat not in self._built:
            index = tuple(flat // stride % length for stride, length in zip(self.strides, self.shape))
            self._built[flat] = build(index)
        return self._built[flat]


def _survivors(grid: _Grid, rules: tuple[Rule, ...], problem: GemmProblem, device: DeviceProfile,
               build: Callable[[tuple[int, ...]], Config], removed: dict[str, int], weight: int = 1) -> np.ndarray:
    """The flat indices of the grid's configs that pass every rule, ascending. Each config is asked the rules in
    order and counted (times `weight`) under the first it fails. A rule that names the fields it reads (Rule.reads)
    is asked once per combination of their values, about the first config with them that passed the rules before
    it (most configs fail a rule that has answered for their values already: the full space holds two million tile
    configs, and walking them one by one took most of a prune); one that names none is asked about every config."""
    alive = np.arange(int(np.prod(grid.shape)))
    for rule in rules:
        if not alive.size:
            break
        if rule.reads:
            key, count = grid.keys(rule.reads, alive)
            if count > 4 * len(key):  # numbered densely, so that the tables below stay small
                _, key = np.unique(key, return_inverse=True)
                count = len(key)
            first = np.full(count, len(alive))
            np.minimum.at(first, key, np.arange(len(alive)))
            asked = np.flatnonzero(first < len(alive))
            asked = asked[np.argsort(first[asked])]  # in the walk's order, as a walk config by config would ask
            answers = np.zeros(count, dtype=bool)
            answers[asked] = [rule.keep(problem, grid.config(int(alive[first[k]]), build), device) for k in asked]
            passed = answers[key]
        else:
            passed = np.array([rule.keep(problem, grid.config(int(flat), build), device) for flat in alive],
                              dtype=bool)
        removed[rule.name] += int((~passed).sum()) * weight
        alive = alive[passed]
    return alive


__all__ = ["FAMILY_RULES", "FULL_SPACE", "RULES", "Config", "DeviceProfile", "PruneResult", "RangeSpace", "prune"]
