"""On a GPU (`pytest -m gpu`): the ROCm run knobs on compiled kernels and real timers — the bias epilogue
compiled with and without split-K (its partials summed by a reduction kernel or in the GEMM), the L2 flush kept
out of the timings, GPU pinning, --no_warmup."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest
import torch
import yaml
from helpers import problem

from tune_gemm.cli import main
from tune_gemm.core.config import ATOMIC_REDUCE, Config
from tune_gemm.generate import write_module
from tune_gemm.generate.loader import load_module
from tune_gemm.kernels import matmul_family as family
from tune_gemm.measure.cache_flush import FLUSH_KERNEL, CacheFlush
from tune_gemm.measure.job import ChildJob
from tune_gemm.run.gpus import pinning_env

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

SPACE = """\
BLOCK_SIZE_M: [64, 128]
BLOCK_SIZE_N: [64, 128]
BLOCK_SIZE_K: [32, 64]
GROUP_SIZE_M: [1, 8]
SPLIT_K: [1, 4]
FUSED_REDUCE: [0, 1]
num_warps: [4]
num_stages: [3]
"""


@pytest.fixture
def space(tmp_path):
    path = tmp_path / "space.yaml"
    path.write_text(SPACE)
    return path


@pytest.mark.parametrize("config", [Config(64, 64, 32, 1, 1, 4, 3), Config(64, 64, 32, 1, 4, 4, 3),
                                    Config(64, 64, 32, 1, 4, 4, 3, FUSED_REDUCE=1),
                                    Config(64, 64, 32, 1, 4, 4, 3, FUSED_REDUCE=ATOMIC_REDUCE)], ids=str)
def test_compiled_bias_epilogue_matches_float64(tmp_path, config):
    p = replace(problem(1000, 520, 2048), bias=True)
    path = write_module(p, [config], tmp_path)
    module = load_module(str(path))
    module.COMPILERS[str(config)]()  # the compile stage's specialization (bias pointer and HAS_BIAS)
    assert family.check_config(module.LAUNCHERS[str(config)], module.PROBLEM, "cuda") <= p.dtype_a.tolerance


def test_flush_kernel_rewrites_twice_the_l2():
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    flush = CacheFlush(l2, "cuda")
    flush()
    flush()
    torch.cuda.synchronize()
    assert flush.buffer.numel() * 4 == 2 * l2 and (flush.buffer == 2).all()


@pytest.mark.parametrize("timer", ["cupti", "events"])
def test_bias_and_flush_tune_and_check(tmp_path, space, monkeypatch, capsys, timer):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out.yaml"
    code = main(["-m", "512", "-n", "512", "-k", "4096", "--space", str(space), "--profiler", timer, "--compare",
                 "--bias_vector", "--icache_flush", "--keep", "--o", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    [entry] = yaml.safe_load(out.read_text())
    assert entry["bias_vector"] is True and entry["time_us"] > 0 and entry["matmul_time_us"] > 0
    rounds = list((tmp_path / "tune_gemm_work").glob("tune*/round*.csv"))  # the search's timings, one file a round
    assert rounds
    names = set(pd.concat([pd.read_csv(csv) for csv in rounds])["kernel_name"])
    assert FLUSH_KERNEL not in names and "torch.matmul" in names
    print(f"{timer} --icache_flush --bias_vector winner: {entry['time_us']} us, torch.addmm {entry['matmul_time_us']} us")


def test_gpu_ids_pin_the_child_and_no_warmup_skips_the_compile_stage(tmp_path, space, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    jobs, real = [], ChildJob.save  # every job is saved for its child to read
    monkeypatch.setattr(ChildJob, "save", lambda job, path: (jobs.append(job), real(job, path))[1])
    code = main(["-m", "256", "-n", "256", "-k", "256", "--space", str(space), "--gpu_ids", "0", "--no_warmup",
                 "--compare", "--init_type", "hpl", "--rotating_tensor", "64", "--o", str(tmp_path / "out.yaml")])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert jobs and all(job.env == pinning_env(0, "nvidia") for job in jobs)  # "0", or the list's first entry
    timing = [job for job in jobs if job.time_configs]
    assert timing and all((job.warmup, job.rotating_bytes, job.init_type) == (0, 64 * 2**20, "hpl") for job in timing)
    assert "(GPU 0)" in printed


def test_more_gpus_than_the_machine_has_are_refused(capsys):
    too_many = torch.cuda.device_count() + 1
    assert main(["-m", "64", "-n", "64", "-k", "64", "--ngpus", str(too_many)]) == 2
    assert f"--ngpus {too_many}: this machine has" in capsys.readouterr().err
