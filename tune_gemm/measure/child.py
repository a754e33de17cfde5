"""Child process: loads generated kernel modules, times and checks their configs, writes CSV and JSON.

Run as `python -m tune_gemm.measure.child JOB.json`. It is the unit of crash isolation: whatever a kernel
does to this process, the tuner only loses the config that was running (see progress_path).
Configs are timed in batches (`job.batch`, one timer session each, in the order tune_gemm.measure.stream
gives): a batch's rows are written, and its configs marked done, once the batch is over, so a crash
inside a batch leaves its other configs to the next child. Each config comes from its part module when
the job names one (tune_gemm.generate.parts), else from the job's module; each module is loaded when a config first needs it.
At its end it prints where its start-up went (tune_gemm.measure.child_timeline) on its output, which --verbose shows.

Started in standby (`python -m tune_gemm.measure.child --standby GO TIMER`, tune_gemm.measure.standby), a child serves one job after
another: once a job ends with exit code 0 and none of its configs failed (a job a stop request cut short included),
it frees the job's memory, writes the number of configs the job started to GO's done file and waits for GO to
name the next job; a job that failed a config, or lost the GPU context, ends the child as before.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from pathlib import Path

from tune_gemm.compile.faults import injected_faults, trigger
from tune_gemm.core.config import Config
from tune_gemm.generate.loader import ModuleCache
from tune_gemm.generate.naming import kernel_name
from tune_gemm.measure.backends import TIMERS, Session, no_flush
from tune_gemm.measure.baselines import baseline_for
from tune_gemm.measure.cache_flush import CacheFlush
from tune_gemm.measure.child_timeline import REUSED_ORIGIN, Timeline
from tune_gemm.measure.job import ChildJob
from tune_gemm.measure.schema import BASELINE_NAME, append_rows, per_launch_totals
from tune_gemm.measure.standby import done_path_for, ready_path_for
from tune_gemm.measure.stream import config_batches

MAX_ROTATING_SETS = 32


def rotating_sets(bytes_per_set: int, l2_bytes: int, free_bytes: int) -> int:
    """How many input sets to cycle through so that a launch finds none of its inputs in L2."""
    wanted = -(-2 * l2_bytes // max(bytes_per_set, 1))
    affordable = max(1, free_bytes // 4 // max(bytes_per_set, 1))
    return max(1, min(wanted, affordable, MAX_ROTATING_SETS))


def _set_count(job: ChildJob, bytes_per_set: int, free_bytes: int) -> int:
    """How many operand sets to build: --rotating_tensor's total when given (0: one set), else enough to
    exceed twice the L2. Never more than one measurement's launches: each launch takes the next set, so
    later sets would never be touched."""
    if job.rotating_bytes is not None:
        wanted = max(1, job.rotating_bytes // max(bytes_per_set, 1))
    elif job.l2_bytes:
        wanted = rotating_sets(bytes_per_set, job.l2_bytes, free_bytes)
    else:
        wanted = 1
    return min(wanted, job.warmup + job.iters)


def _operand_sets(module, job: ChildJob, device: str) -> list:
    from tune_gemm.kernels.matmul_family import make_operands  # loaded with the generated module, which imports it

    problem = module.PROBLEM
    first = make_operands(problem, device, seed=job.seed, init_type=job.init_type)
    bytes_per_set = sum(t.numel() * t.element_size() for t in first if t is not None)  # fp8 without bias: None
    free_bytes = 0
    if device == "cuda":
        import torch

        free_bytes = torch.cuda.mem_get_info()[0]
    count = _set_count(job, bytes_per_set, free_bytes)
    return [first] + [make_operands(problem, device, seed=job.seed + i, init_type=job.init_type)
                      for i in range(1, count)]


# Exit code of a child whose GPU context a kernel ruined (sticky CUDA error): the runner starts a new one.
EXIT_CONTEXT_LOST = 3


class _Progress:
    def __init__(self, path: str, timeline: Timeline):
        self._handle = open(path, "a")
        self._timeline = timeline
        self.started = 0
        self.failures = 0

    def close(self) -> None:
        self._handle.close()

    def mark(self, event: str, name: str, reason: str = "") -> None:
        if event == "start":
            self._timeline.mark("first config")
        self.started += int(event == "start")
        self.failures += int(event == "fail")
        line = f"{event} {name}" + (f" {' '.join(reason.split())}" if reason else "")
        self._handle.write(line + "\n")
        self._handle.flush()


def _context_alive(device: str) -> bool:
    if device != "cuda":
        return True
    import torch

    try:
        torch.cuda.synchronize()
        return True
    except Exception:  # sticky CUDA errors: every later call fails too
        return False


def _attempt(progress: _Progress, name: str, device: str, work) -> tuple[bool, bool]:
    """Run one config's work, marking it started; an exception marks it failed.
    Returns (it ran, the GPU context is still usable)."""
    progress.mark("start", name)
    try:
        work()
        if device == "cuda":
            import torch

            torch.cuda.synchronize()  # a fault surfaces here, while this config is the one marked
    except Exception as error:
        progress.mark("fail", name, f"{type(error).__name__}: {error}")
        return False, _context_alive(device)
    return True, True


def _guarded(progress: _Progress, name: str, device: str, work) -> bool:
    """Run one config's work, marking start/done; an exception marks it failed. False: stop this child."""
    ran, alive = _attempt(progress, name, device, work)
    if ran:
        progress.mark("done", name)
    return alive


