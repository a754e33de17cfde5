"""The ROCm script's run knobs that need more than argparse: `--o`, `--no_warmup`, `--rotating_tensor`,
`--init_type`, `--icache_flush` (with our `--flush`). Each function checks one knob's values against the rest of the
command line and returns what the run uses.
"""

from __future__ import annotations

from pathlib import Path

from tune_gemm.core.errors import UserError
from tune_gemm.core.problem import GemmProblem

DEFAULT_RESULTS_FILE = Path("output_tuning.yaml")
DEFAULT_WARMUP = 5
INIT_TYPES = ("randn", "hpl", "trig_float", "zeros")  # as tune_gemm/kernels/matmul_family.py init_values spells them
# --flush: which timed launches run right after an L2 flush (tune_gemm.measure.cache_flush). "final": those whose times pick
# the winner (the last round of a search, a --benchmark run), as do_bench, Triton's autotuner, Inductor's max-autotune
# and benchmarks/bench_gemm.py time; "all": every launch of every round (the ROCm script's --icache_flush); "none";
# "auto" (default): "all" for a size that streams its operands from memory (rounds_flushed), "final" for the others.
FLUSHES = ("auto", "final", "all", "none")
DEFAULT_FLUSH = "auto"
# Below this many flops per byte of A, B and C a GEMM is bound by memory bandwidth on every GPU we target (an H100's
# fp16 tensor cores do about 295 per byte of HBM, an A100's 200, an MI250X's 120). Its time is what its loads leave in
# L2 for the next launch as much as its tiles: timed back to back, the rounds before the last ranked other configs
# than the flushed last round would, and left its best out of it. On the H100 at 1x28672x4096 (fp16, B
# column-major), BM1_BN1_BK1024_nW4 took 74.95 us back to back, the fastest, and BM1_BN1_BK2048_nW8 was not among the
# five fastest; after flushes 83.9 against 79.5. Tuned with "final", the winner was the former (0.956x max-autotune);
# with every round flushed the latter (1.016x).
STREAMING_INTENSITY = 64.0
ZEROS_WARNING = ("warning: --init_type zeros times kernels on zeros, which flatters them (less switching "
                 "activity, lower power); correctness checks still use random inputs")


def results_file(o: Path | None, tuning_results_file: Path | None) -> Path:
    """`--o` is the ROCm script's name for `--tuning_results_file`: either, or both when they agree."""
    if o is not None and tuning_results_file is not None and o != tuning_results_file:
        raise UserError(f"--o {o} and --tuning_results_file {tuning_results_file} name different results files; "
                        "give one")
    return o or tuning_results_file or DEFAULT_RESULTS_FILE


def warmup_launches(warmup: int | None, no_warmup: bool) -> int:
    """Warm-up launches per config: --warmup (default 5), or none with --no_warmup."""
    if no_warmup and warmup:
        raise UserError(f"--no_warmup and --warmup {warmup} exclude each other")
    if no_warmup:
        return 0
    return DEFAULT_WARMUP if warmup is None else warmup


def rotating_bytes(megabytes: int | None, memory_bytes: int) -> int | None:
    """`--rotating_tensor MB` in bytes (MB = 2**20 bytes, as the ROCm script counts); None when not given."""
    if megabytes is None:
        return None
    if megabytes < 0:
        raise UserError(f"--rotating_tensor must be 0 or more (MB), got {megabytes}")
    if megabytes * 2**20 > memory_bytes:
        raise UserError(f"--rotating_tensor {megabytes} MB is more than the GPU's {memory_bytes // 2**20} MB")
    return megabytes * 2**20


def rounds_flushed(flush: str, problem: GemmProblem) -> str:
    """The flush setting one size is timed with: "auto" made "all" where the size streams its operands (fewer flops
    per byte moved than STREAMING_INTENSITY), "final" elsewhere; any other setting as it is."""
    if flush != "auto":
        return flush
    return "all" if problem.arithmetic_intensity < STREAMING_INTENSITY else "final"


def flush_rounds(flush: str | None, icache_flush: bool) -> str:
    """Which rounds flush L2 before each timed launch: `--flush` (default auto), or all with `--icache_flush`."""
    if icache_flush and flush not in (None, "all"):
        raise UserError(f"--icache_flush (flush before every launch) and --flush {flush} exclude each other")
    return "all" if icache_flush else flush or DEFAULT_FLUSH
