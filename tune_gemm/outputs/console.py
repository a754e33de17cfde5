"""What a run prints: per-size summaries and the top-5 table (rich), with torch.matmul beside the winner."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from tune_gemm.measure.baselines import baseline_label
from tune_gemm.run.pipeline import SizeOutcome

TOP = 5


def top_table(outcome: SizeOutcome) -> Table:
    problem = outcome.problem
    flushed = ", L2 flushed before each launch" if outcome.searched and outcome.searched.flushed else ""
    table = Table(title=f"{problem.label}: top {min(TOP, len(outcome.timings))} of {len(outcome.timings)} configs"
                        f"{flushed}")
    for column, justify in (("#", "right"), ("config", "left"), ("time (us)", "right"), ("TFLOP/s", "right"),
                            ("vs torch.matmul", "right")):
        # a config name is copied into --config_str and results files: never cut it short
        table.add_column(column, justify=justify, overflow="fold" if column == "config" else "ellipsis",
                         no_wrap=column != "config")
    baseline = outcome.matmul_time_us
    for rank, row in enumerate(outcome.timings.head(TOP).itertuples(), start=1):
        ratio = f"{baseline / row.time_us:.2f}x" if baseline else "-"
        table.add_row(str(rank), row.config, f"{row.time_us:.2f}", f"{problem.tflops(row.time_us):.2f}", ratio)
    if baseline:
        table.add_row("", baseline_label(problem), f"{baseline:.2f}", f"{problem.tflops(baseline):.2f}", "1.00x",
                      style="dim")
    return table


def print_outcome(console: Console, outcome: SizeOutcome, meaningful: bool, verbose: bool) -> None:
    console.print(top_table(outcome))
    if not meaningful:
        console.print("times are host times under the Triton interpreter: NOT meaningful, correctness only")
    stages = ", ".join(f"{stage} {seconds:.1f}s" for stage, seconds in outcome.seconds.items())
    console.print(f"compiled {len(outcome.compiled.compiled)}, compile failures {len(outcome.compiled.failed)}, "
                  f"runtime failures {len(outcome.profiled.failed)}; {stages}")
    # a crash or hang is rare and costs a restart or a config timeout each, and it points at a compiler or kernel
    # bug: always named; compile failures (hundreds, expected) only with --verbose
    shown = outcome.failed if verbose else outcome.profiled.failed
    for name, reason in shown.items():
        console.print(f"  failed {name}: {reason}", markup=False)


# The ROCm script's three stages first, as its "Elapsed time" line; then the stages only we have.
_MAIN_STAGES = ("compile", "profile", "post-process")


def time_breakdown(outcome: SizeOutcome) -> str:
    """`--time_breakdown`: one line per size, compile + profile + post-process = their sum, then the rest."""
    seconds = outcome.seconds
    main = [seconds.get(stage, 0.0) for stage in _MAIN_STAGES]
    terms = " + ".join(f"{stage} {value:.2f} s" for stage, value in zip(_MAIN_STAGES, main))
    others = "".join(f"; {stage} {value:.2f} s" for stage, value in seconds.items() if stage not in _MAIN_STAGES)
    return f"time breakdown {outcome.problem.label}: {terms} = {sum(main):.2f} s{others}"
