"""On the GPU (`pytest -m gpu`): a timing child that takes job after job (tune_gemm.measure.standby) gives each job's GPU
memory back before it waits for the next, so the next job finds the GPU as free as a new child would."""

from __future__ import annotations

import textwrap
import time

import pytest
import torch

from tune_gemm.measure.job import ChildJob
from tune_gemm.measure.runner import run_child, start_standby
from tune_gemm.measure.standby import STANDBY

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

BIG_BYTES = 8 << 30  # each job's operands hold this much beside its tiny matrices
NAME = "BM16_BN16_BK16_GM1_SK1_nW1_nS1"
MODULE = textwrap.dedent(f'''
    import torch
    INTERPRETED = False
    PROBLEM = None

    def make_operands(problem, device, seed=0, init_type="randn"):
        big = torch.empty({BIG_BYTES}, dtype=torch.int8, device=device)
        return torch.ones(2, 2, device=device), torch.ones(2, 2, device=device), torch.empty(2, 2, device=device), big

    def fine(a, b, c, big):
        return c.copy_(a @ b)

    LAUNCHERS = {{"{NAME}": fine}}
''')


@pytest.fixture(autouse=True)
def no_standby_left():
    yield
    STANDBY.stop()


def _job(tmp_path, name: str) -> ChildJob:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "module.py").write_text(MODULE)
    return ChildJob(module_path=str(folder / "module.py"), timer="events", csv_path=str(folder / "t.csv"),
                    progress_path=str(folder / "p.txt"), time_configs=[NAME], warmup=1, iters=2)


def _all_warm(seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not all(child.ready_path.exists() for child in STANDBY.waiting):
        assert time.monotonic() < deadline, "children in standby not warm"
        time.sleep(0.1)


def test_a_reused_child_gives_back_its_jobs_gpu_memory(tmp_path):
    torch.cuda.init()
    start_standby({}, "events", interpret=False)
    _all_warm()
    warm = STANDBY.waiting[0]
    free_before = torch.cuda.mem_get_info()[0]  # the child's context made, nothing of a job yet
    outcome = run_child(_job(tmp_path, "job"), tmp_path / "job", interpret=False, config_timeout=120, standby=1)
    assert outcome.failed == {} and STANDBY.waiting[0] is warm  # it ran the job and waits for the next
    _all_warm()  # the child started in standby during the job has its context too
    free_after = torch.cuda.mem_get_info()[0]
    print(f"free GPU memory before the job {free_before / 2**30:.2f} GiB, after it {free_after / 2**30:.2f} GiB "
          f"(a second child in standby since)")
    # the job's 8 GiB are given back (torch's allocator keeps them without an empty_cache); what is left is the
    # second child's context, well under a GiB
    assert free_before - free_after < BIG_BYTES // 4
