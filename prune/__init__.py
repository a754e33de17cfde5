"""Pruning: the range space, the GPU's facts and the rules that cut the space down for one size."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from operator import itemgetter

from prune.config import HOPPER_KNOBS, Config
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
    kept: list[Config] = []
    rules = tuple(_one_group_order(rule, space.group_m) if rule.name == GROUP_RULE else rule for rule in rules)
    group_rule = next((rule for rule in rules if rule.name == GROUP_RULE), None)
    names, combinations = space.tile_values()
    tile_checks = [_Check(rule, names) for rule in rules]
    family_checks = [_Check(rule, names + HOPPER_KNOBS) for rule in family_rules]  # each family's knobs, in order
    family_knobs = [tuple(family.values()) for family in families]
    for values in combinations:
        # Most configs fail a rule that has answered for their values of its fields before: no Config is built for
        # them (the full space holds a million tile configs, each in 130 families; building every one took most of a
        # prune's time).
        def build_tile(values=values):
            return Config.from_checked(dict(zip(names, values)))
        failed, tile = _first_failed(tile_checks, problem, device, values, build_tile)
        if failed is not None:
            removed[failed.name] += len(families)
            continue
        tile = tile if tile is not None else build_tile()
        for family, knobs in zip(families, family_knobs):
            def variant(family=family, knobs=knobs):
                return tile.with_family(family) if any(knobs) else tile
            failed, config = _first_failed(family_checks, problem, device, values + knobs, variant)
            if failed is None:
                if config is None:
                    config = variant()
                if config.SWAP_AB and group_rule and not group_rule.keep(problem, config, device):
                    failed = group_rule  # C^T's rows of tiles run along N: the tile check counted M's
            if failed is None:
                kept.append(config)
            else:
                removed[failed.name] += 1
    return kept


class _Check:
    """One rule, with its answers by the values of the fields it reads (Rule.reads) among the fields `names` that
    the pruner walks; a field it reads that is not among them (a family knob, at the tile stage) is off throughout.
    A rule that does not say what it reads is asked for every config."""

    def __init__(self, rule: Rule, names: tuple[str, ...]):
        self.rule = rule
        positions = [names.index(field) for field in rule.reads if field in names]
        if not rule.reads:
            self.key = None
        elif positions:
            self.key = itemgetter(*positions)
        else:  # it reads only knobs that are off here: one answer for all
            self.key = lambda values: ()
        self.answers: dict[object, bool] = {}


def _first_failed(checks: list[_Check], problem: GemmProblem, device: DeviceProfile, values: tuple,
                  config_of: Callable[[], Config]) -> tuple[Rule | None, Config | None]:
    """The first rule of `checks` the config with these field values fails (None if none), and the config where it
    had to be built (config_of builds it) to ask a rule that had not answered for such values before."""
    config = None
    for check in checks:
        key = check.key(values) if check.key else None
        answer = check.answers.get(key)  # never holds None: a rule that names no fields is asked every time
        if answer is None:
            if config is None:
                config = config_of()
            answer = check.rule.keep(problem, config, device)
            if check.key:
                check.answers[key] = answer
        if not answer:
            return check.rule, config
    return None, config


__all__ = ["FAMILY_RULES", "FULL_SPACE", "RULES", "Config", "DeviceProfile", "PruneResult", "RangeSpace", "prune"]
