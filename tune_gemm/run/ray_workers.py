"""`--ray ADDRESS|auto`: the sizes tuned as Ray tasks over a cluster, the results gathered by this process.

One task per item (tune_gemm.run.items): a size, or with fewer sizes than the cluster has GPUs (Ray's cluster resources),
a chunk of one and then its final round (tune_gemm.run.chunks, tune_gemm.run.merge), planned as for local workers. Chunks share out
one list of configs while each chunk's task prunes the size for its own GPU, so in that case one probe task per
GPU node (pinned to the node by Ray's scheduling) first reads that node's GPU, and sizes are split only when every
probed GPU is alike; else, or when a probe fails or finds its node busy too long, sizes go out whole. A node's
GPUs are taken to be one model (the probe reads one of them).

On GPUs a task asks Ray for one GPU (`num_gpus=1`): Ray sets CUDA_VISIBLE_DEVICES in the task's worker, the task
reads that GPU's facts itself, and its compile pool and timing children inherit the pin. Under --interpret a task
asks for one CPU, and the cluster's CPUs count as its workers. A task whose worker process dies is run again by
Ray (`max_retries`); one that is still lost after that is reported as failed (a lost chunk leaves the size to its
other chunks), and the other sizes go on. Results come back as tasks finish and the caller records each size
(only this process writes the results file).

Ray is imported only here and only for --ray; the tasks find this project through PYTHONPATH (the same path
on every node: a local cluster, a shared file system, or the package installed there).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType

from tune_gemm.core.device import INTERPRETER_PROFILE, DeviceProfile, detect_device
from tune_gemm.core.errors import UserError
from tune_gemm.core.problem import GemmProblem
from tune_gemm.run.chunks import MIN_CHUNK_CONFIGS, Work, alike, plan
from tune_gemm.run.items import DEFAULT_RETRIES, SizeDone, WorkQueue, tune_labelled
from tune_gemm.search.settings import TuneSettings

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # the folder holding the tune_gemm package
PROBE_SECONDS = 120.0  # a node whose GPUs are all busy (other jobs) this long leaves its GPU unknown: sizes go whole


def _import_ray() -> ModuleType:
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


def node_device(interpret: bool) -> DeviceProfile:
    """In a Ray task: the facts of the GPU Ray gave it (device 0 of what it sees); the interpreter's under
    --interpret. The probe task, and what each tuning task prunes for."""
    return INTERPRETER_PROFILE if interpret else detect_device(0)


def tune_task(work: Work, settings: TuneSettings, compare: bool) -> SizeDone:
    """One item (a size, a chunk, a final round), in a Ray worker, on the GPU Ray gave this task."""
    pinned = os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("HIP_VISIBLE_DEVICES")
    where = f"ray {socket.gethostname()}" + (f" GPU {pinned}" if pinned and not settings.interpret else "")
    return tune_labelled(work, node_device(settings.interpret), settings, compare, where)


def task_options(interpret: bool) -> dict:
    """Ray's options for every task of a run (probe, size, chunk, final round): one GPU (one CPU under --interpret),
    and an environment in which the task finds this project."""
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH", "")]))}
    if interpret:  # the generated modules read it when they are imported, in the task's own process
        env["TRITON_INTERPRET"] = "1"
    return {"num_gpus": 0 if interpret else 1, "num_cpus": 1, "runtime_env": {"env_vars": env}}


def _reason(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def probe_nodes(ray: ModuleType, options: dict, interpret: bool,
                seconds: float = PROBE_SECONDS) -> list[DeviceProfile | None]:
    """The GPU of every node that has one (a CPU under --interpret), read by a task pinned to that node: None where
    the probe failed or did not start within `seconds`."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    resource = "CPU" if interpret else "GPU"
    nodes = [node for node in ray.nodes() if node["Alive"] and node["Resources"].get(resource, 0) >= 1]
    probe = ray.remote(node_device)
    refs = [probe.options(**options, max_retries=0,
                          scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False))
            .remote(interpret) for node in nodes]
    ready = set(ray.wait(refs, num_returns=len(refs), timeout=seconds)[0]) if refs else set()
    devices: list[DeviceProfile | None] = []
    for node, ref in zip(nodes, refs):
        try:
            if ref not in ready:
                ray.cancel(ref, force=True)
                raise TimeoutError(f"no {resource} of it free within {seconds:.0f} s")
            devices.append(ray.get(ref))
        except (ray.exceptions.RayError, TimeoutError) as error:
            print(f"Ray node {node['NodeManagerAddress']}: its {resource} could not be read ({_reason(error)})",
                  flush=True)
            devices.append(None)
    return devices


def _plan(ray: ModuleType, problems: list[GemmProblem], settings: TuneSettings, options: dict,
          min_chunk: int) -> list[Work]:
    """The items, planned as for local workers (tune_gemm.run.chunks.plan) over the cluster's GPUs (CPUs under
    --interpret); the nodes are probed only when there are fewer sizes than workers, the one case of chunks."""
    resource = "CPU" if settings.interpret else "GPU"
    workers = int(ray.cluster_resources().get(resource, 0))
    device = None
    if not workers:  # an autoscaling cluster may yet add GPU nodes for the waiting tasks
        print(f"Ray cluster: no {resource} yet; the sizes wait for one, whole", flush=True)
    elif 0 < len(problems) < workers:
        device = alike(probe_nodes(ray, options, settings.interpret))
        print(f"Ray cluster: {workers} {resource}s, "
              + (f"all {device.name}" if device else "not all alike or known: the sizes go out whole"), flush=True)
    return plan(problems, workers, device, settings.space, min_chunk)


def tune_on_ray(problems: list[GemmProblem], address: str, settings: TuneSettings, compare: bool,
                retries: int = DEFAULT_RETRIES, min_chunk: int = MIN_CHUNK_CONFIGS) -> Iterator[SizeDone]:
    """Tune `problems` as tasks on the Ray cluster at `address` ("auto": the one this host belongs to), or on
    the one this process is already connected to; yields each size's SizeDone as it completes."""
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
    options = task_options(settings.interpret)
    task = ray.remote(tune_task).options(**options, max_retries=retries, retry_exceptions=False)
    running: dict[object, Work] = {}  # Ray's reference to a task's result -> its item
    try:
        queue = WorkQueue(_plan(ray, problems, settings, options, min_chunk), retries)
        while queue.pending or running:
            while queue.pending:  # all at once: Ray holds each until a GPU is free (a final round joins later)
                work = queue.pending.popleft()
                running[task.remote(work, settings, compare)] = work
            [ready], _ = ray.wait(list(running), num_returns=1)
            work = running.pop(ready)
            try:
                done = ray.get(ready)
            except ray.exceptions.RayError as error:  # lost after Ray's retries, or the task itself broke
                done = SizeDone(work.problem, None, f"lost on the Ray cluster after {retries} retries: "
                                f"{_reason(error)}", "", "ray")
            yield from queue.finished(work, done)
    finally:
        for ref in running:  # stopped early (an error here, Ctrl-C): no task keeps a GPU busy for nothing
            ray.cancel(ref, force=True)
        if connected_here:
            ray.shutdown()
