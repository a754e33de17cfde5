"""The `Config` value type: one point of the tuning space, and its printable name.

`str(config)` is the suffix of the generated kernel's name (`matmul_kernel_<str>`); `Config.parse`
reads that name back (with or without the `matmul_kernel_` prefix or a ROCm-style `M.._N.._K.._`
size prefix) and gives the same value. `Config.for_vendor` is what a recorded config runs as on a GPU.
"""

from __future__ import annotations

import re
from dataclasses import MISSING, dataclass, fields, replace
from enum import Enum, IntEnum

from tune_gemm.core.geometry import block_parts, is_tile_side  # noqa: F401  (read from here too)

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
    "num_ctas": "nC",  # printed only when not 1, so that names from before the knob existed stay the same
    # AMD-only knobs, printed only when set (as the ROCm script names them)
    "waves_per_eu": "EU",
    "matrix_instr_nonkdim": "mfma",
    "kpack": "kP",
    # Hopper kernel family knobs (NVIDIA, compute capability 9+), printed only when set
    "PERSISTENT_TMA": "TMA",
    "WARP_SPECIALIZE": "WS",
    "EPILOGUE_SUBTILE": "ES",
    "STREAM_K": "STK",
    "SWAP_AB": "SWAP",
    "ALIGN_ROWS": "AR",
    "NARROW_EDGE": "NE",
    "WARP_GROUPS": "WG",
    # Plain-family knobs (any GPU), printed only when set
    "STATIC_SHAPE": "SS",
    "FUSED_REDUCE": "FR",
    # AMD scheduling hint: a word, not a number, so always printed last (it may hold '_')
    "schedule_hint": "sched",
}
AMD_KNOBS = ("waves_per_eu", "matrix_instr_nonkdim", "kpack", "schedule_hint")
# 0 means off; a config with all of them off is the plain (pointer-load) kernel.
HOPPER_KNOBS = ("PERSISTENT_TMA", "WARP_SPECIALIZE", "EPILOGUE_SUBTILE", "STREAM_K", "SWAP_AB", "ALIGN_ROWS",
                "NARROW_EDGE", "WARP_GROUPS")
# The Hopper knobs the TMA family's kernel binds as compile-time constants; SWAP_AB, ALIGN_ROWS and NARROW_EDGE act on
# the host side of a launch (NARROW_EDGE sets a constant there, whose value depends on N).
KERNEL_KNOBS = ("WARP_SPECIALIZE", "EPILOGUE_SUBTILE", "STREAM_K")
# Every knob that is 0 (off) or 1 (on), but the modes (MODES: NARROW_EDGE, FUSED_REDUCE and STREAM_K), whose values
# name more than on and off.
SWITCHES = (*HOPPER_KNOBS, "STATIC_SHAPE", "FUSED_REDUCE")


class Mode(IntEnum):
    """A knob's value that names more than on and off. An int (YAML, names and comparisons see 0, 1, 2, ...) that
    prints as its number on every Python."""

    __str__ = int.__repr__


class StreamK(Mode):
    """STREAM_K: how a persistent launch fills the SMs after its last whole wave of tiles."""

    OFF = 0
    # the tiles of a partly idle last wave shared out by K iterations (tune_gemm.kernels.tma_family.stream_k_part)
    STREAM_K = 1
    # the tiles past the last whole wave in K slices that add into one running sum per tile (atomic adds,
    # tune_gemm.core.geometry.tail_slices)
    SPLIT_TAIL = 2


class NarrowEdge(Mode):
    """NARROW_EDGE: how the TMA family computes the columns past the last whole BLOCK_SIZE_N tile."""

    OFF = 0  # in whole tiles, past N
    APART = 1  # in narrower edge tiles after the whole tiles (tune_gemm.core.geometry.edge_columns, edge_part)
    FUSED = 2  # each edge tile in the K loop of its row's last whole tile (tune_gemm.kernels.tma_family.device.edge_part)
    # apart, each edge tile's K loop cut into slices that programs claim as units of work and that add into one
    # running sum (atomic adds, tune_gemm.core.geometry.edge_slices)
    SPLIT = 3


class FusedReduce(Mode):
    """FUSED_REDUCE: how a split K's partial products are summed."""

    OFF = 0  # by a reduction kernel after the GEMM (not in the TMA family)
    SLOTS = 1  # a slot per K slice, the last slice to finish adding the others' in slice order
    # each slice adds its partial into the tile's one running sum (atomic adds, in no set order;
    # tune_gemm.kernels.matmul_family.ATOMIC_SUM)
    ATOMIC = 2


