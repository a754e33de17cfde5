"""Child process: loads a generated kernel module, times and checks its configs, writes CSV and JSON.

Run as `python -m profiling.child JOB.json`. It is the unit of crash isolation: whatever a kernel
does to this process, the tuner only loses the config that was running (see progress_path).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

from gen.naming import kernel_name
from profiling.job import ChildJob
from prune.config import Config
from profiling.schema import BASELINE_NAME, append_rows, per_launch_totals
from profiling.backends import TIMERS
from profiling.faults import injected_faults, trigger

MAX_ROTATING_SETS = 32


def load_module(path: str):
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rotating_sets(bytes_per_set: int, l2_bytes: int, free_bytes: int) -> int:
    """How many input sets to cycle through so that a launch finds none of its inputs in L2."""
    wanted = -(-2 * l2_bytes // max(bytes_per_set, 1))
    affordable = max(1, free_bytes // 4 // max(bytes_per_set, 1))
    return max(1, min(wanted, affordable, MAX_ROTATING_SETS))


def _operand_sets(module, job: ChildJob, device: str) -> list:
    problem = module.PROBLEM
    first = module.make_operands(problem, device, seed=job.seed)
    bytes_per_set = sum(t.numel() * t.element_size() for t in first)
    free_bytes = 0
    if device == "cuda":
        import torch

        free_bytes = torch.cuda.mem_get_info()[0]
    count = rotating_sets(bytes_per_set, job.l2_bytes, free_bytes) if job.l2_bytes else 1
    return [first] + [module.make_operands(problem, device, seed=job.seed + i) for i in range(1, count)]


# Exit code of a child whose GPU context a kernel ruined (sticky CUDA error): the runner starts a new one.
EXIT_CONTEXT_LOST = 3


class _Progress:
    def __init__(self, path: str):
        self._handle = open(path, "a")

    def mark(self, event: str, name: str, reason: str = "") -> None:
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


def _guarded(progress: _Progress, name: str, device: str, work) -> bool:
    """Run one config's work, marking start/done; an exception marks it failed. False: stop this child."""
    progress.mark("start", name)
    try:
        work()
        if device == "cuda":
            import torch

            torch.cuda.synchronize()  # a fault surfaces here, while this config is the one marked
    except Exception as error:
        progress.mark("fail", name, f"{type(error).__name__}: {error}")
        return _context_alive(device)
    progress.mark("done", name)
    return True


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
    module = load_module(job.module_path)
    device = "cpu" if module.INTERPRETED else "cuda"
    timer = TIMERS[job.timer]()
    progress = _Progress(job.progress_path)
    faults = injected_faults()
    count = job.warmup + job.iters
    sets = _operand_sets(module, job, device) if job.time_configs or job.baseline else []

    def time_config(name: str) -> None:
        launcher = _with_fault(module.LAUNCHERS[name], faults.get(name), device == "cuda")
        rows = timer.measure(kernel_name(Config.parse(name)), lambda i: launcher(*sets[i % len(sets)]), count)
        append_rows(Path(job.csv_path), rows)

    def time_baseline() -> None:
        import torch

        begin, end = _marker_kernels() if job.markers else (None, None)
        if begin:
            begin[(1,)]()
        rows = timer.measure(BASELINE_NAME, lambda i: torch.matmul(*sets[i % len(sets)][:2], out=sets[i % len(sets)][2]),
                             count)
        if end:
            end[(1,)]()
        append_rows(Path(job.csv_path), per_launch_totals(rows, BASELINE_NAME))

    def check(name: str) -> None:
        launcher = _with_fault(module.LAUNCHERS[name], faults.get(name), device == "cuda")
        error = module.check_config(launcher, module.PROBLEM, device, seed=job.seed + 1000)
        _save_check(Path(job.check_path), name, error)

    work = [(name, lambda name=name: time_config(name)) for name in job.time_configs]
    if job.baseline:
        work.append((BASELINE_NAME, time_baseline))
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


if __name__ == "__main__":
    sys.exit(run(ChildJob.load(Path(sys.argv[1]))))
