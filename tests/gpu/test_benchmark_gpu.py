"""On a GPU (`pytest -m gpu`, device machine): --benchmark over a file written in the ROCm script's styles,
its report as a --reference (a pass and a forced regression), two configs of one size in one file, and --config_str
with a ROCm-printed name."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
import torch
import yaml
from helpers import H100_FP16_PEAK_TFLOPS

from tune_gemm.cli import main

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

AMD = {"waves_per_eu": 0, "matrix_instr_nonkdim": 16}
# Written as the ROCm script writes them ("- " + str(entry) + " # TFLOPS: ..."): the v3.4 style (num_stages 0,
# instruction_sched_variant with its quotes) and the latest one (schedule_hint).
ENTRIES = [
    {"M": 1024, "N": 1024, "K": 1024, "rowMajorA": "T", "rowMajorB": "N", "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128,
     "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "SPLIT_K": 1, "num_warps": 8, "num_stages": 0, **AMD, "kpack": 2,
     "instruction_sched_variant": '"default"'},
    {"M": 16, "N": 4096, "K": 4096, "rowMajorA": "T", "rowMajorB": "T", "BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 128,
     "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "SPLIT_K": 4, "num_warps": 4, "num_stages": 3, **AMD, "kpack": 1,
     "schedule_hint": "none"},
    {"M": 512, "N": 512, "K": 512, "rowMajorA": "N", "rowMajorB": "T", "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64,
     "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 4, "SPLIT_K": 1, "num_warps": 4, "num_stages": 2, **AMD, "kpack": 1,
     "schedule_hint": "none"},
]
ROCM_FILE = "".join(f"- {entry} # TFLOPS: 100.00 time(us): 10.00\n" for entry in ENTRIES)


@pytest.fixture(scope="module")
def benchmarked(tmp_path_factory):
    directory = tmp_path_factory.mktemp("bench")
    sizes = directory / "rocm_results.yaml"
    sizes.write_text(ROCM_FILE)
    report = directory / "report.yaml"
    return directory, sizes, report, main(["--gemm_size_file", str(sizes), "--benchmark", "--iters", "50",
                                           "--benchmark_results_file", str(report)])


def test_benchmark_runs_the_rocm_file_and_reports(benchmarked, capsys):
    _, _, report, code = benchmarked
    assert code == 0
    entries = yaml.safe_load(report.read_text())
    assert [(e["M"], e["N"], e["K"]) for e in entries] == [(1024, 1024, 1024), (16, 4096, 4096), (512, 512, 512)]
    assert entries[0]["num_stages"] == 2  # AMD's 0 runs as 2 here
    for entry in entries:
        print(f"{entry['M']}x{entry['N']}x{entry['K']}: {entry['time_us']} us, {entry['tflops']} TFLOP/s, "
              f"torch.matmul {entry['matmul_time_us']} us, error {entry['relative_error']}")
        assert entry["correct"] is True and entry["iters"] == 50
        assert not {"waves_per_eu", "matrix_instr_nonkdim", "kpack", "schedule_hint"} & set(entry)
        assert 0 < entry["tflops"] < H100_FP16_PEAK_TFLOPS and entry["matmul_time_us"] > 0
        assert entry["time_us"] < 10 * entry["matmul_time_us"], entry  # a sane config, not a broken timer


def test_report_as_reference_passes_and_a_doubled_one_fails(benchmarked, capsys):
    directory, sizes, report, _ = benchmarked
    junit = directory / "junit.xml"
    # the same configs again: within 0.7 of themselves (GPU noise on ~20 us kernels stays far inside that)
    assert main(["--gemm_size_file", str(sizes), "--benchmark", "--iters", "50", "--reference", str(report),
                 "--threshold", "0.7", "--junit", str(junit), "--benchmark_results_file", str(directory / "r2.yaml")]) == 0
    out = capsys.readouterr().out
    assert out.count("PASS") >= 4 and "PASS geometric mean of 3 ratio(s)" in out
    assert ET.parse(junit).getroot().get("failures") == "0"
    doubled = directory / "doubled.yaml"
    doubled.write_text(yaml.safe_dump([{**e, "time_us": e["time_us"] / 2} for e in yaml.safe_load(report.read_text())]))
    assert main(["--gemm_size_file", str(sizes), "--benchmark", "--iters", "50", "--reference", str(doubled),
                 "--benchmark_results_file", str(directory / "r3.yaml")]) == 1
    assert "FAIL geometric mean of 3 ratio(s)" in capsys.readouterr().out


def test_config_str_with_a_rocm_printed_name(capsys):
    assert main(["--config_str", "M512_N512_K512_BM64_BN64_BK64_GM4_SK1_nW4_nS0_EU0_kP2_mfma16_schedNONE",
                 "--iters", "50"]) == 0
    out = capsys.readouterr().out
    assert out.count("note:") == 1 and "PASS 512x512x512 fp16->fp16 TT BM64_BN64_BK64_GM4_SK1_nW4_nS2: " in out


def test_two_configs_of_one_size_are_each_compiled_and_run(tmp_path, capsys):
    # each entry's module is written at its size's path: the compile worker, which lives through the run, must load
    # the second one, not the first it holds (it failed with "does not compile: KeyError" when it did)
    size = {"M": 512, "N": 1024, "K": 256, "rowMajorA": "T", "rowMajorB": "T", "GROUP_SIZE_M": 1, "SPLIT_K": 1,
            "num_warps": 4, "num_stages": 3, "BLOCK_SIZE_K": 64}
    entries = [{**size, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64}, {**size, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64}]
    sizes, report = tmp_path / "two.yaml", tmp_path / "report.yaml"
    sizes.write_text(yaml.safe_dump(entries))
    assert main(["--gemm_size_file", str(sizes), "--benchmark", "--iters", "20", "--benchmark_results_file",
                 str(report)]) == 0
    written = yaml.safe_load(report.read_text())
    assert [e["BLOCK_SIZE_M"] for e in written] == [64, 128] and all(e["correct"] is True for e in written), written
    assert "does not compile" not in capsys.readouterr().out
