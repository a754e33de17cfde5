"""Files of the ROCm tuning script in, our results files out to its reader: tune_gemm.files.rocm_files, tune_gemm.files.sizes and
tune_gemm.files.results against hand-written fixtures in the script's styles (tests/tuner/fixtures/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers import problem

from tune_gemm.cli import main
from tune_gemm.core.config import Config
from tune_gemm.core.errors import UserError
from tune_gemm.files.results import ResultEntry, record
from tune_gemm.files.rocm_files import config_fields, vendor_note
from tune_gemm.files.sizes import load_sizes

FIXTURES = Path(__file__).parent / "fixtures"
DEFAULTS = problem(1, 1, 1)

# The ROCm script's reader of a results file, re-implemented from ROCm/triton
# python/perf-kernels/tools/tune_gemm/tune_gemm.py (main: yaml.safe_load of the file; process_item) and
# utils/file_generator.py (read_config, gen_configStr), in its schedule_hint version:
#  - process_item indexes M, N, K, rowMajorA and rowMajorB (a missing one is a KeyError), deletes them, and
#    takes col_a = rowMajorA != 'T'; what is left of the entry is the config;
#  - read_config reads the config only through .get() of the keys below: no other key is read, a missing
#    one is None;
#  - gen_configStr (its --benchmark) upper-cases schedule_hint, and every value goes to the launch as it is.
ROCM_READ_KEYS = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "SPLIT_K", "num_warps", "num_stages",
                  "waves_per_eu", "matrix_instr_nonkdim", "kpack", "schedule_hint")


def rocm_reader(text: str) -> list[tuple[int, int, int, bool, bool, dict]]:
    read = []
    for item in yaml.safe_load(text):
        item = dict(item)
        M, N, K = item.pop("M"), item.pop("N"), item.pop("K")
        col_a, col_b = item.pop("rowMajorA") != "T", item.pop("rowMajorB") != "T"
        read.append((M, N, K, col_a, col_b, {key: item.get(key) for key in ROCM_READ_KEYS}))
    return read


def rocm_config_str(config: dict) -> str:
    """gen_configStr's name of a config, in its order (EU, kP, mfma, sched)."""
    c = config
    return (f"BM{c['BLOCK_SIZE_M']}_BN{c['BLOCK_SIZE_N']}_BK{c['BLOCK_SIZE_K']}_GM{c['GROUP_SIZE_M']}_SK{c['SPLIT_K']}"
            f"_nW{c['num_warps']}_nS{c['num_stages']}_EU{c['waves_per_eu']}_kP{c['kpack']}"
            f"_mfma{c['matrix_instr_nonkdim']}_sched{c['schedule_hint'].upper().replace('-', '_')}")


EXPECTED = {
    "rocm_v3_results.yaml": [
        (problem(32, 32, 64, col_b=True), Config(16, 16, 32, 1, 1, 1, 0, 0, 16, 1)),
        (problem(16, 48, 128), Config(16, 16, 32, 1, 2, 1, 0, 0, 16, 2)),
    ],
    "rocm_v34_results.yaml": [  # instruction_sched_variant '"default"': quotes and all, as v3.4 wrote it
        (problem(24, 40, 48, col_a=True), Config(16, 32, 16, 1, 1, 2, 0, 0, 16, 1, schedule_hint="default")),
        (problem(32, 16, 32, col_b=True), Config(32, 16, 16, 1, 1, 1, 0, 0, 16, 1, schedule_hint="ck_v3")),
    ],
    "rocm_latest_results.yaml": [
        (problem(64, 32, 33, col_b=True), Config(32, 32, 32, 2, 1, 4, 2, 0, 32, 2, schedule_hint="none")),
        (problem(16, 16, 256, col_a=True, col_b=True),
         Config(16, 16, 64, 1, 4, 1, 2, 0, 16, 2, schedule_hint="local-prefetch")),
    ],
}


# --- their files in -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_rocm_results_files_load_unchanged(name):
    requests = load_sizes(FIXTURES / name, DEFAULTS)
    assert [(r.problem, r.config) for r in requests] == EXPECTED[name]


def test_rocm_sizes_file_loads_without_configs():
    requests = load_sizes(FIXTURES / "rocm_input_sizes.yaml", DEFAULTS)
    assert [(r.problem, r.config) for r in requests] == [(problem(32, 32, 32, col_b=True), None),
                                                         (problem(16, 48, 40, col_b=True), None)]


def test_both_hint_keys_must_agree():
    entry = {"BLOCK_SIZE_M": 16, "schedule_hint": "none", "instruction_sched_variant": '"none"'}
    assert config_fields(entry, "f entry 1") == {"BLOCK_SIZE_M": 16, "schedule_hint": "none"}
    with pytest.raises(UserError, match=r"f entry 2: schedule_hint 'none' and instruction_sched_variant 'iglp0'"):
        config_fields({**entry, "instruction_sched_variant": "iglp0"}, "f entry 2")


