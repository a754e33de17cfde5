"""C = A @ B through the tuned table: reads the call (device, dtypes, layouts, shape), looks the config up, launches it.

Layouts are read from strides at call time. An operand with unit stride along its columns is row-major, one
with unit stride along its rows column-major (row-major wins when both hold, as for a single column); leading
dimensions may be padded. An operand with no unit stride at all (e.g. every other column) is first copied to a
contiguous row-major tensor: the tuned table knows only the two layouts, and loads without a unit stride cannot
be vectorized, so the copy (O(MK) or O(KN) work) costs less than the product would lose.

The output is a new row-major (M, N) tensor of `out_dtype`: by default the inputs' dtype for 16- and 32-bit
floats (it may be wider, e.g. fp16 inputs into fp32, as the tuner allows), fp16 for fp8 inputs (the tuner's
-dtype_c default) and int32 for int8 ones (their only output). fp8 inputs may come with one fp32 scale per tensor,
as torch._scaled_mm takes them: C = scale_a scale_b A @ B. A tuned config that does not fit this GPU (an entry
written for another one) is reported once with a warning and replaced by the default config for that shape.
"""

from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass

import torch
from triton.runtime.errors import OutOfResources

from tune_gemm.core.device import INTERPRETER_PROFILE, DeviceProfile, detect_device
from tune_gemm.core.dtypes import DTYPES, DType, check_combination, check_device_runs
from tune_gemm.core.errors import UserError
from tune_gemm.kernels.bound import INTERPRETED, Launcher, launcher_for
from tune_gemm.runtime.lookup import DEFAULT, Choice, choose, default_config
from tune_gemm.runtime.table import Table, Variant
from tune_gemm.space.rules import least_block_k

RESULTS_ENV = "TUNE_GEMM_RESULTS"  # results files the process-wide table starts with, separated like PATH
_OFFSET_LIMIT = 2**31  # the kernel computes element offsets in 32 bits
DTYPES_OF_TORCH = {dtype.torch_dtype: dtype for dtype in DTYPES.values()}


def _dtype(torch_dtype: torch.dtype, what: str) -> DType:
    if torch_dtype not in DTYPES_OF_TORCH:
        names = ", ".join(str(torch_dtype) for torch_dtype in DTYPES_OF_TORCH)
        raise TypeError(f"tune_gemm matmul: {what} is {torch_dtype}; supported: {names}")
    return DTYPES_OF_TORCH[torch_dtype]


def column_major(t: torch.Tensor) -> bool | None:
    """False: row-major, True: column-major, None: neither (no unit stride; see the module's docstring)."""
    rows, cols = t.shape
    if t.stride(1) == 1 or cols == 1:
        return False
    if t.stride(0) == 1 or rows == 1:
        return True
    return None


def _check_offsets(t: torch.Tensor, name: str) -> None:
    rows, cols = t.shape
    if (rows - 1) * t.stride(0) + (cols - 1) * t.stride(1) >= _OFFSET_LIMIT:
        raise ValueError(f"tune_gemm matmul: {name} {tuple(t.shape)} with strides {t.stride()} spans 2**31 elements "
                         "or more, beyond the kernel's 32-bit offsets")


def default_output(dtype: DType) -> DType:
    """C's dtype when the call names none (see the module's docstring)."""
    return {"fp8": DTYPES["fp16"], "int": DTYPES["int32"]}.get(dtype.kind, dtype)


def check_scales(dtype: DType, scale_a: torch.Tensor | None, scale_b: torch.Tensor | None,
                 device: torch.device) -> None:
    """Scales come with fp8 inputs only, both or neither, each one fp32 value on the operands' device."""
    if scale_a is None and scale_b is None:
        return
    if not dtype.scaled:
        raise TypeError(f"tune_gemm matmul: scales come with fp8 inputs only, not {dtype.name}")
    if scale_a is None or scale_b is None:
        raise ValueError("tune_gemm matmul: pass both scale_a and scale_b, or neither")
    for scale, name in ((scale_a, "scale_a"), (scale_b, "scale_b")):
        if scale.numel() != 1 or scale.dtype != torch.float32 or scale.device != device:
            raise ValueError(f"tune_gemm matmul: {name} must be one float32 value on {device} (a per-tensor "
                             f"scale), not a {scale.dtype} tensor of shape {tuple(scale.shape)} on {scale.device}")


