"""`--search refine`: which configs each round of the refining search times (RefineSearch, a
tune_gemm.search.strategy). Pure functions: no GPU, no files.

Most of a pruned space varies two knobs around one kernel shape (family, tile, K split, warps): the pipeline
depth (num_stages) and the tile ordering (GROUP_SIZE_M), and with a K split a third, who sums the partials
(FUSED_REDUCE). At 4096³ on Hopper the 2173 configs are 147 shapes of up to 25 such variants each. Those knobs
tune a shape; they rarely decide between shapes. The exception is a few rows of tiles walked row by row (GROUP_SIZE_M
1), which took up to twice as long as one group of every row on the H100: the
representative's GROUP_SIZE_M 8 is that one group wherever M has two to eight rows of tiles. So:

- round 0 times one representative per shape: the variant nearest to `stages` stages and a GROUP_SIZE_M of
  `group_m`, its partials summed as fused_reduce_preferred says;
- round 1 times every other variant of the best shapes: the `keep` best representatives, plus any within
  `margin` of the best one (near-ties are not cut on noise), at most `max_keep` shapes; and of each other shape
  whose representative is within `order_margin` of the best, at most `max_order_probes` of them, its variant in
  the other tile order: its smallest GROUP_SIZE_M, row by row where that is 1. Where M has many rows of tiles and N
  few columns, the representative's groups can be what makes a shape slow: at 16384x1176x4096 (fp16, H100, L2
  flushed) 256x128 tiles took 285-295 us in groups of 8 rows and 231.5 us row by row, the best config of the shape
  space timed;
- round 2 times the `final` fastest configs of rounds 0 and 1 again, side by side in one child, and its times
  pick the winner (rounds 0 and 1 ran at different moments, so drift of the GPU's clocks between them does
  not decide).

A space of few configs per shape (16³: 24 configs in 12 shapes) is timed whole in one round instead: refining
it would time most configs anyway, in three rounds instead of one.

Every round uses the run's `--warmup` and `--iters`, so it compiles and times a fraction of the space (about a
sixth at 4096³) with the care of an exhaustive search. Ties in time are broken by config name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from tune_gemm.core.config import ATOMIC_REDUCE, Config
from tune_gemm.search.strategy import Progress, Round, RoundSpec, SearchStrategy, ranked

TUNING_KNOBS = ("num_stages", "GROUP_SIZE_M", "FUSED_REDUCE")  # what round 1 varies within a shape
# Split-K tiles up to this many elements are represented by their FUSED_REDUCE variant: their last K slice sums the
# others' partials quickly, and the launch saves the reduction kernel (on the H100, 16x1024x8192 fp16: 15.0 against
# 17.5 us with 16x64 tiles in 8 slices; 128x256x65536: 35.3 against 38.5 with 64x64 in 16). Past it one program
# summing the slices of a large tile costs more than the reduction kernel (1024x1024x16384, 128x256 tiles in 4
# slices: 81.1 against 66.9 us). A TMA split-K shape has only its FUSED_REDUCE variant.
FUSED_REDUCE_MAX_TILE = 64 * 128
# From this many K slices on, a shape is represented by its ATOMIC_REDUCE variant, whichever its tile: the slices add
# into one running sum, so the last one reads one tile instead of a slot per slice (H100, 128x256x65536 fp16: 31.6
# against 35.2 us with 64x64 tiles in 16 slices, 35.2 against 65.3 with 128x128 TMA tiles in 64). With fewer slices
# the slots cost no more (1024^3, 128x128 TMA tiles in 2 slices: 14.9 against 18.0 us).
ATOMIC_REDUCE_MIN_SPLIT = 8


@dataclass(frozen=True)
class RefinePlan:
    stages: int = 4  # the representative's num_stages: this, else the nearest below it, else the nearest above
    group_m: int = 8  # the representative's GROUP_SIZE_M: the nearest to this on a log scale, the larger on a tie
    keep: int = 6  # shapes refined in round 1 at least (when there are so many) ...
    margin: float = 0.03  # ... plus every shape whose representative is within this fraction of the best one
    max_keep: int = 24  # ... but never more shapes than this
    order_margin: float = 0.3  # other shapes whose representative is within this fraction of the best one ...
    max_order_probes: int = 64  # ... (at most this many) get their variant in the other tile order timed in round 1
    final: int = 8  # configs re-timed together in round 2
    whole_space_share: float = 0.5  # shapes at least this share of the configs: time every config in one round

    def __post_init__(self) -> None:
        if (min(self.stages, self.group_m, self.keep, self.final) < 1 or min(self.margin, self.order_margin) < 0
                or self.max_keep < self.keep or self.max_order_probes < 0 or not 0 < self.whole_space_share <= 1):
            raise ValueError(f"invalid refine plan {self}")


def shape_of(config: Config) -> tuple:
    """Every field of `config` but the tuning knobs: the configs of one shape differ only in those."""
    return tuple(getattr(config, f.name) for f in fields(config) if f.name not in TUNING_KNOBS)


def _stage_distance(stages: int, preferred: int) -> tuple[int, int]:
    # a shallower pipeline than preferred is a safer stand-in than a deeper one (less shared memory, same overlap)
    return (0, preferred - stages) if stages <= preferred else (1, stages - preferred)


def _group_distance(group_m: int, preferred: int) -> tuple[float, int]:
    return abs(math.log2(group_m) - math.log2(preferred)), -group_m


def fused_reduce_preferred(config: Config) -> int:
    """The FUSED_REDUCE value of a shape's representative: ATOMIC_REDUCE from ATOMIC_REDUCE_MIN_SPLIT slices on;
    below that a slot per slice for split-K tiles up to FUSED_REDUCE_MAX_TILE and every TMA split (the TMA family has
    no reduction kernel), else the reduction kernel (0)."""
    if config.SPLIT_K == 1:
        return 0
    if config.SPLIT_K >= ATOMIC_REDUCE_MIN_SPLIT:
        return ATOMIC_REDUCE
    return int(bool(config.PERSISTENT_TMA) or config.BLOCK_SIZE_M * config.BLOCK_SIZE_N <= FUSED_REDUCE_MAX_TILE)


def shapes(configs: Sequence[Config]) -> dict[tuple, list[Config]]:
    """Configs grouped by shape, shapes in order of their first config in `configs`, configs in their order."""
    grouped: dict[tuple, list[Config]] = {}
    for config in configs:
        grouped.setdefault(shape_of(config), []).append(config)
    return grouped


def representatives(configs: Sequence[Config], plan: RefinePlan) -> list[Config]:
    """Round 0: one config per shape (see the module docstring), in the order of `configs`' shapes."""
    return [min(members, key=lambda c: (c.FUSED_REDUCE != fused_reduce_preferred(c),
                                        _stage_distance(c.num_stages, plan.stages),
                                        _group_distance(c.GROUP_SIZE_M, plan.group_m)))
            for members in shapes(configs).values()]


