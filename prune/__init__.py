"""Pruning: the range space, the GPU's facts and the rules that cut the space down for one size."""

from __future__ import annotations

from dataclasses import dataclass

from prune.config import Config
from prune.device import DeviceProfile
from prune.rules import RULES, Rule
from prune.space import FULL_SPACE, RangeSpace
from tuner.problem import GemmProblem


@dataclass(frozen=True)
class PruneResult:
    configs: list[Config]
    space_size: int
    removed_by_rule: dict[str, int]  # configs each rule removed first, in rule order


def prune(
    problem: GemmProblem, device: DeviceProfile, space: RangeSpace = FULL_SPACE, rules: tuple[Rule, ...] = RULES
) -> PruneResult:
    """The configs of `space` that pass every rule for this problem on this device."""
    removed = {rule.name: 0 for rule in rules}
    kept: list[Config] = []
    for config in space.configs():
        failed = next((rule for rule in rules if not rule.keep(problem, config, device)), None)
        if failed is None:
            kept.append(config)
        else:
            removed[failed.name] += 1
    return PruneResult(kept, len(space), removed)


__all__ = ["Config", "DeviceProfile", "PruneResult", "RangeSpace", "FULL_SPACE", "RULES", "prune"]
