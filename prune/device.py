"""Facts about the GPU that the pruning rules depend on, read from the device at run time.

A fixed profile stands in for a GPU under `--interpret`, so that pruning on the CPU behaves as it
would on the common target (H100-like numbers) and tests do not depend on the machine.
"""

from __future__ import annotations

from dataclasses import dataclass

from tuner.errors import UserError


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    vendor: str  # "nvidia", "amd" or "interpreter"
    max_shared_bytes: int  # shared memory (LDS) one program may use
    sm_count: int  # streaming multiprocessors / compute units
    warp_size: int
    l2_bytes: int
    memory_bytes: int
    max_registers_per_thread: int
    # Smallest output tile of one matrix instruction, and its depth in bytes of one operand row:
    # mma.sync m16n8k16 on NVIDIA (k = 32 bytes), mfma 16x16 on AMD.
    instr_m: int
    instr_n: int
    instr_k_bytes: int

    def instr_k(self, element_bytes: int) -> int:
        return max(1, self.instr_k_bytes // element_bytes)


INTERPRETER_PROFILE = DeviceProfile(
    name="CPU (Triton interpreter)",
    vendor="interpreter",
    max_shared_bytes=232_448,
    sm_count=132,
    warp_size=32,
    l2_bytes=50 * 1024 * 1024,
    memory_bytes=80 * 1024**3,
    max_registers_per_thread=255,
    instr_m=16,
    instr_n=8,
    instr_k_bytes=32,
)


def detect_device(device_index: int = 0) -> DeviceProfile:
    """Profile of the visible GPU; UserError when there is none."""
    import torch

    if not torch.cuda.is_available():
        raise UserError("no GPU found: run on a machine with a CUDA or ROCm GPU, or pass --interpret to run on the CPU")
    from triton.runtime import driver

    props = torch.cuda.get_device_properties(device_index)
    triton_props = driver.active.utils.get_device_properties(device_index)
    is_amd = torch.version.hip is not None
    return DeviceProfile(
        name=props.name,
        vendor="amd" if is_amd else "nvidia",
        max_shared_bytes=int(triton_props["max_shared_mem"]),
        sm_count=int(triton_props["multiprocessor_count"]),
        warp_size=int(triton_props.get("warpSize", 64 if is_amd else 32)),
        l2_bytes=int(getattr(props, "L2_cache_size", 0)) or 32 * 1024 * 1024,
        memory_bytes=int(props.total_memory),
        max_registers_per_thread=512 if is_amd else 255,
        instr_m=16,
        instr_n=16 if is_amd else 8,
        instr_k_bytes=32,
    )
