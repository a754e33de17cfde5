"""On 2 GPUs (`pytest -m gpu`, device machine nvidia-h200-x2): one worker per GPU tunes a size list into
one results file; both GPUs take sizes, every winner is checked and recorded, the wall time is printed. One
size alone is split into config chunks, one per GPU, whose best configs are timed again for its winner."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import yaml

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 CUDA GPUs")]

SIZES = [(512, 512, 512), (1024, 1024, 1024), (16, 4096, 4096), (2048, 2048, 2048), (1000, 1000, 1000),
         (4096, 4096, 512)]
SPACE = """\
BLOCK_SIZE_M: [16, 64, 128]  # 16: the pruner keeps no taller tile for M = 16
BLOCK_SIZE_N: [64, 128]
BLOCK_SIZE_K: [32, 64]
GROUP_SIZE_M: [1, 8]
SPLIT_K: [1]
num_warps: [4, 8]
num_stages: [3, 4]
"""


def _tune(tmp_path, *spread: str, sizes=SIZES, space: str | None = SPACE
          ) -> tuple[subprocess.CompletedProcess, list[dict], float]:
    """The run in a process of its own, so that its workers' output is captured whole (space None: the full one)."""
    if space is not None:
        (tmp_path / "space.yaml").write_text(space)
        spread = ("--space", "space.yaml", *spread)
    (tmp_path / "sizes.yaml").write_text("".join(f"- {{M: {m}, N: {n}, K: {k}}}\n" for m, n, k in sizes))
    started = time.perf_counter()
    run = subprocess.run([sys.executable, str(ROOT / "tune_gemm.py"), "--gemm_size_file", "sizes.yaml",
                          "--compare", "--quiet", "--tuning_results_file", "out.yaml", *spread],
                         cwd=tmp_path, capture_output=True, text=True, timeout=540, check=False)
    seconds = time.perf_counter() - started
    failed = [line for line in run.stdout.splitlines() if line.startswith(("FAILED", "FAIL "))]  # past the tail
    assert run.returncode == 0, "\n".join(failed) + "\n...\n" + run.stdout[-4000:] + run.stderr[-4000:]
    assert run.stdout.count("PASS") == len(sizes)  # every winner checked against float64
    entries = yaml.safe_load((tmp_path / "out.yaml").read_text())
    assert sorted((e["M"], e["N"], e["K"]) for e in entries) == sorted(sizes)
    assert all(e["time_us"] > 0 for e in entries)
    assert space is None or all(e["BLOCK_SIZE_M"] in (16, 64, 128) for e in entries)
    return run, entries, seconds


def test_two_gpus_tune_a_size_list(tmp_path):
    run, _, seconds = _tune(tmp_path, "--ngpus", "2")
    assert "[GPU 0]" in run.stdout and "[GPU 1]" in run.stdout  # both workers took sizes
    print(f"2 GPUs (--ngpus 2) tuned {len(SIZES)} sizes in {seconds:.1f} s wall")


def test_one_size_is_split_over_both_gpus(tmp_path):
    """4096³ prunes to about 2000 configs: 2 chunks, each GPU halving its own under a budget, then a final round."""
    run, _, seconds = _tune(tmp_path, "--ngpus", "2", "--search", "halving", "--time_budget", "60",
                            sizes=[(4096, 4096, 4096)], space=None)
    assert "configs in 2 chunks over 2 workers" in run.stdout
    assert "chunk 1 of 2" in run.stdout and "chunk 2 of 2" in run.stdout and "final round" in run.stdout
    assert "[GPU 0]" in run.stdout and "[GPU 1]" in run.stdout
    print(f"2 GPUs (--ngpus 2) tuned 4096³ in 2 chunks in {seconds:.1f} s wall")
    print("\n".join(line for line in run.stdout.splitlines() if "chunk" in line or "final round" in line))


def test_a_local_ray_cluster_tunes_on_both_gpus(tmp_path):
    pytest.importorskip("ray", reason="Ray is not installed (pip install ray)")
    ray_cli = str(Path(sys.executable).with_name("ray"))  # the `ray` command installed beside this Python
    # a cluster of this host for the run to join as `--ray auto`; stopped afterwards
    subprocess.run([ray_cli, "start", "--head", "--num-gpus", "2", "--disable-usage-stats"], check=True,
                   capture_output=True)
    try:
        _, entries, seconds = _tune(tmp_path, "--ray", "auto")
    finally:
        subprocess.run([ray_cli, "stop", "--force"], check=False, capture_output=True)
    assert {e["gpu"] for e in entries} == {torch.cuda.get_device_name(0)}  # read by each task on its GPU
    print(f"2 GPUs (--ray auto) tuned {len(SIZES)} sizes in {seconds:.1f} s wall")
