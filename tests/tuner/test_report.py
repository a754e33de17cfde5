"""tune_gemm.outputs.console: what a size's summary names. Crashes and hangs always, compile failures only with --verbose."""

from __future__ import annotations

from helpers import problem
from rich.console import Console

from tune_gemm.compile.faults import ENV_VAR
from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.measure import ProfilerChoice
from tune_gemm.outputs.console import print_outcome
from tune_gemm.run.pipeline import tune_size
from tune_gemm.search.settings import TuneSettings
from tune_gemm.space.ranges import RangeSpace

SPACE = RangeSpace(block_m=(16, 32), block_n=(16, 32), block_k=(16,), group_m=(1,), split_k=(1,), num_warps=(1,),
                   num_stages=(1,))
CRASHES, UNCOMPILABLE = "BM16_BN32_BK16_GM1_SK1_nW1_nS1", "BM32_BN16_BK16_GM1_SK1_nW1_nS1"


def test_runtime_failures_are_named_without_verbose_and_compile_failures_only_with_it(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv(ENV_VAR, f"{CRASHES}=crash,{UNCOMPILABLE}=compile")
    settings = TuneSettings(profiler=ProfilerChoice("host", "host"), warmup=1, iters=2, interpret=True,
                            workdir=tmp_path, space=SPACE, config_timeout=30)
    outcome = tune_size(problem(32, 32, 32), INTERPRETER_PROFILE, settings, compare=False, log=lambda _: None)
    printed = {}
    for verbose in (False, True):
        console = Console(record=True, width=300)
        print_outcome(console, outcome, meaningful=False, verbose=verbose)
        printed[verbose] = [line for line in console.export_text().splitlines() if line.startswith("  failed ")]
    assert [line.split(":")[0] for line in printed[False]] == [f"  failed {CRASHES}"]
    assert "child died" in printed[False][0]
    assert sorted(line.split(":")[0] for line in printed[True]) == [f"  failed {CRASHES}", f"  failed {UNCOMPILABLE}"]