# Each mode's field and its values
MODES: dict[str, type[Mode]] = {"STREAM_K": StreamK, "NARROW_EDGE": NarrowEdge, "FUSED_REDUCE": FusedReduce}


def field_value(name: str, value: object) -> object:
    """A config field's value as the field holds it: a mode's (MODES) as its member, any other as it is."""
    return MODES[name](value) if name in MODES else value


# Four modes' values by the names the generator, the kernels and the search compare with
FUSED_EDGE = NarrowEdge.FUSED
SPLIT_EDGE = NarrowEdge.SPLIT
SPLIT_TAIL = StreamK.SPLIT_TAIL
ATOMIC_REDUCE = FusedReduce.ATOMIC


class Family(Enum):
    """The kernel family a config runs in."""

    PLAIN = "plain"  # the pointer-load kernel (tune_gemm.kernels.matmul_family), on any GPU
    PERSISTENT_TMA = "persistent TMA"  # the persistent kernel loading through TMA (tune_gemm.kernels.tma_family)
    WARP_GROUP = "warp-group"  # the Gluon kernel of consumer warp groups (tune_gemm.kernels.warp_group_family)


# Values of num_ctas, the CTAs per thread-block cluster: Hopper launches clusters of up to 8 CTAs portably.
CLUSTER_SIZES = (1, 2, 4, 8)
# The value of each field that names and results entries leave out: unset AMD knobs (None) are left out too.
_UNPRINTED = {"num_ctas": 1, **{knob: 0 for knob in SWITCHES}}
_FIELD_OF_TOKEN = {token: field for field, token in _TOKENS.items()}
_TOKEN_RE = re.compile(r"^([A-Za-z]+?)(\d+)$")
_HINT_TOKEN_RE = re.compile(r"(?:^|_)sched([A-Z0-9_]*)$")  # as printed: upper case
_SIZE_TOKENS = ("M", "N", "K")

# AMD's num_stages 0 chose its stream pipeliner (Triton <= 3.0), which double-buffers the K loop: two
# stages. Other GPUs run such a recorded config with this many stages.
NUM_STAGES_FOR_AMD_ZERO = 2

# Scheduling hints of the ROCm script's spaces and of Triton's AMD backend. A name prints a hint the
# ROCm script's way (upper case, '-' as '_'); this list reads such a token back to its exact spelling.
KNOWN_SCHEDULE_HINTS = ("none", "default", "iglp0", "iglp1", "ck_v3", "llvm-iglp-0", "llvm-iglp-1",
                        "local-prefetch", "attention", "memory-bound-attention")
_HINT_RE = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


def minimum_value(field: str) -> int:
    """Smallest legal value of an integer config field: waves_per_eu 0 means the compiler's choice, switches
    (Hopper knobs, STATIC_SHAPE) 0 off, and num_stages 0 is AMD's stream pipeliner in ROCm files (see
    NUM_STAGES_FOR_AMD_ZERO)."""
    return 0 if field in ("waves_per_eu", "num_stages") or field in SWITCHES else 1


def largest_switch_value(switch: str) -> int:
    """Largest legal value of a switch: 1 (on), or a mode's largest (NarrowEdge.SPLIT for NARROW_EDGE,
    FusedReduce.ATOMIC for FUSED_REDUCE, StreamK.SPLIT_TAIL for STREAM_K)."""
    return max(MODES[switch]) if switch in MODES else 1


def switch_values(field: str) -> str:
    """The legal values of a switch, for error messages."""
    if field == "NARROW_EDGE":
        return (f"0 (off), {NarrowEdge.APART} (narrow edge tiles), {NarrowEdge.FUSED} (fused with the last whole tile) "
                f"or {NarrowEdge.SPLIT} (apart, their K loops in slices)")
    if field == "FUSED_REDUCE":
        return (f"0 (a reduction kernel), {FusedReduce.SLOTS} (a slot per K slice) or {FusedReduce.ATOMIC} (atomic "
                "adds into one sum)")
    if field == "STREAM_K":
        return (f"0 (off), {StreamK.STREAM_K} (stream-K) or {StreamK.SPLIT_TAIL} (the tiles past the last whole wave "
                "in K slices)")
    return "0 (off) or 1 (on)"


