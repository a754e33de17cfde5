"""Which tuned config serves a GEMM shape: exact shape, else a tuned neighbour in its power-of-two bucket, else a default.

The rule, in order (the first that finds something wins):

1. **exact**: a config tuned for exactly (M, N, K).
2. **m_bucket**: same N and K, and M' in the same power-of-two bucket as M, i.e. ``bucket(M') == bucket(M)``
   with ``bucket(x)`` the smallest power of two >= x (so M=17..32 share bucket 32, M=33..64 bucket 64).
   N and K usually come from a model's weights and are fixed, while M (tokens, batch) varies: a config tuned
   for a nearby M with the same weights is the best guess. Among several, the M' nearest to M; a tie goes to
   the larger M' (a config tuned for more rows has more tiles to fill the GPU with, and the smaller problem
   still fits it).
3. **bucket**: M', N' and K' each in the same power-of-two bucket as M, N and K (seed 001's
   ``(power_of_2(m), power_of_2(n), power_of_2(k))`` key). Among several, the smallest sum of
   ``|log2(x'/x)|`` over the three dimensions; ties go to the larger shape.
4. **default**: `default_config`, which fits every dtype and GPU the tuner supports.

Every config computes the right answer at every shape (edges are masked, K tails too): the rule only
decides speed. Dtypes and layouts are never mixed: the caller passes only the shapes tuned for the
call's dtypes and layouts (a config tuned for fp16 may not fit fp32's shared memory).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from tune_gemm.core.config import Config
from tune_gemm.core.geometry import (
    next_power_of_two as bucket,  # a size's bucket: the smallest power of two >= it
)

Shape = tuple[int, int, int]  # (M, N, K)

EXACT, M_BUCKET, BUCKET, DEFAULT = "exact", "m_bucket", "bucket", "default"
RULES = (EXACT, M_BUCKET, BUCKET, DEFAULT)


@dataclass(frozen=True)
class Choice:
    """The config chosen for a shape, the rule that chose it, and the tuned shape it came from (None: default)."""

    config: Config
    rule: str
    tuned_shape: Shape | None


def default_config(M: int, N: int, K: int, least_block_k: int = 16) -> Config:
    """A config for shapes nothing was tuned for: 64x64x32 tiles, smaller for small matrices (down to 16; BLOCK_K
    down to `least_block_k`, 32 for 1-byte inputs: tune_gemm.space.rules.least_block_k).

    Its shared memory, 3 stages of (64x32 + 32x64) fp32 elements = 48 KiB at most, fits every GPU the tuner
    knows (AMD's 64 KiB LDS included); 4 warps and GROUP_SIZE_M 8 are the common middle of the tuned ranges."""
    def side(x: int, largest: int) -> int:
        return min(largest, max(16, bucket(x)))

    return Config(BLOCK_SIZE_M=side(M, 64), BLOCK_SIZE_N=side(N, 64), BLOCK_SIZE_K=max(least_block_k, side(K, 32)),
                  GROUP_SIZE_M=8, SPLIT_K=1, num_warps=4, num_stages=3)


def _log_distance(tuned: Shape, wanted: Shape) -> float:
    return sum(abs(math.log2(t / w)) for t, w in zip(tuned, wanted))


def choose(tuned: Mapping[Shape, Config], shape: Shape, least_block_k: int = 16) -> Choice:
    """Apply the rule above to the shapes tuned for one dtype/layout combination (`least_block_k`: the inputs'
    smallest BLOCK_K, for the default)."""
    M, N, K = shape
    if shape in tuned:
        return Choice(tuned[shape], EXACT, shape)
    same_weights = [s for s in tuned if s[1:] == (N, K) and bucket(s[0]) == bucket(M)]
    if same_weights:
        best = min(same_weights, key=lambda s: (abs(s[0] - M), -s[0]))
        return Choice(tuned[best], M_BUCKET, best)
    same_bucket = [s for s in tuned if tuple(map(bucket, s)) == (bucket(M), bucket(N), bucket(K))]
    if same_bucket:
        best = min(same_bucket, key=lambda s: (_log_distance(s, shape), tuple(-x for x in s)))
        return Choice(tuned[best], BUCKET, best)
    return Choice(default_config(M, N, K, least_block_k), DEFAULT, None)
