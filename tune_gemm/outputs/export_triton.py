"""`--export triton`: the winning configs of a results file as a Python list of `triton.Config`, one module per GPU
(`triton_configs_<GPU>.py` beside the results file), ready for `@triton.autotune(configs=CONFIGS, ...)`.

Each distinct config appears once, in file order, with a comment naming the sizes it won. The generated text is
built from validated integers, dtype names and `repr()` of strings, so no text from a YAML file runs as code.
"""

from __future__ import annotations

from pathlib import Path

from tune_gemm.core.config import Config
from tune_gemm.outputs.files import by_device, device_tag, write_text
from tune_gemm.runtime.table import TunedEntry

# Launch options that triton.Config takes as its own arguments; every other config field is a kwarg. num_ctas must be
# one of them: triton.Config's own num_ctas (default 1) overrides a kwarg of that name.
_CORE = ("num_warps", "num_stages", "num_ctas")

_HEADER = '''"""Winning tune_gemm configs for one GPU, as triton.Config for @triton.autotune (tune_gemm --export triton).

The kwargs are the compile-time parameters of tune_gemm's kernel family (tune_gemm.kernels.matmul_family, matmul_tile),
named as in the results file: a kernel autotuned over this list must take each of them as a tl.constexpr.

    from {module} import CONFIGS

    @triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(..., BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                      GROUP_SIZE_M: tl.constexpr, SPLIT_K: tl.constexpr): ...
"""

import triton

DEVICE = {device!r}  # the GPU these configs were tuned on (None: the results file did not say)
SOURCE = {source!r}

CONFIGS = [
'''


def module_name(gpu: str | None) -> str:
    return f"triton_configs_{device_tag(gpu)}"


def triton_config_source(config: Config) -> str:
    """`triton.Config({...}, num_warps=.., num_stages=..)` for one config, `num_ctas=..` too when it is not 1."""
    fields = config.as_dict()
    kwargs = {name: value for name, value in fields.items() if name not in _CORE}
    options = "".join(f", {name}={fields[name]}" for name in _CORE if name in fields)
    return f"triton.Config({kwargs!r}{options})"


def config_of(triton_config) -> Config:
    """The tune_gemm Config a triton.Config of an exported list stands for (the way back, for round trips)."""
    return Config.from_mapping({**triton_config.kwargs, **{name: getattr(triton_config, name) for name in _CORE}})


def render(gpu: str | None, entries: list[TunedEntry], source: Path) -> str:
    winners: dict[Config, list[str]] = {}
    for entry in entries:
        time = f" ({entry.time_us:.1f} us)" if entry.time_us is not None else ""
        winners.setdefault(entry.config, []).append(f"{entry.problem.label}{time}")
    lines = [_HEADER.format(module=module_name(gpu), device=gpu, source=str(source))]
    for config, sizes in winners.items():
        lines.append(f"    # won {'; '.join(sizes)}\n    {triton_config_source(config)},\n")
    lines.append("]\n")
    return "".join(lines)


def write_triton(entries: list[TunedEntry], source: Path, directory: Path) -> list[Path]:
    """One module per GPU in `directory`; returns their paths."""
    return [write_text(Path(directory) / f"{module_name(gpu)}.py", render(gpu, group, source), "triton export")
            for gpu, group in by_device(entries).items()]