def kernel_switches(config: Config) -> dict[str, bool]:
    """The TMA family kernel's compile-time switches (KERNEL_KNOBS) of a config, each on where its knob is 1: STREAM_K
    is stream-K's (StreamK.STREAM_K), a split tail being the launch's (tune_gemm.kernels.tma_family.tail_split)."""
    return {knob: getattr(config, knob) == 1 for knob in KERNEL_KNOBS}


def tma_variant_knobs(config: Config) -> dict[str, bool]:
    """The TMA family's host-side knobs of a config, as tune_gemm.kernels.tma_family.TmaVariant names them: stream_k
    is stream-K's (StreamK.STREAM_K), split_tail the split tail's; fused_edge and split_edge say how NARROW_EDGE
    computes its edge tiles."""
    return {"epilogue_subtile": bool(config.EPILOGUE_SUBTILE), "stream_k": config.STREAM_K == StreamK.STREAM_K,
            "swap_ab": bool(config.SWAP_AB), "align_rows": bool(config.ALIGN_ROWS),
            "narrow_edge": bool(config.NARROW_EDGE), "fused_edge": config.NARROW_EDGE == NarrowEdge.FUSED,
            "split_edge": config.NARROW_EDGE == NarrowEdge.SPLIT, "split_tail": config.STREAM_K == StreamK.SPLIT_TAIL}


def _hint_token(hint: str) -> str:
    return hint.upper().replace("-", "_")


def _hint_from_token(token: str) -> str:
    known = {_hint_token(hint): hint for hint in KNOWN_SCHEDULE_HINTS}
    return known.get(token.upper(), token.lower())


def _check_hint(hint: object) -> None:
    """A hint must read back from its name token unchanged; it also becomes a string in generated code."""
    if not isinstance(hint, str) or not _HINT_RE.match(hint) or _hint_from_token(_hint_token(hint)) != hint:
        raise ValueError(f"schedule_hint must be lower-case letters, digits, '_' or '-' (a '-' only in "
                         f"{', '.join(h for h in KNOWN_SCHEDULE_HINTS if '-' in h)}), got {hint!r}")


