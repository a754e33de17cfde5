"""tune_gemm.measure.stream and the child's batches: configs timed as the tuner reports them compiled, a stop
request obeyed, a batch cut short by a crash timed again by the next child, and CUPTI's launches split
back into configs."""

from __future__ import annotations

import textwrap
import threading
import time

import pandas as pd
from helpers import FAKE_MODULE_HEAD

from tune_gemm.measure.backends import SEPARATOR_KERNEL, split_launches
from tune_gemm.measure.job import ChildJob
from tune_gemm.measure.runner import run_child
from tune_gemm.measure.schema import KernelTiming
from tune_gemm.measure.stream import ReadyWriter, config_batches, request_stop

NAMES = [f"BM{m}_BN16_BK16_GM1_SK1_nW1_nS1" for m in (16, 32, 64, 128, 256)]


def _job(tmp_path, names=NAMES, module_path="", **fields) -> ChildJob:
    return ChildJob(module_path=module_path, timer="host", csv_path=str(tmp_path / "t.csv"),
                    progress_path=str(tmp_path / "p.txt"), time_configs=list(names), **fields)


def test_without_a_ready_file_batches_follow_the_list(tmp_path):
    assert list(config_batches(_job(tmp_path, batch=2))) == [NAMES[:2], NAMES[2:4], NAMES[4:]]
    assert list(config_batches(_job(tmp_path))) == [[name] for name in NAMES]


def test_configs_come_in_the_order_they_are_ready_and_failed_ones_never(tmp_path):
    ready = ReadyWriter(tmp_path / "ready.txt")
    job = _job(tmp_path, batch=2, ready_path=str(ready.path))
    order = [NAMES[3], NAMES[0], NAMES[4]]

    def tuner():
        for name in order:
            time.sleep(0.05)
            ready.ready(name)
        ready.failed(NAMES[1])
        ready.ready("BM999_BN16_BK16_GM1_SK1_nW1_nS1")  # another chunk's config: not this child's
        time.sleep(0.05)
        ready.end()  # NAMES[2] never compiled: the child does not wait for it past the end

    thread = threading.Thread(target=tuner)
    thread.start()
    timed = [name for batch in config_batches(job) for name in batch]
    thread.join()
    assert timed == order


def test_a_child_stops_waiting_once_every_config_is_accounted_for(tmp_path):
    ready = ReadyWriter(tmp_path / "ready.txt")
    for name in NAMES[:2]:
        ready.ready(name)
    ready.failed(NAMES[2])
    batches = list(config_batches(_job(tmp_path, names=NAMES[:3], batch=5, ready_path=str(ready.path))))
    assert batches == [NAMES[:2]]  # no "end" line needed


def test_half_written_lines_wait_for_their_end(tmp_path):
    path = tmp_path / "ready.txt"
    path.write_text(f"ready {NAMES[0]}\nready {NAMES[1][:5]}")  # the second line is still being written
    job = _job(tmp_path, names=NAMES[:2], ready_path=str(path))
    batches = config_batches(job)
    assert next(batches) == [NAMES[0]]
    with open(path, "a") as handle:
        handle.write(f"{NAMES[1][5:]}\n")
    assert next(batches) == [NAMES[1]]


def test_a_stop_request_ends_the_batches(tmp_path):
    stop = tmp_path / "stop"
    batches = config_batches(_job(tmp_path, stop_path=str(stop)))
    assert next(batches) == [NAMES[0]]
    request_stop(stop)
    assert list(batches) == []


def test_cupti_records_are_split_back_into_each_configs_launches():
    separator = (SEPARATOR_KERNEL, 0.0)
    records = [separator, ("k_a", 10.0), separator, ("k_a", 11.0),  # config a: 2 launches
               separator, ("k_b", 20.0), ("k_b_reduce", 1.0), separator, ("k_b", 21.0), ("k_b_reduce", 2.0),
               separator]  # config c raised in its first launch: a separator, no kernel
    rows = split_launches(records, [("a", 2), ("b", 2), ("c", 1)])
    assert rows["a"] == [KernelTiming("k_a", 0, 10.0), KernelTiming("k_a", 1, 11.0)]
    assert rows["b"] == [KernelTiming("k_b", 0, 20.0), KernelTiming("k_b_reduce", 0, 1.0),
                         KernelTiming("k_b", 1, 21.0), KernelTiming("k_b_reduce", 1, 2.0)]
    assert rows["c"] == []


# A stand-in for a generated module: every launcher sleeps a little; the third config kills its process.
BATCH_MODULE = FAKE_MODULE_HEAD + textwrap.dedent('''

    def sleeper(a, b, c):
        time.sleep(0.01)

    def dies(a, b, c):
        os._exit(7)

    LAUNCHERS = {NAME: (dies if i == 2 else sleeper) for i, NAME in enumerate(NAMES)}
''')


def test_a_crash_inside_a_batch_loses_no_other_config(tmp_path):
    module = tmp_path / "batch_module.py"
    module.write_text(f"NAMES = {NAMES!r}\n" + BATCH_MODULE)
    job = _job(tmp_path, module_path=str(module), batch=4, warmup=1, iters=2)
    outcome = run_child(job, tmp_path, interpret=True, config_timeout=30)
    assert list(outcome.failed) == [NAMES[2]] and "exit 7" in outcome.failed[NAMES[2]]
    assert outcome.restarts == 1
    # the first batch's two healthy configs ran in the dead child, unwritten: the next child timed them,
    # and each config's launches are in the CSV exactly once
    frame = pd.read_csv(tmp_path / "t.csv")
    counts = frame.groupby("kernel_name")["instance"].count()
    assert sorted(counts.index) == sorted(f"matmul_kernel_{name}" for name in NAMES if name != NAMES[2])
    assert (counts == 3).all()


def test_a_streaming_child_waits_for_compiles_longer_than_the_config_timeout(tmp_path):
    module = tmp_path / "batch_module.py"
    module.write_text(f"NAMES = {NAMES!r}\n" + BATCH_MODULE.replace("i == 2", "False"))
    ready = ReadyWriter(tmp_path / "ready.txt")
    job = _job(tmp_path, module_path=str(module), ready_path=str(ready.path), warmup=0, iters=1)

    def slow_compiles():
        for name in NAMES:
            time.sleep(1.0)  # 5 s in all, each gap under the 2 s timeout
            ready.ready(name)
        ready.end()

    thread = threading.Thread(target=slow_compiles)
    thread.start()
    outcome = run_child(job, tmp_path, interpret=True, config_timeout=2)
    thread.join()
    assert outcome.failed == {} and outcome.restarts == 0
    assert pd.read_csv(tmp_path / "t.csv")["kernel_name"].nunique() == len(NAMES)
