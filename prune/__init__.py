"""Pruning: the range space, the GPU's facts and the rules that cut the space down for one size."""

from __future__ import annotations

from dataclasses import dataclass, replace

from prune.config import Config
from prune.device import DeviceProfile
from prune.rules import FAMILY_RULES, RULES, Rule, repeats_group_order
from prune.space import FULL_SPACE, RangeSpace
from tuner.problem import GemmProblem


GROUP_RULE = "group_m"


@dataclass(frozen=True)
class PruneResult:
    configs: list[Config]
    space_size: int
    removed_by_rule: dict[str, int]  # configs each rule removed first, in rule order


def _first_failed(rules: tuple[Rule, ...], problem: GemmProblem, config: Config, device: DeviceProfile) -> Rule | None:
    return next((rule for rule in rules if not rule.keep(problem, config, device)), None)


def _one_group_order(rule: Rule, group_values: tuple[int, ...]) -> Rule:
    """The group_m rule's other half, which needs the space's GROUP_SIZE_M values: of those that group every row of
    tiles (all alike), only the smallest is kept."""
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
    completed with the space's GROUP_SIZE_M values (_one_group_order)."""
    removed = {rule.name: 0 for rule in rules + family_rules}
    families = space.families()
    kept: list[Config] = []
    rules = tuple(_one_group_order(rule, space.group_m) if rule.name == GROUP_RULE else rule for rule in rules)
    group_rule = next((rule for rule in rules if rule.name == GROUP_RULE), None)
    for tile in space.tile_configs():
        failed = _first_failed(rules, problem, tile, device)
        if failed is not None:
            removed[failed.name] += len(families)
            continue
        for family in families:
            config = tile.with_family(family) if any(family.values()) else tile
            failed = _first_failed(family_rules, problem, config, device)
            if failed is None and config.SWAP_AB and group_rule and not group_rule.keep(problem, config, device):
                failed = group_rule  # C^T's rows of tiles run along N: the tile check counted M's
            if failed is None:
                kept.append(config)
            else:
                removed[failed.name] += 1
    return PruneResult(kept, len(space), removed)


__all__ = ["FAMILY_RULES", "FULL_SPACE", "RULES", "Config", "DeviceProfile", "PruneResult", "RangeSpace", "prune"]
