"""`--ngpus` / `--gpu_ids`: which GPUs a run may use, validated, and the environment that pins a child to one.

With one GPU, the tuner reads its facts by its index and every child process it starts sees only that GPU
(CUDA_VISIBLE_DEVICES on NVIDIA, HIP_VISIBLE_DEVICES on AMD), so inside the child it is device 0. With several,
tune_gemm.run.workers runs one worker process per GPU, pinned the same way. Under --interpret the interpreter counts
as one device, id 0, and nothing is pinned; `--ngpus N` there asks for N interpreter workers (ids 0..N-1),
which runs the several-GPU path on the CPU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from tune_gemm.core.errors import UserError

VISIBLE_DEVICES = {"nvidia": "CUDA_VISIBLE_DEVICES", "amd": "HIP_VISIBLE_DEVICES"}


@dataclass(frozen=True)
class GpuSelection:
    ids: tuple[int, ...]  # as the user numbers them: this process's device indices

    @property
    def first(self) -> int:
        return self.ids[0]

    @property
    def note(self) -> str | None:
        """The one line a run with several GPUs prints."""
        if len(self.ids) < 2:
            return None
        listed = ",".join(str(i) for i in self.ids)
        return f"note: {len(self.ids)} GPUs chosen ({listed}); tuning runs one worker process per GPU, each " \
               f"size to the next free one; --benchmark and --compare_wo_tuning use GPU {self.first}"


def parse_gpu_ids(text: str) -> tuple[int, ...]:
    """`--gpu_ids 0,1,3` as integers, refusing empty items, non-integers, negatives and duplicates."""
    items = [item.strip() for item in text.split(",")]
    ids = []
    for item in items:
        try:
            ids.append(int(item))
        except ValueError:
            raise UserError(f"--gpu_ids {text!r}: {item!r} is not a GPU id (give integers like 0,1,3)") from None
    negative = [i for i in ids if i < 0]
    if negative:
        raise UserError(f"--gpu_ids {text!r}: GPU ids are 0 or more, got {negative[0]}")
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise UserError(f"--gpu_ids {text!r}: GPU {repeated[0]} is listed more than once")
    return tuple(ids)


def select_gpus(ngpus: int | None, gpu_ids: str | None, available: int, where: str) -> GpuSelection:
    """The GPUs to use out of `available` (numbered 0..available-1); `where` says what they are, for errors.

    --ngpus N means GPUs 0..N-1; --gpu_ids lists them. Both may be given when they agree in number."""
    ids = parse_gpu_ids(gpu_ids) if gpu_ids is not None else None
    if ngpus is not None:
        if ngpus < 1:
            raise UserError(f"--ngpus must be at least 1, got {ngpus}")
        if ids is not None and len(ids) != ngpus:
            raise UserError(f"--ngpus {ngpus} and --gpu_ids {gpu_ids} disagree: the list names {len(ids)} GPU(s)")
        if ngpus > available:
            raise UserError(f"--ngpus {ngpus}: {where} has {available} GPU(s)")
    if ids is None:
        ids = tuple(range(ngpus or 1))
    missing = [i for i in ids if i >= available]
    if missing:
        numbered = "id 0" if available == 1 else f"ids 0 to {available - 1}"
        raise UserError(f"--gpu_ids: there is no GPU {missing[0]}; {where} has {available} GPU(s) ({numbered})")
    return GpuSelection(ids)


def pinning_env(gpu: int, vendor: str, environ: dict[str, str] | None = None) -> dict[str, str]:
    """Environment that makes GPU `gpu` (this process's numbering) a child's only GPU.

    When this process already sees a subset (the variable is set), index `gpu` of that list is meant."""
    variable = VISIBLE_DEVICES[vendor]
    environ = os.environ if environ is None else environ
    visible = [item.strip() for item in environ.get(variable, "").split(",") if item.strip()]
    return {variable: visible[gpu] if gpu < len(visible) else str(gpu)}


def available_gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def gpus_for_run(ngpus: int | None, gpu_ids: str | None, interpret: bool) -> GpuSelection:
    """The selection for this run: under --interpret the interpreter is the one device (id 0), or with
    --ngpus N that many interpreter workers."""
    if interpret:
        return select_gpus(ngpus, gpu_ids, ngpus or 1, "the interpreter (--interpret)")
    available = available_gpus()
    if not available:  # tune_gemm.core.device.detect_device then says what to do (no GPU: --interpret)
        return GpuSelection((0,))
    return select_gpus(ngpus, gpu_ids, available, "this machine")
