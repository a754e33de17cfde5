"""The child's timing inputs: how many operand sets it rotates over (--rotating_tensor), how they are filled
(--init_type), and the baseline with a bias."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from helpers import problem

from tune_gemm.core.config import Config
from tune_gemm.generate import write_module
from tune_gemm.generate.loader import load_module
from tune_gemm.measure import child
from tune_gemm.measure.baselines import baseline_for
from tune_gemm.measure.job import ChildJob

CONFIG = Config(16, 16, 16, 1, 1, 1, 1)
SET_BYTES = 3 * 64 * 64 * 2  # A, B and C of a 64x64x64 fp16 problem


@pytest.fixture
def module(tmp_path, interpreter_env):
    path = write_module(problem(64, 64, 64), [CONFIG], tmp_path)
    return load_module(str(path))


def _job(**fields) -> ChildJob:
    return ChildJob(module_path="", timer="host", csv_path="", progress_path="", **{"iters": 100, **fields})


@pytest.mark.parametrize("fields,sets", [
    ({}, 1),  # no L2 given (the interpreter) and no --rotating_tensor: one set
    ({"rotating_bytes": 0}, 1),  # --rotating_tensor 0: no rotation, even with an L2
    ({"rotating_bytes": 0, "l2_bytes": 2**20}, 1),
    ({"rotating_bytes": 2**20}, 2**20 // SET_BYTES),  # 1 MB: as many whole sets as fit
    ({"rotating_bytes": 10 * SET_BYTES + 1}, 10),
    ({"rotating_bytes": SET_BYTES - 1}, 1),  # less than one set still means one
    ({"rotating_bytes": 2**20, "iters": 5, "warmup": 2}, 7),  # never more sets than launches use
])
def test_operand_sets_built(module, fields, sets):
    built = child._operand_sets(module, _job(**fields), "cpu")
    assert len(built) == sets
    assert len({set_[0].data_ptr() for set_ in built}) == sets  # distinct buffers
    assert not torch.equal(built[0][0], built[-1][0]) or sets == 1  # and distinct values


def test_default_rotation_goes_past_twice_the_l2_and_the_flag_overrides_it():
    job = _job(l2_bytes=2**18)
    assert child._set_count(job, SET_BYTES, free_bytes=2**30) == -(-2 * 2**18 // SET_BYTES) == 22
    assert child._set_count(replace(job, rotating_bytes=4 * SET_BYTES), SET_BYTES, free_bytes=2**30) == 4


@pytest.mark.parametrize("init_type", ["zeros", "hpl", "trig_float"])
def test_operand_sets_are_filled_as_init_type_says(module, init_type):
    built = child._operand_sets(module, _job(init_type=init_type, rotating_bytes=3 * SET_BYTES), "cpu")
    for a, b, _ in built:
        if init_type == "zeros":
            assert a.abs().max() == 0 and b.abs().max() == 0
        elif init_type == "hpl":
            assert a.abs().max() <= 0.5 and b.abs().max() <= 0.5
        else:
            assert torch.equal(a, built[0][0])  # deterministic: no seed in it


def test_baseline_adds_the_bias_per_row():
    a, b, bias = torch.randn(8, 4), torch.randn(4, 6), torch.randn(8)
    c = torch.empty(8, 6)
    baseline_for([(a, b, c, bias)])(0)
    torch.testing.assert_close(c, a @ b + bias[:, None])
    baseline_for([(a, b, c)])(0)
    torch.testing.assert_close(c, a @ b)


def test_a_bias_problem_rotates_its_bias_too(tmp_path, interpreter_env):
    path = write_module(replace(problem(64, 64, 64), bias=True), [CONFIG], tmp_path)
    loaded = load_module(str(path))
    built = child._operand_sets(loaded, _job(rotating_bytes=4 * (SET_BYTES + 64 * 2)), "cpu")
    assert len(built) == 4 and all(len(set_) == 4 and set_[3].shape == (64,) for set_ in built)
