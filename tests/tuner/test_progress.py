"""tune_gemm.search.progress: one line per stage in quiet mode or off a terminal, bars on a terminal, from any thread."""

from __future__ import annotations

import io
import re
import threading

from rich.console import Console

from tune_gemm.search.progress import StageBars, StageLines, stages_for


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=terminal, width=120), out


def test_quiet_mode_prints_one_line_per_stage_with_counts_and_rate():
    console, out = _console(terminal=True)
    stages = stages_for(console, "32x32x32", quiet=True)
    assert isinstance(stages, StageLines)
    stages.start("compile", 10)
    threads = [threading.Thread(target=lambda: [stages.advance("compile") for _ in range(5)]) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stages.start("time", 10)
    stages.advance("time", 4)
    stages.finish("compile", "1 failed")
    stages.finish("time")
    stages.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"32x32x32 compile: 10 of 10 configs in [\d.]+ s \([\d.]+ configs/s\); 1 failed", lines[0])
    assert re.fullmatch(r"32x32x32 time: 4 of 10 configs in [\d.]+ s \([\d.]+ configs/s\)", lines[1])


def test_output_that_is_no_terminal_gets_lines_and_a_terminal_gets_bars():
    assert isinstance(stages_for(_console(terminal=False)[0], "s", quiet=False), StageLines)
    console, out = _console(terminal=True)
    bars = stages_for(console, "4096x4096x4096", quiet=False)
    assert isinstance(bars, StageBars)
    bars.start("compile", 4)
    bars.advance("compile", 4)
    bars.advance("no such stage")  # ignored
    bars.finish("compile")
    bars.close()
    assert "4096x4096x4096 compile" in out.getvalue() and "configs/s" in out.getvalue()