def times_whole_space(configs: Sequence[Config], plan: RefinePlan) -> bool:
    """Whether round 0 would time so large a share of `configs` that one round over all of them costs less."""
    return len(shapes(configs)) >= plan.whole_space_share * len(configs)


def refined(configs: Sequence[Config], times: dict[str, float], plan: RefinePlan,
            config_of: Mapping[str, Config] | None = None) -> list[Config]:
    """Round 1: the configs of the best shapes by their representatives' `times` (config name -> µs) that round 0
    did not time, and the other tile order of the near shapes (order_probes), most promising first: fewest steps
    from their representative (variant_steps), then the faster representative, then in the order of `configs`.
    A budget that cuts round 1 (tune_gemm.search.search) leaves the variants least likely to win. Shapes whose
    representative has no time (it failed) are not refined. `config_of`: the configs by name (default: `configs`')."""
    grouped = shapes(configs)
    config_of = config_of if config_of is not None else {str(config): config for config in configs}
    parsed = {name: config_of[name] for name in times}
    timed = set(parsed.values())
    timed_shapes = {shape_of(config): name for name, config in parsed.items()}  # each shape's timed config
    order = ranked({name: times[name] for name in timed_shapes.values()})
    if not order:
        return []
    shape_named = {name: shape for shape, name in timed_shapes.items()}
    limit = times[order[0]] * (1 + plan.margin)
    best = [name for rank, name in enumerate(order) if rank < plan.keep or times[name] <= limit][: plan.max_keep]
    chosen = {shape_named[name] for name in best}
    near_limit = times[order[0]] * (1 + plan.order_margin)
    near = [parsed[name] for name in order if shape_named[name] not in chosen and times[name] <= near_limit]
    variants = [config for shape, members in grouped.items() if shape in chosen
                for config in members if config not in timed] + order_probes(grouped, near, timed, plan)
    rank = {shape_named[name]: index for index, name in enumerate(order)}
    return sorted(variants, key=lambda c: (variant_steps(c, parsed[timed_shapes[shape_of(c)]]), rank[shape_of(c)]))


