"""--icache_flush: the flush kernel rewrites its whole buffer, and runs before every timed launch, untimed."""

from __future__ import annotations

import textwrap

import pytest
from helpers import FAKE_MODULE_HEAD

import tune_gemm.generate.loader
from tune_gemm.measure import child
from tune_gemm.measure.backends import HostTimer
from tune_gemm.measure.cache_flush import (
    FLUSH_KERNEL,
    MIN_FLUSH_BYTES,
    CacheFlush,
    flush_bytes,
)
from tune_gemm.measure.external import MARKER_BEGIN, MARKER_END, attribute
from tune_gemm.measure.job import ChildJob
from tune_gemm.measure.postprocess import load_timings
from tune_gemm.measure.schema import BASELINE_NAME, KernelTiming

CONFIGS = ["BM16_BN16_BK16_GM1_SK1_nW1_nS1", "BM32_BN16_BK16_GM1_SK1_nW1_nS1"]


def test_the_flush_kernel_rewrites_the_whole_buffer_each_call(interpreter_env):
    flush = CacheFlush(l2_bytes=0, device="cpu")
    assert flush.buffer.numel() * 4 == MIN_FLUSH_BYTES
    flush.buffer.fill_(-1)
    flush()
    assert (flush.buffer == 1).all()
    flush()
    assert (flush.buffer == 2).all() and flush.calls == 2


def test_the_buffer_is_twice_the_l2():
    assert flush_bytes(50 * 2**20) == 100 * 2**20
    assert flush_bytes(0) == MIN_FLUSH_BYTES


def test_host_timer_flushes_before_each_launch_outside_the_time():
    events = []
    rows = HostTimer().measure("k", lambda i: events.append(f"launch {i}"), 3, flush=lambda: events.append("flush"))
    assert events == ["flush", "launch 0", "flush", "launch 1", "flush", "launch 2"]
    assert [row.instance for row in rows] == [0, 1, 2]


def test_host_timer_without_flush_only_launches():
    events = []
    HostTimer().measure("k", lambda i: events.append(i), 2)
    assert events == [0, 1]


def test_external_profiler_records_of_the_flush_are_dropped():
    rows = [KernelTiming(FLUSH_KERNEL, 0, 9.0), KernelTiming(f"matmul_kernel_{CONFIGS[0]}", 0, 5.0),
            KernelTiming(MARKER_BEGIN, 0, 1.0), KernelTiming(FLUSH_KERNEL, 1, 9.0), KernelTiming("gemm_blas", 0, 4.0),
            KernelTiming(MARKER_END, 0, 1.0)]
    kept = attribute(rows)
    assert [(row.kernel_name, row.duration_ns) for row in kept] == [(f"matmul_kernel_{CONFIGS[0]}", 5.0),
                                                                     (BASELINE_NAME, 4.0)]


FAKE_MODULE = FAKE_MODULE_HEAD + textwrap.dedent(f'''
    EVENTS = []

    def launcher(name):
        return lambda a, b, c: EVENTS.append(name)

    LAUNCHERS = {{name: launcher(name) for name in {CONFIGS!r}}}
''')


@pytest.mark.parametrize("cache_flush", [True, False])
def test_the_child_flushes_before_every_launch_of_every_config(tmp_path, monkeypatch, cache_flush):
    module_path = tmp_path / "fake_module.py"
    module_path.write_text(FAKE_MODULE)
    module = tune_gemm.generate.loader.load_module(str(module_path))
    monkeypatch.setattr(tune_gemm.generate.loader, "load_module", lambda path: module)  # the child's, to see its events here

    class RecordingFlush:  # stands in for CacheFlush: notes each flush among the launches
        def __init__(self, l2_bytes: int, device: str):
            assert device == "cpu"

        def __call__(self) -> None:
            module.EVENTS.append("flush")

    monkeypatch.setattr(child, "CacheFlush", RecordingFlush)
    job = ChildJob(module_path=str(module_path), timer="host", csv_path=str(tmp_path / "t.csv"),
                   progress_path=str(tmp_path / "p.txt"), time_configs=CONFIGS, baseline=True, warmup=1, iters=2,
                   cache_flush=cache_flush)
    assert child.run(job) == 0
    launches = [name for name in CONFIGS for _ in range(3)]
    expected = [event for name in launches for event in (["flush", name] if cache_flush else [name])]
    expected += ["flush"] * 3 if cache_flush else []  # the torch.matmul baseline's launches (not noted)
    assert module.EVENTS == expected
    timings = load_timings(tmp_path / "t.csv")
    assert FLUSH_KERNEL not in set(timings["kernel_name"]) and len(timings) == 9
