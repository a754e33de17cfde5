"""`--ray ADDRESS|auto`: the sizes tuned as Ray tasks over a cluster, the results gathered by this process.

One task per size. On GPUs a task asks Ray for one GPU (`num_gpus=1`): Ray sets CUDA_VISIBLE_DEVICES in the
task's worker, the task reads that GPU's facts itself, and its compile pool and timing children inherit the
pin. Under --interpret a task asks for one CPU. A task whose worker process dies is run again by Ray
(`max_retries`); one that is still lost after that is reported as failed, and the other sizes go on. Results
come back as tasks finish and the caller records each (only this process writes the results file).

Ray is imported only here and only for --ray; the tasks find this project through PYTHONPATH (the same path
on every node: a local cluster, a shared file system, or the package installed there).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from prune.device import INTERPRETER_PROFILE, detect_device
from tuner.chunks import Work
from tuner.errors import UserError
from tuner.pipeline import TuneSettings
from tuner.problem import GemmProblem
from tuner.items import DEFAULT_RETRIES, SizeDone, tune_labelled

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _import_ray():
    try:
        import ray
    except ImportError:
        raise UserError("--ray needs Ray, which is not installed: pip install ray") from None
    return ray


def check_ray_flags(address: str | None, ngpus: int | None, gpu_ids: str | None, other_mode: bool) -> None:
    """--ray tunes sizes on the cluster's GPUs: it takes no GPU choice of this host and no other mode."""
    if address is None:
        return
    if ngpus is not None or gpu_ids is not None:
        raise UserError("--ray and --ngpus/--gpu_ids exclude each other: Ray gives each task its GPU")
    if other_mode:
        raise UserError("--ray tunes sizes; --benchmark, --config_str and --compare_wo_tuning run on this host")
    if not address.strip():
        raise UserError("--ray needs an address (host:port, ray://host:port) or 'auto'")


def tune_task(problem: GemmProblem, settings: TuneSettings, compare: bool) -> SizeDone:
    """One size, in a Ray worker: on a GPU, the one Ray gave this task (device 0 of what it sees)."""
    device = INTERPRETER_PROFILE if settings.interpret else detect_device(0)
    pinned = os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("HIP_VISIBLE_DEVICES")
    where = f"ray {socket.gethostname()}" + (f" GPU {pinned}" if pinned and not settings.interpret else "")
    return tune_labelled(Work(problem), device, settings, compare, where)


def _task_env(interpret: bool) -> dict[str, str]:
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")]))}
    if interpret:  # the generated modules read it when they are imported, in the task's own process
        env["TRITON_INTERPRET"] = "1"
    return env


def tune_on_ray(problems: list[GemmProblem], address: str, settings: TuneSettings, compare: bool,
                retries: int = DEFAULT_RETRIES) -> Iterator[SizeDone]:
    """Tune `problems` as tasks on the Ray cluster at `address` ("auto": the one this host belongs to), or on
    the one this process is already connected to; yields each SizeDone as its task finishes."""
    ray = _import_ray()
    connected_here = not ray.is_initialized()
    if connected_here:
        try:
            ray.init(address=address, log_to_driver=True)
        except (ConnectionError, ValueError, RuntimeError) as error:
            raise UserError(f"--ray {address}: cannot connect to a Ray cluster ({str(error).splitlines()[0]})") \
                from None
    # the tasks run elsewhere: a relative working directory would mean theirs; GPUs are pinned by Ray
    settings = replace(settings, workdir=Path(settings.workdir).resolve(), child_env={})
    task = ray.remote(tune_task).options(
        num_gpus=0 if settings.interpret else 1, num_cpus=1, max_retries=retries, retry_exceptions=False,
        runtime_env={"env_vars": _task_env(settings.interpret)})
    running = {task.remote(problem, settings, compare): problem for problem in problems}
    try:
        while running:
            [ready], _ = ray.wait(list(running), num_returns=1)
            problem = running.pop(ready)
            try:
                yield ray.get(ready)
            except ray.exceptions.RayError as error:  # lost after Ray's retries, or the task itself broke
                reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
                yield SizeDone(problem, None, f"lost on the Ray cluster after {retries} retries: {reason}", "", "ray")
    finally:
        for ref in running:  # stopped early (an error here, Ctrl-C): no task keeps a GPU busy for nothing
            ray.cancel(ref, force=True)
        if connected_here:
            ray.shutdown()
