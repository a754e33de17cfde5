"""The `Config` value type: one point of the tuning space, and its printable name.

`str(config)` is the suffix of the generated kernel's name (`matmul_kernel_<str>`); `Config.parse`
reads that name back (with or without the `matmul_kernel_` prefix or a ROCm-style `M.._N.._K.._`
size prefix) and gives the same value.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields, replace

KERNEL_PREFIX = "matmul_kernel_"

# Name token for each field, in printing order. Tokens follow the ROCm tuning script's configStr.
_TOKENS: dict[str, str] = {
    "BLOCK_SIZE_M": "BM",
    "BLOCK_SIZE_N": "BN",
    "BLOCK_SIZE_K": "BK",
    "GROUP_SIZE_M": "GM",
    "SPLIT_K": "SK",
    "num_warps": "nW",
    "num_stages": "nS",
    # AMD-only knobs, printed only when set (as the ROCm script names them)
    "waves_per_eu": "EU",
    "matrix_instr_nonkdim": "mfma",
    "kpack": "kP",
}
AMD_KNOBS = ("waves_per_eu", "matrix_instr_nonkdim", "kpack")
_FIELD_OF_TOKEN = {token: field for field, token in _TOKENS.items()}
_TOKEN_RE = re.compile(r"^([A-Za-z]+?)(\d+)$")
_SIZE_TOKENS = ("M", "N", "K")


def minimum_value(field: str) -> int:
    """Smallest legal value of a config field: waves_per_eu 0 means the compiler's choice."""
    return 0 if field == "waves_per_eu" else 1


class ConfigNameError(ValueError):
    """A string that is not a config name."""


@dataclass(frozen=True, order=True)
class Config:
    """Tile shape, launch ordering, K split and launch options of one GEMM kernel."""

    BLOCK_SIZE_M: int
    BLOCK_SIZE_N: int
    BLOCK_SIZE_K: int
    GROUP_SIZE_M: int = 1
    SPLIT_K: int = 1
    num_warps: int = 4
    num_stages: int = 2
    waves_per_eu: int | None = None  # AMD: occupancy hint (0: compiler's choice)
    matrix_instr_nonkdim: int | None = None  # AMD: MFMA instruction size, 16 or 32
    kpack: int | None = None  # AMD: elements packed along K per MFMA operand, 1 or 2

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in AMD_KNOBS and value is None:
                continue
            least = minimum_value(f.name)
            # bool is an int subclass; True is no block size
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"{f.name} must be an integer >= {least}, got {value!r}")

    def __str__(self) -> str:
        return "_".join(f"{token}{value}" for field, token in _TOKENS.items()
                        if (value := getattr(self, field)) is not None)

    @property
    def amd_knobs(self) -> dict[str, int]:
        """The AMD-only launch options that are set."""
        return {name: getattr(self, name) for name in AMD_KNOBS if getattr(self, name) is not None}

    def without_amd_knobs(self) -> Config:
        return replace(self, **{name: None for name in AMD_KNOBS})

    def as_dict(self) -> dict[str, int]:
        """Field -> value, AMD knobs only when set."""
        return {name: value for name, value in asdict(self).items() if value is not None}

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_mapping(cls, mapping: dict) -> Config:
        """Build from a results-file entry; keys that are not config fields are ignored."""
        return cls(**{name: mapping[name] for name in cls.field_names() if name in mapping})

    @classmethod
    def parse(cls, name: str) -> Config:
        """Read a config back from its name, a kernel name, or a ROCm-style name with a size prefix."""
        text = name.strip()
        if text.startswith(KERNEL_PREFIX):
            text = text[len(KERNEL_PREFIX):]
        values: dict[str, int] = {}
        for token in text.split("_"):
            match = _TOKEN_RE.match(token)
            if not match:
                raise ConfigNameError(f"not a config name: {name!r} (bad token {token!r})")
            key, number = match.group(1), int(match.group(2))
            if key in _SIZE_TOKENS:
                continue
            if key not in _FIELD_OF_TOKEN:
                raise ConfigNameError(f"not a config name: {name!r} (unknown token {token!r})")
            values[_FIELD_OF_TOKEN[key]] = number
        missing = [_TOKENS[f] for f in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K") if f not in values]
        if missing:
            raise ConfigNameError(f"not a config name: {name!r} (missing {', '.join(missing)})")
        try:
            return cls(**values)
        except ValueError as error:
            raise ConfigNameError(f"not a config name: {name!r} ({error})") from None
