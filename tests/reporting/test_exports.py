"""tune_gemm.outputs.export_triton and export_json: both round-trip to the same configs and the same run-time table."""

from __future__ import annotations

import json

import pytest

from tune_gemm.core.config import Config
from tune_gemm.generate.loader import load_module
from tune_gemm.outputs.export_json import file_name, write_json
from tune_gemm.outputs.export_triton import config_of, module_name, write_triton
from tune_gemm.runtime.table import Table, Variant, read_tuned

H100 = "NVIDIA H100 80GB HBM3"
RESULTS = f"""\
- {{M: 16, N: 4096, K: 4096, BLOCK_SIZE_M: 16, BLOCK_SIZE_N: 64, BLOCK_SIZE_K: 128, SPLIT_K: 4, num_warps: 4, num_stages: 4, gpu: {H100}, time_us: 10.1}}
- {{M: 200, N: 4096, K: 4096, BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 128, BLOCK_SIZE_K: 64, GROUP_SIZE_M: 8, num_warps: 4, num_stages: 3, gpu: {H100}, time_us: 30.5}}
- {{M: 300, N: 4096, K: 4096, BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 128, BLOCK_SIZE_K: 64, GROUP_SIZE_M: 8, num_warps: 4, num_stages: 3, gpu: {H100}}}
- {{M: 4096, N: 4096, K: 4096, BLOCK_SIZE_M: 128, BLOCK_SIZE_N: 256, BLOCK_SIZE_K: 32, GROUP_SIZE_M: 16, num_warps: 8, num_stages: 5, gpu: {H100}, time_us: 188.8, matmul_time_us: 177.7}}
- {{M: 4096, N: 4096, K: 4096, rowMajorB: N, dtype_a: bf16, dtype_b: bf16, dtype_c: bf16, BLOCK_SIZE_M: 128, BLOCK_SIZE_N: 128, BLOCK_SIZE_K: 64, num_warps: 8, num_stages: 4, gpu: {H100}}}
- {{M: 512, N: 512, K: 512, BLOCK_SIZE_M: 64, BLOCK_SIZE_N: 64, BLOCK_SIZE_K: 32, num_warps: 4, num_stages: 0, waves_per_eu: 0, matrix_instr_nonkdim: 16, kpack: 2, gpu: AMD Instinct MI300X}}
- {{M: 64, N: 64, K: 64, BLOCK_SIZE_M: 32, BLOCK_SIZE_N: 32, BLOCK_SIZE_K: 32}}
"""


@pytest.fixture
def results(tmp_path):
    path = tmp_path / "output_tuning.yaml"
    path.write_text(RESULTS)
    return path


def test_triton_export_imports_and_gives_back_each_gpus_configs(results, tmp_path):
    entries = read_tuned(results)
    paths = write_triton(entries, results, tmp_path)
    assert sorted(p.name for p in paths) == sorted(f"{module_name(gpu)}.py" for gpu in (H100, "AMD Instinct MI300X",
                                                                                         None))
    for path in paths:
        module = load_module(path)
        expected = list(dict.fromkeys(e.config for e in entries if e.gpu == module.DEVICE))  # distinct, in file order
        assert [config_of(c) for c in module.CONFIGS] == expected
        assert module.SOURCE == str(results)
    amd = load_module(tmp_path / f"{module_name('AMD Instinct MI300X')}.py").CONFIGS[0]
    assert amd.kwargs["matrix_instr_nonkdim"] == 16 and amd.num_stages == 0  # AMD knobs are kwargs, as on ROCm
    h100 = load_module(tmp_path / "triton_configs_NVIDIA_H100_80GB_HBM3.py").CONFIGS
    assert len(h100) == 4  # 200 and 300 share one config
    assert set(h100[0].kwargs) == {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "SPLIT_K"}


def test_triton_export_passes_num_ctas_as_an_option_of_triton_config(tmp_path):
    results = tmp_path / "r.yaml"
    results.write_text(f"- {{M: 4096, N: 4096, K: 4096, BLOCK_SIZE_M: 128, BLOCK_SIZE_N: 128, BLOCK_SIZE_K: 64, "
                       f"num_warps: 4, num_stages: 3, PERSISTENT_TMA: 1, num_ctas: 2, gpu: {H100}}}\n")
    [path] = write_triton(read_tuned(results), results, tmp_path)
    [exported] = load_module(path).CONFIGS
    # not a kwarg: triton.Config's own num_ctas (1) would override it at launch
    assert exported.num_ctas == 2 and "num_ctas" not in exported.kwargs and exported.all_kwargs()["num_ctas"] == 2
    assert config_of(exported) == Config(128, 128, 64, 1, 1, 4, 3, PERSISTENT_TMA=1, num_ctas=2)


def test_triton_export_keeps_a_hostile_gpu_name_a_string(tmp_path):
    name = 'X"""\nimport os; os.system("false")  # \''
    results = tmp_path / "r.yaml"
    results.write_text(json.dumps([{"M": 16, "N": 16, "K": 16, "BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16,
                                    "BLOCK_SIZE_K": 16, "gpu": name}]))  # JSON is YAML
    [path] = write_triton(read_tuned(results), results, tmp_path)
    assert path.name == "triton_configs_X_import_os_os_system_false.py"
    assert load_module(path).DEVICE == name


def test_json_export_reads_back_to_the_same_table(results, tmp_path):
    entries = read_tuned(results)
    paths = write_json(entries, results, tmp_path)
    assert sorted(p.name for p in paths) == sorted(file_name(g) for g in (H100, "AMD Instinct MI300X", None))
    back = [entry for path in paths for entry in read_tuned(path)]
    assert sorted(back, key=str) == sorted(entries, key=str)
    original, reloaded = Table(entries), Table(back)
    for gpu in (H100, "AMD Instinct MI300X", "another GPU"):
        for variant in {Variant.of(e.problem) for e in entries}:
            assert reloaded.shapes(gpu, variant) == original.shapes(gpu, variant)


def test_json_buckets_hold_the_config_of_the_largest_m_in_each(results, tmp_path):
    write_json(read_tuned(results), results, tmp_path)
    document = json.loads((tmp_path / "NVIDIA_H100_80GB_HBM3-GEMM.json").read_text())
    assert document["device"] == H100 and document["buckets"]["small"] == "M <= 256"
    weights = document["configs"]["fp16->fp16 TT"]["N4096_K4096"]
    assert {bucket: cell["M"] for bucket, cell in weights.items()} == {"small": 200, "medium": 300, "large": 4096}
    assert Config.from_mapping(weights["small"]) == Config(64, 128, 64, 8, 1, 4, 3)
    assert list(document["configs"]["bf16->bf16 TN"]["N4096_K4096"]) == ["large"]
