"""Config chunks: the work items a run on several workers hands out, a size whole or split over workers.

With at least as many sizes as workers, every worker has a size of its own and sizes go out whole. With
fewer, whole sizes would leave workers idle while one huge size is tuned, so each size is split into chunks of
its pruned configs that several workers tune at once; the best few configs of every chunk are then timed
again side by side (tune_gemm.run.merge) for the size's winner. Chunk i of k takes configs i, i+k, i+2k... of the
size's visiting order (tune_gemm.search.order), so every chunk samples the whole space: none holds only small tiles,
and chunks cut short by a time budget have sampled all of it between them.

Chunks of one size must share out one list of configs, while each chunk's worker prunes the size for its own
GPU: a size is split only when every worker has the same GPU (`alike`). This module only plans (no processes):
tune_gemm.run.workers and tune_gemm.run.ray_workers hand the items out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from tune_gemm.core.device import DeviceProfile
from tune_gemm.core.problem import GemmProblem
from tune_gemm.space.prune import prune
from tune_gemm.space.ranges import RangeSpace

# A chunk has fixed costs that a few configs do not repay: its worker loads part modules and starts a timing child,
# and its best configs are timed again in the final round. A size is never split into chunks smaller than this,
# one part module's worth of configs (tune_gemm.generate.parts.PART_SIZE).
MIN_CHUNK_CONFIGS = 256

Item = TypeVar("Item")


@dataclass(frozen=True)
class Chunk:
    """Chunk `index` (from 0) of a size split into `count`."""

    index: int
    count: int

    def take(self, visiting: list[Item]) -> list[Item]:
        """This chunk's share of a size's configs in visiting order: every count-th, from the index-th."""
        return visiting[self.index::self.count]

    @property
    def tag(self) -> str:
        """For the names of the chunk's own files (scratch directory, checkpoint)."""
        return f"chunk{self.index + 1}of{self.count}"

    def __str__(self) -> str:
        return f"chunk {self.index + 1} of {self.count}"


@dataclass(frozen=True)
class Work:
    """One item a worker is handed: a whole size, one chunk of it, or its final round (its chunks' best configs,
    `finalists`, timed side by side)."""

    problem: GemmProblem
    chunk: Chunk | None = None
    finalists: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return "final round" if self.finalists else "chunk" if self.chunk else "size"

    @property
    def label(self) -> str:
        """The size's label, and which part of it this is."""
        part = " final round" if self.finalists else f" {self.chunk}" if self.chunk else ""
        return self.problem.label + part


def chunk_count(configs: int, sizes: int, workers: int, min_chunk: int = MIN_CHUNK_CONFIGS) -> int:
    """Into how many chunks a size of `configs` pruned configs is split, in a run of `sizes` sizes on `workers`:
    enough to give every worker a share (workers / sizes, rounded up), none smaller than `min_chunk` configs."""
    if sizes >= workers:
        return 1
    return max(1, min(math.ceil(workers / sizes), configs // min_chunk))


def plan_work(sizes: list[tuple[GemmProblem, int]], workers: int, min_chunk: int = MIN_CHUNK_CONFIGS) -> list[Work]:
    """The items to hand out for `sizes` (each with its pruned config count), in the sizes' order."""
    items: list[Work] = []
    for problem, configs in sizes:
        count = chunk_count(configs, len(sizes), workers, min_chunk)
        items += [Work(problem)] if count == 1 else [Work(problem, Chunk(index, count)) for index in range(count)]
    return items


def alike(devices: Iterable[DeviceProfile | None]) -> DeviceProfile | None:
    """The GPU every worker has, or None: unlike GPUs, one not known (None among them), or no worker at all."""
    distinct = set(devices)
    return distinct.pop() if len(distinct) == 1 else None


def plan(problems: list[GemmProblem], workers: int, device: DeviceProfile | None, space: RangeSpace,
         min_chunk: int = MIN_CHUNK_CONFIGS) -> list[Work]:
    """The items to hand out to `workers` workers whose common GPU is `device` (None: sizes go out whole), with a
    line for each size split."""
    if device is None or len(problems) >= workers:
        return [Work(problem) for problem in problems]
    counts = [len(prune(problem, device, space).configs) for problem in problems]
    items = plan_work(list(zip(problems, counts)), workers, min_chunk)
    for problem, count in zip(problems, counts):
        chunks = sum(work.problem == problem for work in items if work.chunk)
        if chunks:
            print(f"{problem.label}: {count} configs in {chunks} chunks over {chunks} workers", flush=True)
    return items