def _time_batch(progress: _Progress, device: str, session: Session, names: list[str], measure,
                rows_of) -> list | None:
    """Time a batch of configs in one timer session (measure(session, name) each). Once the session is over,
    returns the rows of those that ran (rows_of(session, name)); the caller writes them, then marks them done.
    None: the GPU context is lost; the batch's configs not marked failed are timed again by the next child."""
    ran, alive = [], True
    try:
        with session:
            for name in names:
                ok, alive = _attempt(progress, name, device, lambda name=name: measure(session, name))
                if not alive:
                    return None
                if ok:
                    ran.append(name)
    except Exception as error:  # the session itself broke (its profiler): what it measured is lost with it
        if not alive:
            return None
        for name in ran:
            progress.mark("fail", name, f"timer session failed: {type(error).__name__}: {error}")
        return [] if _context_alive(device) else None
    return [(name, rows_of(session, name)) for name in ran]


def _marker_kernels():
    """Two empty kernels whose names bracket the baseline's launches in an external profiler's trace."""
    import triton

    @triton.jit
    def tune_gemm_baseline_begin():
        pass

    @triton.jit
    def tune_gemm_baseline_end():
        pass

    return tune_gemm_baseline_begin, tune_gemm_baseline_end


def _with_fault(launcher, fault: str | None, on_gpu: bool):
    if fault is None:
        return launcher

    def faulty(*tensors):
        trigger(fault, on_gpu)
        return launcher(*tensors)

    return faulty


def run(job: ChildJob) -> int:
    """Time and check the job's configs (exit code: 0, or EXIT_CONTEXT_LOST)."""
    return run_counted(job)[0]


def run_counted(job: ChildJob, timeline: Timeline | None = None) -> tuple[int, _Progress]:
    """run(), and the job's progress (how many configs it started and how many failed); `timeline`: a standby
    child's own."""
    if timeline is None:
        timeline = Timeline()
        timeline.mark("imports")
    progress = _Progress(job.progress_path, timeline)
    try:
        return _run(job, timeline, progress), progress
    finally:
        progress.close()
        timeline.mark("end")
        print(timeline.line(), file=sys.stderr, flush=True)


