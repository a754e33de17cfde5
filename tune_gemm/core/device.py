"""Facts about the GPU that the pruning rules depend on, read from the device at run time.

A fixed profile stands in for a GPU under `--interpret`, so that pruning on the CPU behaves as it
would on the common target (H100-like numbers) and tests do not depend on the machine.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from tune_gemm.core.errors import UserError


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
    # Tensor-memory-accelerator loads (Hopper, compute capability 9+): the persistent TMA kernel family
    tma: bool = False
    # Thread-block clusters (NVIDIA compute capability 9+): a program run as num_ctas > 1 CTAs (Config.num_ctas)
    clusters: bool = False
    # Matrix instructions on OCP fp8 (e4m3fn/e5m2) operands: NVIDIA compute capability 8.9+ (Ada, Hopper and
    # newer), AMD gfx950+ (MI300's gfx942 has only the fnuz variants, which the tuner does not map).
    fp8: bool = False
    # The warp-group kernel (tune_gemm.kernels.warp_group_family): Gluon with Hopper's warpgroup MMA, NVIDIA compute capability 9.0
    # only (newer GPUs have no wgmma); the interpreter does not run Gluon.
    warp_groups: bool = False

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
    tma=True,  # the interpreter runs TMA descriptor loads, so the Hopper family is checked on the CPU too
    clusters=True,  # the interpreter ignores num_ctas: configs that set it are still checked on the CPU
    fp8=True,  # the interpreter's tl.dot takes fp8 operands (and the family upcasts them there)
)


def _has_tensor_descriptors() -> bool:
    """Whether this Triton has host-side tensor descriptors (3.4+), on which the TMA family is built."""
    return importlib.util.find_spec("triton.tools.tensor_descriptor") is not None


def _has_gluon_hopper() -> bool:
    """Whether this Triton has Gluon's Hopper module (warpgroup MMA, TMA, mbarriers), on which the warp-group kernel
    is written."""
    try:
        return importlib.util.find_spec("triton.experimental.gluon.language.nvidia.hopper") is not None
    except ModuleNotFoundError:
        return False


def _has_fp8(is_amd: bool, capability: tuple[int, int], arch: str) -> bool:
    if is_amd:
        return arch.startswith(("gfx950", "gfx12"))
    return capability >= (8, 9)


def detect_device(device_index: int = 0) -> DeviceProfile:
    """Profile of the visible GPU; UserError when there is none."""
    import torch

    if not torch.cuda.is_available():
        raise UserError("no GPU found: run on a machine with a CUDA or ROCm GPU, or pass --interpret to run on the CPU")
    from triton.runtime import driver

    props = torch.cuda.get_device_properties(device_index)
    triton_props = driver.active.utils.get_device_properties(device_index)
    is_amd = torch.version.hip is not None
    capability = torch.cuda.get_device_capability(device_index)
    hopper = not is_amd and capability >= (9, 0)  # NVIDIA compute capability 9+: TMA and thread-block clusters
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
        tma=hopper and _has_tensor_descriptors(),
        clusters=hopper,
        fp8=_has_fp8(is_amd, capability, getattr(props, "gcnArchName", "")),
        warp_groups=not is_amd and capability == (9, 0) and _has_gluon_hopper(),
    )