def test_a_bad_hint_in_a_file_names_the_entry(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("- {M: 16, N: 16, K: 16, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16}\n"
                    "- {M: 16, N: 16, K: 16, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 16, BLOCK_SIZE_K: 16, "
                    "instruction_sched_variant: 'print(1); x'}\n")
    with pytest.raises(UserError, match=rf"{path} entry 2: schedule_hint must be"):
        load_sizes(path, DEFAULTS)


# --- our files out to their reader ----------------------------------------------------------------------------------


def written(tmp_path: Path, entries: list[tuple]) -> str:
    path = tmp_path / "ours.yaml"
    for p, config in entries:
        record(path, ResultEntry(p, config, 12.5, p.tflops(12.5), "AMD Instinct MI300X", "rocprofv3", 10.0))
    return path.read_text()


def test_our_amd_results_read_by_their_reader(tmp_path):
    config = Config(128, 64, 64, 8, 1, 8, 2, 0, 16, 2, schedule_hint="none")
    [(M, N, K, col_a, col_b, read)] = rocm_reader(written(tmp_path, [(problem(256, 128, 512, col_b=True), config)]))
    assert (M, N, K, col_a, col_b) == (256, 128, 512, False, True)
    assert read == config.as_dict()  # every key it reads is there, spelled and typed as it writes them
    assert Config.parse(rocm_config_str(read)) == config  # and the name it would print reads back here


def test_our_nvidia_results_read_by_their_reader(tmp_path):
    # no AMD knobs: its reader gets None for them (its launch needs them: see README, "Coming from the ROCm script")
    config = Config(128, 256, 64, 8, 1, 8, 3)
    [(M, N, K, col_a, col_b, read)] = rocm_reader(written(tmp_path, [(problem(4096, 4096, 4096), config)]))
    assert (M, N, K, col_a, col_b) == (4096, 4096, 4096, False, False)
    assert {k: v for k, v in read.items() if v is not None} == config.as_dict()
    assert read["waves_per_eu"] is read["schedule_hint"] is None


def test_our_keys_and_values_are_spelled_as_theirs(tmp_path):
    theirs = yaml.safe_load((FIXTURES / "rocm_latest_results.yaml").read_text())
    ours = yaml.safe_load(written(tmp_path, EXPECTED["rocm_latest_results.yaml"]))
    for their_entry, our_entry in zip(theirs, ours):
        assert list(our_entry)[:len(their_entry)] == list(their_entry)  # same keys, same order, ours after
        assert {k: (v, type(v)) for k, v in our_entry.items() if k in their_entry} == \
            {k: (v, type(v)) for k, v in their_entry.items()}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_round_trip_theirs_ours_written_reread(tmp_path, name):
    requests = load_sizes(FIXTURES / name, DEFAULTS)
    text = written(tmp_path, [(r.problem, r.config) for r in requests])
    assert [(r.problem, r.config) for r in load_sizes(tmp_path / "ours.yaml", DEFAULTS)] == EXPECTED[name]
    for (M, N, K, col_a, col_b, read), (p, config) in zip(rocm_reader(text), EXPECTED[name]):
        assert (M, N, K, col_a, col_b) == (p.M, p.N, p.K, p.col_a, p.col_b)
        assert read == {key: config.as_dict().get(key) for key in ROCM_READ_KEYS}


# --- off AMD: one note ----------------------------------------------------------------------------------------------


def test_vendor_note_names_what_changes():
    configs = [config for _, config in EXPECTED["rocm_v34_results.yaml"]]
    note = vendor_note(configs, "nvidia", "f.yaml")
    assert note == ("note: f.yaml holds AMD-only settings, not taken here (nvidia): AMD-only knobs (waves_per_eu, "
                    "matrix_instr_nonkdim, kpack, schedule_hint) are ignored; num_stages 0 (AMD's stream pipeliner, "
                    "which double-buffers) runs as num_stages 2")
    assert vendor_note(configs, "amd", "f.yaml") is None
    assert vendor_note([Config(16, 16, 16)], "nvidia", "f.yaml") is None
    assert vendor_note([Config(16, 16, 16, num_stages=0)], "nvidia", "f.yaml").endswith("runs as num_stages 2")


def test_compare_wo_tuning_runs_a_rocm_file_with_one_note(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["--gemm_size_file", str(FIXTURES / "rocm_v3_results.yaml"), "--compare_wo_tuning",
                 "--interpret"]) == 0
    out = capsys.readouterr().out
    assert out.count("note:") == 1 and "runs as num_stages 2" in out
    assert out.count("PASS") == 2 and "2 passed, 0 failed" in out
