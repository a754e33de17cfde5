"""Every module of the packages imports on its own, before any other of the project's: an import cycle that another
module happens to break when it is imported earlier (the suite's order, tune_gemm's) still fails a user whose first
line is `from tuner.problem import GemmProblem` (tuner.dtypes imported prune, whose rules import tuner.problem)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("tuner", "prune", "gen", "profiling", "runtime", "reporting")
TOP_LEVEL = ("tune_gemm",)  # `from tune_gemm import matmul`: likely a user's first import

# Run in a fresh interpreter: the third-party libraries are imported once, then each module is imported first of
# the project's in a forked child (a fresh interpreter per module costs torch's import each time: minutes on CI).
IMPORT_EACH_ALONE = """
import os, sys
import numpy, pandas, torch, triton, yaml  # noqa: F401
for module in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            __import__(module)
        except BaseException as error:
            print(f"{module}: {type(error).__name__}: {error}", flush=True)
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):  # 1: said above; anything else killed the child unsaid
        print(f"{module}: the importing child ended with status {status}", flush=True)
"""


def _modules() -> list[str]:
    return [*TOP_LEVEL, *(package if path.stem == "__init__" else f"{package}.{path.stem}"
                          for package in PACKAGES for path in sorted((ROOT / package).glob("*.py")))]


def test_every_module_imports_first_of_the_project_s():
    modules = _modules()
    assert "tuner.problem" in modules and len(modules) > 50
    done = subprocess.run([sys.executable, "-c", IMPORT_EACH_ALONE, *modules], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=True)
    assert done.stdout.splitlines() == []
