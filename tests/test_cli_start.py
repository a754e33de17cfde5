"""The command line's start: what answers before any work (--help, a wrong flag, a missing sizes file) answers without
importing torch or Triton, and `pip install .` installs the one package `tune_gemm` with the `tune-gemm` script."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "triton")  # imported only once a size is to be checked or tuned


def _imported_modules(importtime: str) -> set[str]:
    """Module names of a `python -X importtime` report (its lines `import time: self | cumulative | name`)."""
    return {line.rsplit("|", 1)[1].strip() for line in importtime.splitlines() if line.startswith("import time:")}


@pytest.mark.parametrize("args, code, stream, says", [
    (["--help"], 0, "stdout", "usage: tune_gemm"),
    (["--no_such_flag"], 2, "stderr", "tune_gemm: error: unrecognized arguments: --no_such_flag"),
    (["--gemm_size_file", "nope.yaml"], 2, "stderr", "tune_gemm: error: sizes file nope.yaml does not exist"),
])
def test_answers_before_work_without_torch(tmp_path, args, code, stream, says):
    done = subprocess.run([sys.executable, "-X", "importtime", str(ROOT / "tune_gemm.py"), *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == code
    output = done.stdout if stream == "stdout" else done.stderr
    assert says in output and "Traceback" not in done.stderr
    modules = _imported_modules(done.stderr)
    assert "tune_gemm.cli" in modules  # the report is read right: the command line itself was imported
    assert not {name for name in modules if name.split(".")[0] in HEAVY}


def test_pip_install_gives_one_package_and_the_script(tmp_path):
    pytest.importorskip("setuptools")  # the build backend, used here without build isolation (no network)
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "tune_gemm", source / "tune_gemm", ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", str(target), str(source)], capture_output=True, text=True, timeout=300, check=True)
    dist_infos = [path.name for path in target.glob("*.dist-info")]
    assert len(dist_infos) == 1
    assert {path.name for path in target.iterdir()} - {"bin"} == {"tune_gemm", dist_infos[0]}
    entry_points = configparser.ConfigParser()
    entry_points.read(target / dist_infos[0] / "entry_points.txt")
    assert dict(entry_points["console_scripts"]) == {"tune-gemm": "tune_gemm.cli:main"}
    installed = {path.relative_to(target / "tune_gemm") for path in (target / "tune_gemm").rglob("*.py")}
    assert installed == {path.relative_to(ROOT / "tune_gemm") for path in (ROOT / "tune_gemm").rglob("*.py")}
