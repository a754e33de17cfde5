"""Shared fixtures: import paths, a small range space (object and file), the interpreter switch; slow tests first."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import SMALL_SPACE_YAML

from tune_gemm.space.ranges import RangeSpace


def pytest_configure(config: pytest.Config) -> None:
    """CPU runs (the default `-m 'not gpu'`) use Triton's interpreter from the start: Triton reads
    TRITON_INTERPRET when it is first imported, and a test module that imports Triton at collection
    would otherwise leave its standard-library kernels (tl.cdiv, ...) compiled-mode, which interpreted
    kernels then cannot call. `-m gpu` runs keep compiled kernels."""
    if "not gpu" in config.getoption("markexpr", "") or "gpu" not in config.getoption("markexpr", ""):
        os.environ["TRITON_INTERPRET"] = "1"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The `slow` tests (soak and load tests, a minute or more each) first, in their order: parallel workers
    (pytest-xdist, CI's `--dist loadfile --no-loadscope-reorder`) then start their files at once and fill the time
    they take with the short tests, rather than finishing on one of them alone. A sort that keeps order keeps a
    module's slow tests together, and with them its module-scoped fixtures."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture
def small_space() -> RangeSpace:
    return RangeSpace(block_m=(16, 32), block_n=(16, 32), block_k=(16, 32), group_m=(1, 2), split_k=(1, 2),
                      num_warps=(1,), num_stages=(1, 2))


@pytest.fixture
def space_file(tmp_path: Path) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(SMALL_SPACE_YAML)
    return path


@pytest.fixture
def interpreter_env(monkeypatch):
    """Triton's interpreter for kernels run in this process (the generated module reads it at import)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