def variant_steps(variant: Config, representative: Config) -> float:
    """How far a variant lies from its shape's representative: a step per pipeline stage and per doubling of
    GROUP_SIZE_M between them, and one for the other way of summing the partials."""
    return (abs(variant.num_stages - representative.num_stages)
            + abs(math.log2(variant.GROUP_SIZE_M) - math.log2(representative.GROUP_SIZE_M))
            + (variant.FUSED_REDUCE != representative.FUSED_REDUCE))


def order_probes(grouped: dict[tuple, list[Config]], near: Sequence[Config], timed: set[Config],
                 plan: RefinePlan) -> list[Config]:
    """For each representative in `near` (best first), its shape's variant at the smallest GROUP_SIZE_M, as near the
    representative's stages and partial sums as there is; none where the representative has that group already. At
    most plan.max_order_probes, none timed before."""
    probes = []
    for representative in near:
        if len(probes) == plan.max_order_probes:
            break
        members = grouped[shape_of(representative)]
        lowest = min(member.GROUP_SIZE_M for member in members)
        if lowest == representative.GROUP_SIZE_M:
            continue
        probe = min((member for member in members if member.GROUP_SIZE_M == lowest),
                    key=lambda c: (c.FUSED_REDUCE != representative.FUSED_REDUCE,
                                   _stage_distance(c.num_stages, representative.num_stages)))
        if probe not in timed:
            probes.append(probe)
    return probes


def finalists(times: dict[str, float], plan: RefinePlan) -> list[str]:
    """Round 2: the `final` fastest configs of rounds 0 and 1 (`times`: their union), fastest first."""
    return ranked(times)[: plan.final]


def refine_times(rounds: list[dict[str, float]]) -> dict[str, float]:
    """The times the winner is picked from: round 2's when it timed anything; else (a time budget spent before
    it) rounds 0 and 1 together, which were timed with the same launches."""
    if len(rounds) > 2 and rounds[2]:
        return rounds[2]
    return {name: time_us for times in rounds[:2] for name, time_us in times.items()}


REFINE = RefinePlan()


class RefineSearch(SearchStrategy):
    """`--search refine`: representatives, the rest of the best shapes, the finalists side by side; or, for a space
    of few configs per shape, every config in one round. Round 0 stops at its own share of a time budget, and a
    search the budget cuts closes with the `final` fastest of rounds 0 and 1."""

    name = "refine"
    plan: RefinePlan

    def default_plan(self) -> RefinePlan:
        return REFINE

    def after(self, configs: list[Config], progress: Progress) -> Round | None:
        done, plan = progress.done, self.plan
        if not done and times_whole_space(configs, plan):
            return Round(RoundSpec(0, self.warmup, self.iters, final=True), configs, compiles=True, first=True)
        if not done:  # round 0 leaves round 1 a reserve (tune_gemm.search.budget)
            return Round(self._spec(0), representatives(configs, plan), compiles=True, first=True, sample=True)
        first = progress.rounds[0]
        if len(done) == 1:  # a round 0 the budget cut still has its best shapes refined, in round 1's reserve
            return Round(self._spec(1), refined(configs, first.times, plan, progress.config_of), compiles=True)
        fastest = finalists({**first.times, **progress.rounds[1].times}, plan)
        if not first.complete or progress.stops_after(done[-1].spec):
            return self.closing(progress, fastest)
        return Round(self._spec(2), progress.configs(fastest))

    def picked_times(self, rounds: list[dict[str, float]]) -> dict[str, float]:
        return refine_times(rounds)

    def _spec(self, index: int) -> RoundSpec:
        return RoundSpec(index, self.warmup, self.iters, final=index == 2)