def _printed(field: str, value: int | str | None) -> bool:
    """Whether a field appears in names and results entries: unset AMD knobs, switches that are off and
    num_ctas 1 do not."""
    return value is not None and _UNPRINTED.get(field) != value


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
    PERSISTENT_TMA: int = 0  # 1: persistent grid (one program per SM) loading tiles through TMA descriptors
    WARP_SPECIALIZE: int = 0  # 1: producer/consumer warps in the persistent loop (needs PERSISTENT_TMA)
    EPILOGUE_SUBTILE: int = 0  # 1: store the output tile in two halves, halving its shared memory
    # STREAM_K (1): the tiles of a partly idle last wave are shared out by K iterations (needs PERSISTENT_TMA);
    # SPLIT_TAIL (2): the tiles past the last whole wave run in K slices that add into one running sum per tile (atomic
    # adds), so that a few tiles after whole waves keep every SM busy (tune_gemm.core.geometry.tail_slices).
    STREAM_K: StreamK = StreamK.OFF
    schedule_hint: str | None = None  # AMD: instruction scheduling variant of the K loop, e.g. "none"
    # NVIDIA compute capability 9+: each program runs as a cluster of this many CTAs that split its tile (Triton's
    # num_ctas launch option). Last, since configs are built positionally by the fields above.
    num_ctas: int = 1
    # 1: the plain family's kernel takes M, N, K and the strides as compile-time constants, one binary per shape
    # (tune_gemm.kernels.matmul_family.matmul_tile_static_shape): less index arithmetic on the path of a launch-bound kernel.
    STATIC_SHAPE: int = 0
    # 1: the TMA family computes C^T = B^T A^T, so that BLOCK_SIZE_M runs along N and BLOCK_SIZE_N along M (the launch
    # passes transposed views; tune_gemm.kernels.tma_family.launch_tma).
    SWAP_AB: int = 0
    # 1: the TMA family copies an A or B whose rows start 16-byte aligned (the copy engine reads them as they are) but
    # off a 128-byte line into rows padded to whole lines, as it pads rows that are not 16-byte aligned
    # (tune_gemm.kernels.tma_family.tma_views).
    ALIGN_ROWS: int = 0
    # APART (1): the TMA family computes the columns past the last whole BLOCK_SIZE_N tile in narrower tiles, as wide as
    # those columns rounded up to a power of two (or, where that is a whole tile, half a tile and tiles as wide as the
    # rest), after the whole tiles (tune_gemm.core.geometry.edge_columns, edge_part); FUSED (2): each beside a
    # whole tile of its rows, in that tile's K loop (tune_gemm.kernels.tma_family.device.edge_part); SPLIT (3): apart, each
    # edge tile's K loop cut into slices that sum into one running sum (atomic adds), so that a few edge tiles after
    # whole waves keep every SM busy (tune_gemm.core.geometry.edge_slices).
    NARROW_EDGE: NarrowEdge = NarrowEdge.OFF
    # SLOTS (1, with SPLIT_K > 1): a tile's K slices sum their partial products themselves, the last to finish adding
    # the others' into C in slice order (tune_gemm.kernels.matmul_family.finish_split_tile), instead of a reduction
    # kernel after the GEMM: one launch instead of two. The TMA family splits K only so, or as ATOMIC
    # (tune_gemm.kernels.tma_family.split_k_part). ATOMIC (2): each slice adds its partial into the tile's one running
    # sum (atomic adds), and the last to finish reads that one sum: less for it to read than SPLIT_K slots, but the adds
    # come in no set order, so floating-point sums may differ in their last bits from launch to launch.
    FUSED_REDUCE: FusedReduce = FusedReduce.OFF
    # 1 (with PERSISTENT_TMA): the tile is computed by the warp-group kernel (tune_gemm.kernels.warp_group_family, written in Gluon,
    # Hopper compute capability 9.0 only): one loader warp and one consumer warp group per 64 rows of the tile, each
    # multiplying its rows by both column parts of a compound BLOCK_SIZE_N (192 = 128 + 64, 160 = 128 + 32,
    # 96 = 64 + 32) with full-width matrix instructions. num_warps counts the consumer warps: 4 per 64 rows (8 for
    # BLOCK_SIZE_M 128, 12 for 192, 16 for 256).
    WARP_GROUPS: int = 0

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            check_field(name, value)
        for name, mode in MODES.items():  # each mode's value as its member: StreamK.SPLIT_TAIL for 2
            object.__setattr__(self, name, mode(getattr(self, name)))
        if self.PERSISTENT_TMA and self.SPLIT_K > 1 and not self.FUSED_REDUCE:
            raise ValueError("PERSISTENT_TMA with SPLIT_K > 1 needs FUSED_REDUCE: 1 or 2 (the TMA family has no "
                             "reduction kernel; its K slices sum their partials themselves)")
        if self.WARP_GROUPS and not self.PERSISTENT_TMA:
            raise ValueError("WARP_GROUPS needs PERSISTENT_TMA: 1 (the warp-group kernel is persistent and loads "
                             "through TMA)")

    def __str__(self) -> str:
        return "_".join(f"{token}{_hint_token(value) if field == 'schedule_hint' else value}"
                        for field, token in _TOKENS.items() if _printed(field, value := getattr(self, field)))

    @property
    def family(self) -> Family:
        """The kernel family this config runs in: the warp-group kernel (WARP_GROUPS), the persistent TMA family
        (PERSISTENT_TMA) or the plain pointer-load kernel."""
        if self.WARP_GROUPS:
            return Family.WARP_GROUP
        return Family.PERSISTENT_TMA if self.PERSISTENT_TMA else Family.PLAIN

    @property
    def amd_knobs(self) -> dict[str, int | str]:
        """The AMD-only launch options that are set."""
        return {name: getattr(self, name) for name in AMD_KNOBS if getattr(self, name) is not None}

    @property
    def launch_options(self) -> dict[str, int | str]:
        """Triton's launch options besides num_warps and num_stages: the AMD knobs that are set, num_ctas if not 1."""
        return {**self.amd_knobs, **({"num_ctas": self.num_ctas} if self.num_ctas != 1 else {})}

    @property
    def reduction_kernel(self) -> bool:
        """Whether a reduction kernel after the GEMM sums the split-K partials (a split without FUSED_REDUCE)."""
        return self.SPLIT_K > 1 and not self.FUSED_REDUCE

    @classmethod
    def from_checked(cls, fields: dict) -> Config:
        """A config of these fields (the rest their defaults), each value already passed check_field and a mode's its
        member (field_value), the family knobs off: built without checking them again. A space builds half a million
        tile configs per size so (its values checked once each), where checking each config took most of a prune
        (4096^3 fp16: 8 of 15 s under cProfile)."""
        config = object.__new__(cls)
        config.__dict__.update(_DEFAULT_FIELDS, **fields)
        return config

    def with_family(self, family: dict[str, int]) -> Config:
        """This config with the kernel-family knobs in `family` set, as RangeSpace.families() gives them (their values
        checked where the space was read, a mode's its member), built without checking every field again: the pruner
        builds up to 129 such variants of each tile config, and checking each one anew took most of a prune
        (128x256x65536 fp16: 14 of 20 s under cProfile)."""
        variant = object.__new__(Config)
        variant.__dict__.update(self.__dict__, **family)
        return variant

    def without_amd_knobs(self) -> Config:
        return replace(self, **{name: None for name in AMD_KNOBS})

    def for_vendor(self, vendor: str) -> Config:
        """What this (recorded) config runs as on `vendor`'s GPU: unchanged on AMD; elsewhere without the
        AMD knobs, and num_stages 0 as NUM_STAGES_FOR_AMD_ZERO."""
        if vendor == "amd":
            return self
        return replace(self.without_amd_knobs(), num_stages=self.num_stages or NUM_STAGES_FOR_AMD_ZERO)

    @property
    def hopper_knobs(self) -> dict[str, int]:
        """The Hopper kernel-family knobs that are on."""
        return {name: getattr(self, name) for name in HOPPER_KNOBS if getattr(self, name)}

    def as_dict(self) -> dict[str, int | str]:
        """Field -> value; AMD knobs only when set; switches only when on and num_ctas only when not 1 (the ROCm
        script knows none of them). Plain ints and strings, a mode's value too (yaml.safe_dump writes no enum)."""
        return {name: int(value) if name in MODES else value
                for name in _FIELD_NAMES if _printed(name, value := getattr(self, name))}

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
        return cls.parse_sized(name)[0]

    @classmethod
    def parse_sized(cls, name: str) -> tuple[Config, tuple[int, int, int] | None]:
        """`parse`, and the (M, N, K) of a ROCm-style `M.._N.._K.._` prefix when the name has all three."""
        text = name.strip().removeprefix(KERNEL_PREFIX)
        values: dict[str, int | str] = {}
        hint = _HINT_TOKEN_RE.search(text)
        if hint:
            if not hint.group(1):
                raise ConfigNameError(f"not a config name: {name!r} (sched without a hint)")
            values["schedule_hint"] = _hint_from_token(hint.group(1))
            text = text[:hint.start()]
        size: dict[str, int] = {}
        for token in text.split("_"):
            match = _TOKEN_RE.match(token)
            if not match:
                raise ConfigNameError(f"not a config name: {name!r} (bad token {token!r})")
            key, number = match.group(1), int(match.group(2))
            if key in _SIZE_TOKENS:
                size[key] = number
                continue
            if key not in _FIELD_OF_TOKEN:
                raise ConfigNameError(f"not a config name: {name!r} (unknown token {token!r})")
            values[_FIELD_OF_TOKEN[key]] = number
        missing = [_TOKENS[f] for f in ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K") if f not in values]
        if missing:
            raise ConfigNameError(f"not a config name: {name!r} (missing {', '.join(missing)})")
        try:
            config = cls(**values)
        except ValueError as error:
            raise ConfigNameError(f"not a config name: {name!r} ({error})") from None
        return config, (tuple(size[key] for key in _SIZE_TOKENS) if len(size) == 3 else None)


def check_field(name: str, value: object) -> None:
    """Raise ValueError unless `value` is legal for the config field `name` on its own."""
    if value is None and name in AMD_KNOBS:
        return
    if name == "schedule_hint":
        _check_hint(value)
        return
    least = _LEAST_VALUES[name]
    # bool is an int subclass; True is no block size. A mode takes its own members too.
    if (type(value) is not int and type(value) is not MODES.get(name)) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    if value > 1 and value > _LARGEST_SWITCH_VALUES.get(name, value):
        raise ValueError(f"{name} must be {switch_values(name)}, got {value!r}")
    if name == "num_ctas" and value not in CLUSTER_SIZES:
        raise ValueError(f"num_ctas must be one of {CLUSTER_SIZES}, got {value!r}")


_LEAST_VALUES = {field.name: minimum_value(field.name) for field in fields(Config)}
_LARGEST_SWITCH_VALUES = {switch: largest_switch_value(switch) for switch in SWITCHES}
_FIELD_NAMES = tuple(field.name for field in fields(Config))
_DEFAULT_FIELDS = {field.name: field.default for field in fields(Config) if field.default is not MISSING}
