#!/usr/bin/env bash
# First device check: installs carried wheels, runs a few tuning commands, logs to $OUT.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
nvidia-smi --query-gpu=name,driver_version --format=csv | tee $OUT/gpu.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" | tee -a $OUT/gpu.txt
cat > /tmp/small.yaml <<'Y'
BLOCK_SIZE_M: [16, 32, 64]
BLOCK_SIZE_N: [16, 32, 64]
BLOCK_SIZE_K: [32, 64]
num_warps: [2, 4]
num_stages: [2, 3]
SPLIT_K: [1, 4]
GROUP_SIZE_M: [1, 8]
Y
cd /tmp
for prof in cupti events; do
  timeout 200 python3 $OLDPWD/tune_gemm.py -m 16 -n 4096 -k 4096 --space /tmp/small.yaml --profiler $prof --compare --verbose --tuning_results_file /tmp/r_$prof.yaml 2>&1 | tee $OUT/small_$prof.log
done
timeout 300 python3 $OLDPWD/tune_gemm.py -m 4096 -n 4096 -k 4096 --compare --tuning_results_file /tmp/r_big.yaml 2>&1 | tee $OUT/big.log
cp /tmp/r_*.yaml $OUT/ 2>/dev/null
timeout 60 python3 $OLDPWD/tune_gemm.py --gemm_size_file /tmp/r_big.yaml --compare_wo_tuning 2>&1 | tee $OUT/cwt.log
