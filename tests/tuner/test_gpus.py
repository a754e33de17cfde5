"""tune_gemm.run.gpus: --ngpus / --gpu_ids validated into a selection, and the first GPU pinned for the child."""

from __future__ import annotations

import textwrap
from dataclasses import replace

import pytest
from helpers import FAKE_MODULE_HEAD

from tune_gemm import cli
from tune_gemm.cli import main
from tune_gemm.core.device import INTERPRETER_PROFILE
from tune_gemm.core.errors import UserError
from tune_gemm.measure.job import ChildJob
from tune_gemm.measure.runner import run_child
from tune_gemm.run import gpus
from tune_gemm.run.gpus import GpuSelection, parse_gpu_ids, pinning_env, select_gpus


def test_gpu_ids_are_parsed_in_order():
    assert parse_gpu_ids("0,1,3") == (0, 1, 3)
    assert parse_gpu_ids(" 2 , 0") == (2, 0)


@pytest.mark.parametrize("text,message", [
    ("a", "'a' is not a GPU id"),
    ("0,,1", "'' is not a GPU id"),
    ("1.5", "'1.5' is not a GPU id"),
    ("0,-1", "GPU ids are 0 or more, got -1"),
    ("0,2,0", "GPU 0 is listed more than once"),
])
def test_bad_gpu_ids(text, message):
    with pytest.raises(UserError, match=message):
        parse_gpu_ids(text)


@pytest.mark.parametrize("ngpus,ids,expected", [
    (None, None, (0,)),  # neither flag: GPU 0
    (2, None, (0, 1)),
    (None, "3", (3,)),
    (None, "2,0", (2, 0)),
    (2, "3,1", (3, 1)),  # both, agreeing in number
])
def test_selection(ngpus, ids, expected):
    assert select_gpus(ngpus, ids, 4, "this machine").ids == expected


@pytest.mark.parametrize("ngpus,ids,message", [
    (0, None, "--ngpus must be at least 1, got 0"),
    (-2, None, "--ngpus must be at least 1"),
    (5, None, "--ngpus 5: this machine has 4 GPU"),
    (None, "1,4", "there is no GPU 4; this machine has 4 GPU.s. .ids 0 to 3."),
    (1, "0,1", "--ngpus 1 and --gpu_ids 0,1 disagree"),
    (3, "0,1", "disagree"),
])
def test_bad_selections(ngpus, ids, message):
    with pytest.raises(UserError, match=message):
        select_gpus(ngpus, ids, 4, "this machine")


def test_several_gpus_say_that_each_gets_a_worker():
    assert GpuSelection((1,)).note is None
    note = GpuSelection((2, 0, 3)).note
    assert "3 GPUs chosen (2,0,3)" in note and "one worker process per GPU" in note and "\n" not in note


@pytest.mark.parametrize("vendor,variable", [("nvidia", "CUDA_VISIBLE_DEVICES"), ("amd", "HIP_VISIBLE_DEVICES")])
def test_pinning_names_the_vendors_variable(vendor, variable):
    assert pinning_env(2, vendor, environ={}) == {variable: "2"}
    # this process already sees GPUs 4,6,7 as 0,1,2: its GPU 1 is the machine's GPU 6
    assert pinning_env(1, vendor, environ={variable: "4, 6,7"}) == {variable: "6"}


def test_no_gpu_leaves_the_message_to_device_detection(monkeypatch):
    monkeypatch.setattr(gpus, "available_gpus", lambda: 0)
    assert gpus.gpus_for_run(None, "3", interpret=False).ids == (0,)
    monkeypatch.setattr(gpus, "available_gpus", lambda: 2)
    assert gpus.gpus_for_run(None, "1", interpret=False).ids == (1,)
    with pytest.raises(UserError, match="this machine has 2 GPU"):
        gpus.gpus_for_run(3, None, interpret=False)


PRINT_ENV_MODULE = FAKE_MODULE_HEAD + textwrap.dedent('''
    from pathlib import Path

    def note_gpus(a, b, c):  # writes the GPUs the child sees beside this module, then computes C
        Path(__file__).with_suffix(".gpus").write_text(os.environ["CUDA_VISIBLE_DEVICES"])
        return c.copy_(a @ b)

    LAUNCHERS = {"BM16_BN16_BK16_GM1_SK1_nW1_nS1": note_gpus}
''')


def test_the_pinned_gpu_reaches_the_child(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    module = tmp_path / "print_env.py"
    module.write_text(PRINT_ENV_MODULE)
    job = ChildJob(module_path=str(module), timer="host", csv_path=str(tmp_path / "t.csv"),
                   progress_path=str(tmp_path / "p.txt"), check_path=str(tmp_path / "c.json"),
                   check_configs=["BM16_BN16_BK16_GM1_SK1_nW1_nS1"], env=pinning_env(3, "nvidia"))
    outcome = run_child(job, tmp_path, interpret=True, config_timeout=60)
    assert list(outcome.errors) == ["BM16_BN16_BK16_GM1_SK1_nW1_nS1"] and not outcome.failed
    assert (tmp_path / "print_env.gpus").read_text() == "3"


@pytest.mark.parametrize("args,message", [
    (["--gpu_ids", "1"], "there is no GPU 1; the interpreter (--interpret) has 1 GPU(s) (id 0)"),
    (["--gpu_ids", "0,1"], "there is no GPU 1; the interpreter (--interpret) has 1 GPU(s)"),  # --ngpus 2 allows it
    (["--gpu_ids", "0,0"], "listed more than once"),
    (["--gpu_ids", "-1"], "GPU ids are 0 or more"),
    (["--gpu_ids", "x"], "is not a GPU id"),
    (["--ngpus", "0"], "--ngpus must be at least 1"),
    (["--ngpus", "2", "--gpu_ids", "0"], "disagree"),
])
def test_bad_gpu_flags_are_one_line_and_exit_2(tmp_path, monkeypatch, capsys, args, message):
    monkeypatch.chdir(tmp_path)
    assert main(["-m", "16", "-n", "16", "-k", "16", "--interpret", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_the_interpreter_is_gpu_0(tmp_path, space_file, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["-m", "16", "-n", "16", "-k", "16", "--interpret", "--space", str(space_file), "--iters", "1",
                 "--ngpus", "1", "--gpu_ids", "0", "--tuning_results_file", str(tmp_path / "out.yaml")])
    assert code == 0, capsys.readouterr()
    assert (tmp_path / "out.yaml").exists()


def test_the_cli_reads_the_first_gpu_pins_it_and_notes_the_rest(tmp_path, monkeypatch, capsys):
    """Without a GPU here: a four-GPU machine is faked up to the point where the run would start children."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(gpus, "available_gpus", lambda: 4)
    read = []
    monkeypatch.setattr(cli, "detect_device", lambda index: read.append(index) or replace(
        INTERPRETER_PROFILE, name=f"fake GPU {index}", vendor="nvidia"))
    settings = []
    monkeypatch.setattr(cli, "_compare_wo_tuning", lambda requests, tune_settings, *rest: settings.append(tune_settings))
    results = tmp_path / "results.yaml"
    results.write_text("- {M: 32, N: 32, K: 32, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16}\n")
    main(["--gemm_size_file", str(results), "--compare_wo_tuning", "--gpu_ids", "2,3"])
    assert read == [2]
    assert settings[0].child_env == {"CUDA_VISIBLE_DEVICES": "2"}
    assert "2 GPUs chosen (2,3)" in capsys.readouterr().out
    settings.clear()
    main(["--gemm_size_file", str(results), "--compare_wo_tuning"])
    assert settings[0].child_env == {}  # no flag: the environment is left as it is
