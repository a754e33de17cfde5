"""Names of the functions a generated kernel file holds for each config, and the way back to the config."""

from __future__ import annotations

from tune_gemm.core.config import KERNEL_PREFIX, Config, ConfigNameError

REDUCE_SUFFIX = "_reduce"


def kernel_name(config: Config) -> str:
    return f"{KERNEL_PREFIX}{config}"


def reduce_kernel_name(config: Config) -> str:
    """The split-K reduction kernel of a config: its time counts towards the config's."""
    return f"{KERNEL_PREFIX}{config}{REDUCE_SUFFIX}"


def launcher_name(config: Config) -> str:
    return f"matmul_{config}"


def compiler_name(config: Config) -> str:
    return f"try_config_{config}"


def config_of_kernel(name: str) -> Config | None:
    """The config whose kernel (or reduction kernel) is called `name`; None for any other kernel."""
    if not name.startswith(KERNEL_PREFIX):
        return None
    if name.endswith(REDUCE_SUFFIX):
        name = name[: -len(REDUCE_SUFFIX)]
    try:
        return Config.parse(name)
    except ConfigNameError:
        return None
