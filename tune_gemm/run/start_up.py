"""The run's helper processes, started ahead of its sizes: the compile workers (tune_gemm.compile.pool) and the first timing
child, in standby (tune_gemm.measure.standby).

Each takes seconds to start: an interpreter importing torch and Triton, then a GPU context (and for the timing
child the timer's first session). Started by the first size that needs them, they were paid from that size's
`--time_budget`: a first size's search ran its first seconds with no compile worker and no timing child up, where
every later size found both running. So the run starts them as soon as it has its settings (start_helpers), while
it prunes and generates its first size, and each size waits until they are ready (helpers_ready) before its
search's clock starts: every size, the first one included, spends its whole budget compiling and timing configs.
A later size finds them ready and waits for nothing. Under the interpreter there are none to start.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from tune_gemm.compile.pool import WORKER_PROCESSES
from tune_gemm.measure.runner import start_standby
from tune_gemm.measure.standby import STANDBY

if TYPE_CHECKING:
    from tune_gemm.search.settings import TuneSettings

# Past this, a size's search starts anyway: a helper that failed to start fails there, with its reason.
READY_TIMEOUT = 300.0


def start_helpers(settings: TuneSettings) -> None:
    """Start the helpers the run's searches use (TuneSettings.compile_workers, .standby_children), those not
    running yet, without waiting for them."""
    if settings.compile_workers:
        WORKER_PROCESSES.get(settings.num_threads)
    if settings.standby_children:
        start_standby(settings.child_env, settings.profiler.timer, settings.interpret, settings.standby_children)


def helpers_ready(settings: TuneSettings, timeout: float = READY_TIMEOUT) -> float:
    """Start the helpers not running yet and wait until all are ready, at most `timeout` seconds; the seconds
    waited (0.0 when all were ready)."""
    start_helpers(settings)
    waits = [wait for wait, used in ((WORKER_PROCESSES.wait_ready, settings.compile_workers),
                                     (STANDBY.wait_ready, settings.standby_children)) if used]
    if all(wait(0.0) for wait in waits):
        return 0.0
    started = time.perf_counter()
    for wait in waits:
        wait(max(0.0, started + timeout - time.perf_counter()))
    return time.perf_counter() - started
