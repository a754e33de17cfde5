"""Work items (tune_gemm.run.chunks.Work: a size, a chunk of one, a final round) from both ends: done in a worker into a
`SizeDone`, and gathered by the coordinator into one SizeDone per size (WorkQueue). Shared by this process's own
tuning, the local workers (tune_gemm.run.workers) and Ray's tasks (tune_gemm.run.ray_workers), which differ only in where an
item runs and how a lost one is noticed.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from rich.console import Console

from tune_gemm.core.device import DeviceProfile
from tune_gemm.core.problem import GemmProblem
from tune_gemm.run.chunks import Work
from tune_gemm.run.merge import SplitSize, final_round
from tune_gemm.run.pipeline import SizeFailed, SizeOutcome, tune_size
from tune_gemm.search.progress import StageLines, Stages
from tune_gemm.search.settings import TuneSettings

DEFAULT_RETRIES = 2  # an item is tried at most this many more times after its worker died


@dataclass
class SizeDone:
    """What became of one size: its outcome, or why there is none. Picklable, sent back by workers."""

    problem: GemmProblem
    outcome: SizeOutcome | None
    error: str | None  # why the size failed (outcome None)
    gpu: str  # the device's name, as the results file records it
    where: str  # which worker tuned it, for messages ("GPU 1", a Ray node)


def tune_one(problem: GemmProblem, device: DeviceProfile, settings: TuneSettings, compare: bool, where: str,
             log: Callable[[str], object], stages: Stages) -> SizeDone:
    """Tune one size into a SizeDone (a size that fails is an outcome too, not an exception)."""
    return do_work(Work(problem), device, settings, compare, where, log, stages)


def do_work(work: Work, device: DeviceProfile, settings: TuneSettings, compare: bool, where: str,
            log: Callable[[str], object], stages: Stages) -> SizeDone:
    """One item into a SizeDone over its configs (for a chunk or a final round, not yet the size's)."""
    try:
        if work.finalists:
            outcome = final_round(work.problem, list(work.finalists), device, settings, compare, log, stages)
        else:  # a chunk's best is not the size's winner: the final round compares
            outcome = tune_size(work.problem, device, settings, compare and work.chunk is None, log=log,
                                stages=stages, chunk=work.chunk)
    except SizeFailed as failure:
        return SizeDone(work.problem, None, str(failure), device.name, where)
    finally:
        stages.close()
    return SizeDone(work.problem, outcome, None, device.name, where)


def tune_labelled(work: Work, device: DeviceProfile, settings: TuneSettings, compare: bool, where: str) -> SizeDone:
    """do_work in a worker: progress as lines on stdout, each starting with the worker's place."""
    console = Console(highlight=False, soft_wrap=True)
    return do_work(work, device, settings, compare, where,
                   lambda line: console.print(f"[{where}] {line}", markup=False),
                   StageLines(console, f"[{where}] {work.label}"))


class WorkQueue:
    """The items still to hand out, the retries each has used, and the chunks of split sizes gathered until
    their final round."""

    def __init__(self, items: list[Work], retries: int):
        self.pending, self.retries, self.attempts = deque(items), retries, Counter()
        self.split = {w.problem: SplitSize(w.chunk.count) for w in items if w.chunk}

    def put_back(self, work: Work) -> bool:
        """After its worker died: back at the front of the queue, unless it used its retries (False)."""
        self.attempts[work] += 1
        if self.attempts[work] > self.retries:
            return False
        self.pending.appendleft(work)
        return True

    def finished(self, work: Work, done: SizeDone) -> Iterator[SizeDone]:
        """An item is done (or failed): the SizeDone of its size, once there is one."""
        if work.chunk is None and not work.finalists:
            yield done
            return
        split = self.split[work.problem]
        if work.chunk:
            split.add(done.outcome, done.error)
            if done.outcome is None:
                print(f"{work.label} failed{f' on {done.where}' if done.where else ''}: {done.error}", flush=True)
            if split.complete and split.outcomes:  # first in line: the size is done soonest
                self.pending.appendleft(Work(work.problem, finalists=split.finalists()))
            elif split.complete:
                yield replace(done, error=f"every chunk failed; last: {done.error}")
            return
        del self.split[work.problem]
        yield done if done.outcome is None else replace(done, outcome=split.merged(done.outcome))
        if done.outcome is not None:  # the caller asks for the next SizeDone once it has recorded this one
            split.discard_checkpoints()
