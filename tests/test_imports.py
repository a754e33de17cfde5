"""The package's import structure: every module imports on its own, first of the project's, and the subpackages
import one way, ground floor up (LAYERS), so that no import cycle can form between them."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "tune_gemm"
# Ground floor first: a module may import from its own subpackage and from those before it, never after.
LAYERS = ("core", "space", "kernels", "generate", "compile", "measure", "search", "files", "run", "runtime",
          "outputs", "cli")

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


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> list[str]:
    return sorted(_module_name(path) for path in PACKAGE.rglob("*.py") if path.name != "__main__.py")


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _imported(path: Path) -> set[str]:
    """The tune_gemm modules `path` imports, at any depth of its code (lazy imports count too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in names if name.startswith("tune_gemm.")}


def test_every_module_imports_first_of_the_project_s():
    modules = _modules()
    assert "tune_gemm.core.problem" in modules and len(modules) > 50
    done = subprocess.run([sys.executable, "-c", IMPORT_EACH_ALONE, *modules], cwd=PACKAGE.parent,
                          capture_output=True, text=True, timeout=600, check=True)
    assert done.stdout.splitlines() == []


def test_every_subpackage_has_a_floor():
    subpackages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")} | {"cli"}
    assert subpackages == set(LAYERS)


def test_imports_run_one_way_ground_floor_up():
    upward = []
    for path in PACKAGE.rglob("*.py"):
        layer = _layer(_module_name(path))
        if layer not in LAYERS:  # tune_gemm/__init__.py and __main__.py stand above every floor
            continue
        for name in _imported(path):
            target = _layer(name)
            if target in LAYERS and LAYERS.index(target) > LAYERS.index(layer):
                upward.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    assert upward == []


def test_the_layer_check_sees_an_upward_import(tmp_path):
    """The check above can fail: a core module importing the search is caught."""
    module = tmp_path / "probe.py"
    module.write_text("from tune_gemm.search.search import run_search\n")
    assert _layer("tune_gemm.core.probe") == "core"
    assert {_layer(name) for name in _imported(module)} == {"search"}
