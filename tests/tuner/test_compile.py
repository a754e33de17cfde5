"""tune_gemm.compile.pool: both pools report every config once, agree on which compile, and stream as they go; the
worker processes are kept from one stream to the next, and never outlive their owner; what the compiler prints in
a worker stays off the tuner's output, a failed config's kept in a log file and named in its reason.

Without a GPU (and without the interpreter) every config fails to compile (no active driver): the
failures are recorded with their reason, never raised. On a GPU the same test compares the pools."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import fresh_kernel_families, problem

import tune_gemm.compile.pool
import tune_gemm.generate.loader
from tune_gemm.compile.faults import ENV_VAR
from tune_gemm.compile.pool import (
    COMPILER_LOGS,
    WORKER_PROCESSES,
    compile_all,
    compile_stream,
)
from tune_gemm.core.config import Config
from tune_gemm.generate import write_module
from tune_gemm.generate.parts import write_parts

NAMES = ["BM16_BN16_BK16_GM1_SK1_nW1_nS1", "BM32_BN32_BK32_GM1_SK1_nW4_nS2", "BM64_BN32_BK32_GM1_SK2_nW4_nS2"]


@pytest.fixture
def compiled_kernels(monkeypatch):
    """Compiled kernels, as on a GPU: the families a generated module imports decorated anew as JIT functions."""
    fresh_kernel_families(monkeypatch)
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)


@pytest.fixture
def module(tmp_path, compiled_kernels):
    return write_module(problem(64, 64, 64), [Config.parse(name) for name in NAMES], tmp_path)


def test_process_and_thread_pools_report_the_same_outcome(module):
    outcomes = {pool: compile_all(module, NAMES, 2, interpret=False, pool=pool) for pool in ("process", "thread")}
    for outcome in outcomes.values():
        assert sorted([*outcome.compiled, *outcome.failed]) == sorted(NAMES)
        assert all(reason for reason in outcome.failed.values())
    assert sorted(outcomes["process"].compiled) == sorted(outcomes["thread"].compiled)


def test_the_stream_yields_each_result_and_can_be_closed_early(module):
    stream = compile_stream(module, NAMES, 1, interpret=False, pool="thread")
    first = next(stream)
    assert first[0] in NAMES
    stream.close()  # the search closes it when a time budget runs out


def test_an_unknown_pool_is_refused(module):
    with pytest.raises(ValueError, match="compile pool must be one of"):
        next(compile_stream(module, NAMES, 1, interpret=False, pool="fork"))


class _PrintingCompiler:
    """Stands in for a worker's compiler: prints to file descriptor 2, as MLIR's diagnostics do (in a worker process
    sys.stderr writes there too; under pytest's capture it does not)."""

    def __init__(self, reason: str | None, printed: bytes):
        self.reason, self.printed = reason, printed

    def compile(self, task):
        os.write(2, self.printed)
        return task[0], self.reason, {}


ERROR_LINE = b"part0.py:6:32: error: 'tt.descriptor_store' op tensor descriptor block and tensor types must match\n"


def test_a_failed_compile_prints_nothing_and_names_its_first_error(tmp_path, monkeypatch, capfd):
    printed = ERROR_LINE + b"part0.py:15:76: note: called from\npart0.py:1:0: error: Failures have been detected\n"
    monkeypatch.setattr(tune_gemm.compile.pool, "_worker", _PrintingCompiler("RuntimeError: PassManager::run failed", printed))
    name, reason, _ = tune_gemm.compile.pool._compile_in_worker((NAMES[0], str(tmp_path / "generated_kernel_64x64x64.py")))
    assert capfd.readouterr().err == ""
    log = tmp_path / COMPILER_LOGS / f"{NAMES[0]}.log"
    assert log.read_text() == printed.decode()
    assert reason == ("RuntimeError: PassManager::run failed ('tt.descriptor_store' op tensor descriptor block and "
                      f"tensor types must match; compiler log {log})")
    print("the tuner's own output", file=sys.stderr)  # file descriptor 2 is the tuner's again
    assert capfd.readouterr().err == "the tuner's own output\n"


def test_a_compiled_config_prints_nothing_and_leaves_no_log(tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(tune_gemm.compile.pool, "_worker", _PrintingCompiler(None, ERROR_LINE))
    assert tune_gemm.compile.pool._compile_in_worker((NAMES[0], str(tmp_path / "m.py"))) == (NAMES[0], None, {})
    assert capfd.readouterr().err == ""
    assert not (tmp_path / COMPILER_LOGS).exists()


def test_a_failure_without_an_error_line_points_at_its_log(tmp_path):
    log = tmp_path / COMPILER_LOGS / "c.log"
    assert tune_gemm.compile.pool.with_compiler_log("OutOfResources: shared memory", "", log) == "OutOfResources: shared memory"
    assert not log.exists()
    assert (tune_gemm.compile.pool.with_compiler_log("OutOfResources: shared memory", "ptxas info\n", log)
            == f"OutOfResources: shared memory (compiler log {log})")
    assert log.read_text() == "ptxas info\n"


MORE = [*NAMES, "BM16_BN32_BK16_GM1_SK1_nW1_nS1", "BM32_BN16_BK16_GM1_SK2_nW1_nS1"]


@pytest.fixture
def parts(tmp_path):
    return write_parts(problem(64, 64, 64), [Config.parse(name) for name in MORE], tmp_path, size=2)  # 3 parts


@pytest.fixture
def loads(monkeypatch) -> list[str]:
    """Every module path loaded in this process."""
    loaded, real = [], tune_gemm.generate.loader.load_module
    monkeypatch.setattr(tune_gemm.generate.loader, "load_module", lambda path: loaded.append(str(path)) or real(path))
    return loaded


def test_configs_of_several_parts_each_compile_from_their_part_loaded_once(tmp_path, parts, loads, monkeypatch,
                                                                          interpreter_env):
    monkeypatch.setenv(ENV_VAR, f"{MORE[3]}=compile")
    # the whole module is never written: every config must come from its part
    outcome = compile_all(tmp_path / "generated_kernel_absent.py", MORE, 1, interpret=True, parts=parts)
    assert outcome.compiled == [name for name in MORE if name != MORE[3]]
    assert "InjectedFault" in outcome.failed[MORE[3]]
    assert sorted(loads) == sorted({str(path) for path in parts.values()})  # each part once


def test_threads_share_one_load_of_each_part(tmp_path, parts, loads, compiled_kernels):
    # compiled kernels: without a GPU, each fails to compile
    outcome = compile_all(tmp_path / "generated_kernel_absent.py", MORE, 3, interpret=False, pool="thread",
                          parts=parts)
    assert sorted([*outcome.compiled, *outcome.failed]) == sorted(MORE)
    assert sorted(loads) == sorted({str(path) for path in parts.values()})


def test_process_workers_load_configs_from_their_parts(tmp_path, parts, compiled_kernels):
    # loading the absent whole module would raise out of the stream: every result here came from a part
    outcome = compile_all(tmp_path / "generated_kernel_absent.py", MORE, 2, interpret=False, parts=parts)
    assert sorted([*outcome.compiled, *outcome.failed]) == sorted(MORE)


def test_configs_without_a_part_come_from_the_module(module, parts, loads, interpreter_env):
    outcome = compile_all(module, MORE, 1, interpret=True, parts={name: parts[name] for name in MORE[3:]})
    assert outcome.compiled == MORE
    assert sorted(loads) == sorted({str(module), *(str(parts[name]) for name in MORE[3:])})


def test_the_next_stream_reuses_the_worker_processes(module):
    WORKER_PROCESSES.stop()
    starts = WORKER_PROCESSES.starts
    for _ in range(2):  # e.g. two rounds of a search, or two sizes
        outcome = compile_all(module, NAMES, 2, interpret=False)
        assert sorted([*outcome.compiled, *outcome.failed]) == sorted(NAMES)
    assert WORKER_PROCESSES.starts == starts + 1 and WORKER_PROCESSES.running


def test_workers_are_ready_once_each_has_loaded_the_compiler():
    WORKER_PROCESSES.stop()
    assert not WORKER_PROCESSES.wait_ready(1.0)  # no pool: nothing to wait for
    pool = WORKER_PROCESSES.get(2)
    assert not WORKER_PROCESSES.wait_ready(0.0)  # spawned a moment ago: still importing Triton
    assert WORKER_PROCESSES.wait_ready(120.0)
    assert "triton" in pool.apply(_loaded_modules)  # loaded before any config asked for it
    assert WORKER_PROCESSES.wait_ready(0.0)  # and they stay ready
    WORKER_PROCESSES.stop()
    assert not WORKER_PROCESSES.wait_ready(0.0)


def _loaded_modules() -> list[str]:
    return list(sys.modules)


def test_a_stream_closed_early_keeps_the_workers_for_the_next(module):
    WORKER_PROCESSES.stop()
    stream = compile_stream(module, NAMES, 2, interpret=False)
    assert next(stream)[0] in NAMES
    stream.close()  # a spent time budget: the next round or size needs workers at once
    assert WORKER_PROCESSES.running
    starts = WORKER_PROCESSES.starts
    assert len(compile_all(module, NAMES, 2, interpret=False).failed) == len(NAMES)  # no GPU here
    assert WORKER_PROCESSES.starts == starts


def test_a_stream_whose_module_does_not_load_fails_and_stops_the_workers(tmp_path):
    broken = tmp_path / "generated_kernel_broken.py"
    broken.write_text("raise ImportError('broken on purpose')\n")
    with pytest.raises(ImportError, match="broken on purpose"):
        compile_all(broken, NAMES, 2, interpret=False)
    assert not WORKER_PROCESSES.running


class _InlinePool:
    """Stands in for the worker processes: runs each task handed to it at once, in the caller's thread."""

    def __init__(self):
        self.handed = []

    def apply_async(self, func, args, callback, error_callback):
        self.handed.append(args[0][0])
        try:
            result = func(*args)
        except Exception as error:
            error_callback(error)
        else:
            callback(result)


def test_a_stream_hands_out_a_window_of_configs_at_a_time(monkeypatch):
    monkeypatch.setattr(tune_gemm.compile.pool, "_compile_in_worker", lambda task: (task[0], None, {}))
    pool, names = _InlinePool(), [f"config{i}" for i in range(5)]
    stream = tune_gemm.compile.pool._windowed(pool, [(name, "module.py") for name in names], window=2)
    yielded = []
    for result in stream:
        yielded.append(result[0])
        assert len(pool.handed) - len(yielded) <= 2
        if len(yielded) == 2:
            break
    stream.close()
    assert yielded == names[:2] and pool.handed == names[:4]  # closed: the last config is never handed out


def test_a_worker_exception_is_raised_by_the_stream(monkeypatch):
    def compile_fails(task):
        raise ImportError(f"{task[1]} does not load")

    monkeypatch.setattr(tune_gemm.compile.pool, "_compile_in_worker", compile_fails)
    with pytest.raises(ImportError, match="module.py does not load"):
        list(tune_gemm.compile.pool._windowed(_InlinePool(), [("config", "module.py")], window=2))


def test_a_changed_environment_starts_new_workers(module, monkeypatch, tmp_path):
    compile_all(module, NAMES[:1], 2, interpret=False)
    starts = WORKER_PROCESSES.starts
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cold_cache"))  # what bench_search --cache cold does
    compile_all(module, NAMES[:1], 2, interpret=False)
    assert WORKER_PROCESSES.starts == starts + 1


_ORPHANING_OWNER = """
import os, sys
from tune_gemm.compile.pool import WORKER_PROCESSES
pool = WORKER_PROCESSES.get(2)
pids = [pool.apply(os.getpid) for _ in range(8)]
print(*sorted(set(pids)), flush=True)
os._exit(0)  # as a tune_gemm.run.workers worker leaves: no atexit, so WORKER_PROCESSES.stop never runs
"""


def test_workers_exit_when_their_owner_ends_without_stopping_them(tmp_path):
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "-c", _ORPHANING_OWNER.format(root=root)], capture_output=True,
                          text=True, timeout=120, check=True)
    pids = [int(pid) for pid in done.stdout.split()]
    assert pids
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(")")[-1].split()[0] == "Z")  # a zombie has exited
