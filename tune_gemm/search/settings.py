"""`TuneSettings`: how a run tunes each size (timer, search, budget, timing knobs), read by the search, the
pipeline and the run's helper processes alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tune_gemm.measure import ProfilerChoice
from tune_gemm.measure.run_knobs import DEFAULT_FLUSH, FLUSHES
from tune_gemm.space.ranges import RangeSpace


@dataclass(frozen=True)
class TuneSettings:
    profiler: ProfilerChoice  # see profiling.choose_profiler
    num_threads: int = 1  # compile workers
    jobs: int = 1  # child runs (chunks) the configs are timed in
    compile_pool: str = "process"  # compile workers are processes or threads (tune_gemm.compile.pool.POOLS)
    search: str = "refine"  # or "exhaustive", "halving" (tune_gemm.search.search)
    time_budget: float | None = None  # seconds per size, after which the winner is picked from what is timed
    warmup: int = 5
    iters: int = 20
    statistic: str = "median"
    interpret: bool = False
    keep: bool = False
    workdir: Path = Path(".")
    space: RangeSpace = RangeSpace()
    config_timeout: float = 60.0  # see config_timeout_for
    verbose: bool = False
    precompile: bool = True  # the compile stage; --no_warmup skips it and kernels compile on first launch
    init_type: str = "randn"  # timing inputs (tune_gemm.measure.job.ChildJob.init_type)
    rotating_bytes: int | None = None  # --rotating_tensor in bytes; None: past twice the L2
    cache_flush: str = DEFAULT_FLUSH  # --flush / --icache_flush: which rounds flush L2 before each launch (FLUSHES)
    child_env: dict[str, str] = field(default_factory=dict)  # environment of every child (its pinned GPU)

    @property
    def standby_children(self) -> int | None:
        """How many timing children wait in standby for the next jobs (tune_gemm.measure.standby), beside the child that
        ran the last job clean and takes the next itself: on a GPU, where a child's start-up is seconds of imports
        and profiler start-up, one; two where a time budget may cut a search's rounds short, so that a round after
        one whose child failed a config still finds one warm (a child started with the round before it was not:
        the closing round after a cut round 1 waited 7 s of its 8, H200). None
        waiting under the interpreter, whose machines (CI) have few cores to spare, though a child there still takes
        the next job after one it ran clean (an import of torch saved each time); None at all under an external
        profiler, which starts each child itself for one job."""
        if self.profiler.external is not None:
            return None
        if self.interpret:
            return 0
        return 2 if self.time_budget is not None and self.search != "exhaustive" else 1

    @property
    def compile_workers(self) -> bool:
        """Whether the searches compile in the run's worker processes (tune_gemm.compile.pool.WORKER_PROCESSES): with the
        compile stage (not --no_warmup) and the process pool, and not under the interpreter, which builds nothing."""
        return not self.interpret and self.precompile and self.compile_pool == "process"

    def __post_init__(self) -> None:
        if self.cache_flush not in FLUSHES:
            raise ValueError(f"cache_flush must be one of {FLUSHES}, got {self.cache_flush!r}")

    def flushes(self, final: bool) -> bool:
        """Whether a round's launches run after an L2 flush: with `final`, the round whose times pick the winner.
        "auto" is "final" until a size resolves it (tune_size, run_knobs.rounds_flushed)."""
        return self.cache_flush == "all" or (final and self.cache_flush != "none")


PRECOMPILED_HANG_SECONDS = 60.0
SELF_COMPILING_HANG_SECONDS = 300.0


def config_timeout_for(interpret: bool, precompile: bool) -> float:
    """Default seconds without progress after which a config counts as hung. With the binaries compiled ahead,
    a config's launches take milliseconds each, so a minute is far past any real kernel, and a hang (a deadlocked
    kernel) costs a minute, not five. A child that compiles each kernel itself (--no_warmup) or interprets it
    needs the longer allowance."""
    return SELF_COMPILING_HANG_SECONDS if interpret or not precompile else PRECOMPILED_HANG_SECONDS
