"""tune_gemm.compile.faults: the test-only fault hook parses its variable and does what each fault says."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tune_gemm.compile.faults import ENV_VAR, InjectedFault, injected_faults, trigger


def test_nothing_injected_by_default(monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert injected_faults() == {}


def test_variable_maps_configs_to_faults(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "BM16_BN16_BK16_GM1_SK1_nW1_nS1=raise, BM32_BN16_BK16_GM1_SK1_nW1_nS1=hang")
    assert injected_faults() == {"BM16_BN16_BK16_GM1_SK1_nW1_nS1": "raise", "BM32_BN16_BK16_GM1_SK1_nW1_nS1": "hang"}


def test_unknown_fault_is_refused(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "X=explode")
    with pytest.raises(ValueError, match="explode"):
        injected_faults()


@pytest.mark.parametrize("fault", ["raise", "compile"])
def test_raising_faults_raise(fault):
    with pytest.raises(InjectedFault):
        trigger(fault, on_gpu=False)


@pytest.mark.parametrize("fault,signal_number", [("crash", -6), ("memory", -11)])
def test_deadly_faults_kill_the_process(fault, signal_number):
    code = f"from tune_gemm.compile.faults import trigger; trigger({fault!r}, on_gpu=False)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60,
                         cwd=__import__("pathlib").Path(__file__).resolve().parents[2])
    assert run.returncode == signal_number


def test_hang_does_not_return():
    code = "from tune_gemm.compile.faults import trigger; trigger('hang', on_gpu=False)"
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", code], timeout=3,
                       cwd=__import__("pathlib").Path(__file__).resolve().parents[2])
