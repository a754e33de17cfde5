"""Test-only fault injection: make chosen configs fail on purpose, to prove the tuner survives them.

Set TUNE_GEMM_INJECT_FAULTS="<config>=<fault>,<config>=<fault>" (a config name as printed). Faults:
  raise    the launch raises an exception
  crash    the process aborts (SIGABRT), as the ROCm runtime does on HSA errors
  hang     the launch never returns
  memory   on a GPU, a real kernel writes to an illegal address (a sticky CUDA error that ruins the
           process's context); on the CPU, the process dies of SIGSEGV
  compile  compiling the config fails
Nothing happens unless the variable is set; users never set it.
"""

from __future__ import annotations

import os
import signal
import time

ENV_VAR = "TUNE_GEMM_INJECT_FAULTS"
FAULTS = ("raise", "crash", "hang", "memory", "compile")


class InjectedFault(RuntimeError):
    """The exception of the `raise` and `compile` faults."""


def injected_faults() -> dict[str, str]:
    """config name -> fault, from the environment."""
    faults = {}
    for item in filter(None, os.environ.get(ENV_VAR, "").split(",")):
        name, _, fault = item.partition("=")
        if fault not in FAULTS:
            raise ValueError(f"{ENV_VAR}: unknown fault {fault!r} for {name!r}; use one of {', '.join(FAULTS)}")
        faults[name.strip()] = fault
    return faults


def _write_far_away() -> None:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def write_at_offset(pointer, offset):
        tl.store(pointer + offset, 1.0)

    write_at_offset[(1,)](torch.empty(1, device="cuda"), 2**40)  # 4 TiB past a 4-byte buffer


def trigger(fault: str, on_gpu: bool) -> None:
    """Make `fault` happen now (in the launch or compile of the config it was injected into)."""
    if fault in ("raise", "compile"):
        raise InjectedFault(f"injected fault: {fault}")
    if fault == "crash":
        os.kill(os.getpid(), signal.SIGABRT)
    elif fault == "hang":
        while True:
            time.sleep(60)
    elif fault == "memory":
        if not on_gpu:
            os.kill(os.getpid(), signal.SIGSEGV)
        _write_far_away()