@functools.cache
def _device_profile(device: torch.device) -> DeviceProfile:
    return INTERPRETER_PROFILE if device.type == "cpu" else detect_device(device.index)


def new_output(shape: tuple[int, int], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The result tensor, uninitialized: the kernel writes every element (tests poison it to check that)."""
    return torch.empty(shape, dtype=dtype, device=device)


@functools.cache
def device_name(device: torch.device) -> str:
    """The name a results file records for this device: the GPU's name, or the interpreter's stand-in."""
    if device.type == "cpu":
        return INTERPRETER_PROFILE.name
    return torch.cuda.get_device_name(device)


def _vendor(device: torch.device) -> str:
    if device.type == "cpu":
        return INTERPRETER_PROFILE.vendor
    return "amd" if torch.version.hip is not None else "nvidia"


CALLS_REMEMBERED = 1024  # call facts whose checked outcome a Dispatcher keeps; the oldest is dropped past that


def _tensor_facts(t: torch.Tensor | None) -> tuple | None:
    return None if t is None else (t.shape, t.stride(), t.dtype, t.device)


def call_facts(a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype | None, scale_a: torch.Tensor | None,
               scale_b: torch.Tensor | None) -> tuple:
    """Everything a call's checks, lookup and launch choice read: each tensor's shape, strides, dtype and device."""
    return (_tensor_facts(a), _tensor_facts(b), out_dtype, _tensor_facts(scale_a), _tensor_facts(scale_b))


@dataclass(frozen=True)
class CheckedCall:
    """What the checks and the lookup made of one kind of call (its call_facts): kept, so that the next call of that
    kind runs its launch without them (9-22 us of the host's time per call on the H100, BENCHMARKS.md thirty-sixth
    run)."""

    key: tuple  # (GPU name, Variant, (M, N, K)): the lookup key
    dtype_c: torch.dtype
    launcher: Launcher | None  # None where nothing is launched (an empty C, or K = 0)


class Dispatcher:
    """A table of tuned configs and the choices made from it (cached per device, variant and shape)."""

    def __init__(self, table: Table | None = None):
        self.table = table if table is not None else Table()
        self._choices: dict[tuple, Choice] = {}
        self._calls: dict[tuple, CheckedCall] = {}

    def load(self, *paths: os.PathLike | str) -> None:
        """Add results files (later ones override earlier ones for the same shape); UserError on a bad file."""
        self.table.load(*paths)
        self._forget_choices()

    def clear(self) -> None:
        self.table = Table()
        self._forget_choices()

    def _forget_choices(self) -> None:
        self._choices.clear()
        self._calls.clear()

    def _prepare(self, a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype | None,
                 scale_a: torch.Tensor | None = None, scale_b: torch.Tensor | None = None):
        """Validated operands (copied when they have no unit stride) and the lookup key of the call."""
        if a.dim() != 2 or b.dim() != 2:
            raise ValueError(f"tune_gemm matmul: needs 2-D operands, got {a.dim()}-D and {b.dim()}-D")
        if a.shape[1] != b.shape[0]:
            raise ValueError(f"tune_gemm matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be multiplied")
        if a.device != b.device:
            raise ValueError(f"tune_gemm matmul: operands on {a.device} and {b.device}")
        dtype_a, dtype_b = _dtype(a.dtype, "A's dtype"), _dtype(b.dtype, "B's dtype")
        dtype_c = default_output(dtype_a) if out_dtype is None else _dtype(out_dtype, "out_dtype")
        try:
            check_combination(dtype_a, dtype_b, dtype_c)
        except UserError as error:
            raise TypeError(f"tune_gemm matmul: {error}") from None
        check_scales(dtype_a, scale_a, scale_b, a.device)
        layouts = []
        operands = []
        for t, name in ((a, "A"), (b, "B")):
            layout = column_major(t)
            if layout is None:
                t, layout = t.contiguous(), False
            _check_offsets(t, name)
            operands.append(t)
            layouts.append(layout)
        variant = Variant(dtype_a.name, dtype_c.name, *layouts)
        shape = (a.shape[0], b.shape[1], a.shape[1])
        if shape[0] * shape[1] >= _OFFSET_LIMIT:
            raise ValueError(f"tune_gemm matmul: C would hold {shape[0] * shape[1]} elements, beyond the kernel's "
                             "32-bit offsets")
        return operands, dtype_c, (device_name(a.device), variant, shape)

    def _choice(self, key: tuple, device: torch.device) -> Choice:
        if key not in self._choices:
            gpu, variant, shape = key
            choice = choose(self.table.shapes(gpu, variant), shape, least_block_k(DTYPES[variant.dtype_a].bytes))
            vendor_config = choice.config.for_vendor(_vendor(device))
            self._choices[key] = Choice(vendor_config, choice.rule, choice.tuned_shape)
        return self._choices[key]

    def choose(self, a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype | None = None) -> Choice:
        """The config `matmul(a, b, out_dtype)` runs, the rule that chose it and the tuned shape it came from."""
        _, _, key = self._prepare(a, b, out_dtype)
        return self._choice(key, a.device)

    def matmul(self, a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype | None = None,
               scale_a: torch.Tensor | None = None, scale_b: torch.Tensor | None = None) -> torch.Tensor:
        """(scale_a scale_b) A @ B with the tuned config for this call; see the module's docstring for layouts,
        dtypes and scales."""
        facts = call_facts(a, b, out_dtype, scale_a, scale_b)
        call = self._calls.get(facts)
        if call is None:
            prepared, call = self._check(a, b, out_dtype, scale_a, scale_b)
            if prepared[0] is a and prepared[1] is b:  # an operand copied to a unit stride: checked at each call
                if len(self._calls) >= CALLS_REMEMBERED:
                    del self._calls[next(iter(self._calls))]
                self._calls[facts] = call
            a, b = prepared
        M, N, K = call.key[2]
        c = new_output((M, N), call.dtype_c, a.device)
        if call.launcher is None:
            return c.zero_() if c.numel() else c
        scales = () if scale_a is None else (None, scale_a, scale_b)  # the launchers' (bias, scale_a, scale_b)
        try:
            return call.launcher(a, b, c, *scales)
        except OutOfResources as error:
            choice = self._choice(call.key, a.device)
            if choice.rule == DEFAULT:
                raise
            warnings.warn(f"tune_gemm matmul: tuned config {choice.config} does not fit {call.key[0]} ({error}); "
                          f"using the default config for {M}x{N}x{K} {call.key[1].label}", stacklevel=2)
            least = least_block_k(DTYPES[call.key[1].dtype_a].bytes)
            self._choices[call.key] = Choice(default_config(M, N, K, least), DEFAULT, None)
            self._calls.clear()
            return launcher_for(self._choices[call.key].config)(a, b, c, *scales)

    def _check(self, a: torch.Tensor, b: torch.Tensor, out_dtype: torch.dtype | None,
               scale_a: torch.Tensor | None, scale_b: torch.Tensor | None) -> tuple[list, CheckedCall]:
        """The operands as the launch takes them (copied where they have no unit stride) and the CheckedCall of a
        call; raises what a bad call raises."""
        operands, dtype_c, key = self._prepare(a, b, out_dtype, scale_a, scale_b)
        if a.device.type == "cpu" and not INTERPRETED:
            raise ValueError("tune_gemm matmul: CPU tensors run only under the Triton interpreter "
                             "(set TRITON_INTERPRET=1 before importing triton)")
        dtype_a = DTYPES[key[1].dtype_a]
        if dtype_a.scaled:  # fp8 needs its matrix instructions; the other types run wherever Triton does
            try:
                check_device_runs(dtype_a, _device_profile(a.device), "tune_gemm matmul")
            except UserError as error:
                raise TypeError(str(error)) from None
        M, N, K = key[2]
        launched = M * N and K
        return operands, CheckedCall(key, dtype_c.torch_dtype,
                                     launcher_for(self._choice(key, a.device).config) if launched else None)


_process_dispatcher: Dispatcher | None = None


def process_dispatcher() -> Dispatcher:
    """The table `tune_gemm.matmul` uses: starts from the files named in TUNE_GEMM_RESULTS (if any)."""
    global _process_dispatcher
    if _process_dispatcher is None:
        dispatcher = Dispatcher()
        dispatcher.load(*(path for path in os.environ.get(RESULTS_ENV, "").split(os.pathsep) if path))
        _process_dispatcher = dispatcher
    return _process_dispatcher