def _run(job: ChildJob, timeline: Timeline, progress: _Progress) -> int:
    modules = ModuleCache()
    configs = [*job.time_configs, *job.check_configs]
    # the first config's module, which the child loads anyway, imports the families (the same for every part)
    module = modules.get(job.module_of(configs[0]) if configs else job.module_path)
    from tune_gemm.kernels.matmul_family import INTERPRETED, check_config

    timeline.mark("module")
    device = "cpu" if INTERPRETED else "cuda"
    timer = TIMERS[job.timer]()
    faults = injected_faults()
    count = job.warmup + job.iters
    timing = bool(job.time_configs or job.baseline)
    sets = _operand_sets(module, job, device) if timing else []
    timeline.mark("inputs")
    flush = CacheFlush(job.l2_bytes, device) if job.cache_flush and timing else no_flush

    def launcher_of(name: str):
        return _with_fault(modules.get(job.module_of(name)).LAUNCHERS[name], faults.get(name), device == "cuda")

    def measure_config(session: Session, name: str) -> None:
        launcher = launcher_of(name)
        session.measure(kernel_name(Config.parse(name)), lambda i: launcher(*sets[i % len(sets)]), count, flush)

    def config_rows(session: Session, name: str) -> list:
        subject = kernel_name(Config.parse(name))
        # every kernel of a launch counts: a split-K reduction, a copy that pads odd strides for TMA
        return per_launch_totals(session.rows[subject], subject)

    def time_baseline() -> None:
        baseline = baseline_for(sets)  # before the markers: fallbacks dequantize here
        begin, end = _marker_kernels() if job.markers else (None, None)
        if begin:
            begin[(1,)]()
        with baseline.precision():
            rows = timer.measure(BASELINE_NAME, baseline, count, flush)
        if end:
            end[(1,)]()
        append_rows(Path(job.csv_path), per_launch_totals(rows, BASELINE_NAME))

    def check(name: str) -> None:
        error = check_config(launcher_of(name), module.PROBLEM, device, seed=job.seed + 1000)
        _save_check(Path(job.check_path), name, error)

    for batch in config_batches(job):
        timed = _time_batch(progress, device, timer.session(), batch, measure_config, config_rows)
        if timed is None:
            return EXIT_CONTEXT_LOST
        append_rows(Path(job.csv_path), [row for _, rows in timed for row in rows])
        for name, _ in timed:
            progress.mark("done", name)
    work = [(BASELINE_NAME, time_baseline)] if job.baseline else []
    work += [(name, lambda name=name: check(name)) for name in job.check_configs]
    for name, step in work:
        if not _guarded(progress, name, device, step):
            return EXIT_CONTEXT_LOST
    return 0


def _save_check(path: Path, name: str, error: float) -> None:
    """Add one result to the check file, rewritten whole each time so a later crash loses nothing."""
    errors = json.loads(path.read_text()) if path.exists() else {}
    errors[name] = error
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(errors))
    os.replace(temporary, path)


_GO_POLL_SECONDS = 0.01


def _warm_up(timer_name: str) -> None:
    """Pay now what a child's first measurement would: the GPU context and the timer's first session (for
    cupti, the profiler's start-up), without launching a kernel that would disturb the child timing now."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return
    import torch

    if not torch.cuda.is_available():
        return
    torch.empty(1, device="cuda")
    with TIMERS[timer_name]().session():
        pass


def _next_job(go_path: Path) -> tuple[ChildJob, float]:
    """Wait for go_path to name a job file; (the job, when it was handed over), go_path removed for the next."""
    while not go_path.exists():
        time.sleep(_GO_POLL_SECONDS)
    handed_at = go_path.stat().st_mtime  # written whole and renamed into place: the runner's moment
    job_path = Path(go_path.read_text())
    go_path.unlink()
    return ChildJob.load(job_path), handed_at


def _release_memory() -> None:
    """Free what the last job left: its operand sets and modules, and the GPU memory torch's allocator kept for
    them, so that the next job sizes its rotating input sets on the GPU's free memory as a new child would."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()


def _report_done(go_path: Path, configs_started: int) -> None:
    """Tell the runner the job ended clean, and how many configs it started (written atomically: the runner polls
    for the file)."""
    done = done_path_for(go_path)
    temporary = done.with_name(done.name + ".tmp")
    temporary.write_text(str(configs_started))
    os.replace(temporary, done)


def standby(go_path: Path, timer_name: str) -> int:
    """A child started ahead of its job (tune_gemm.measure.standby): warm up, then run the jobs go_path will name, one
    after another, until one fails a config or loses the GPU context (its exit code is the child's)."""
    timeline = Timeline()
    timeline.mark("imports")
    _warm_up(timer_name)
    timeline.mark("ready")
    ready_path_for(go_path).touch()
    job, _ = _next_job(go_path)
    while True:
        timeline.mark("job")
        code, progress = run_counted(job, timeline)
        if code != 0 or progress.failures:  # a config that failed may have left the process or its context unsound
            return code
        # freed before the report, so that a child that cannot free it ends while its job is still its own
        _release_memory()
        sys.stdout.flush()  # the job's output all in the file before the runner reads it
        _report_done(go_path, progress.started)
        job, handed_at = _next_job(go_path)
        timeline = Timeline(origin=handed_at, since=REUSED_ORIGIN)


if __name__ == "__main__":
    if sys.argv[1] == "--standby":
        sys.exit(standby(Path(sys.argv[2]), sys.argv[3]))
    sys.exit(run(ChildJob.load(Path(sys.argv[1]))))
