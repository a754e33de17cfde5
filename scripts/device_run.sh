#!/usr/bin/env bash
# One device-machine call: GPU tests, then full-space tuning of the closing-note sizes and the benchmark.
# Usage (device tool, carry .whl): bash scripts/device_run.sh [tests|tune]
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
ROOT=$PWD
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } | tee "$OUT/gpu.txt"
if [ "${1:-tests}" = tests ]; then
  python3 -m pytest -m gpu -q -s -p no:cacheprovider tests/gpu 2>&1 | tee "$OUT/pytest_gpu.log" | grep -E "passed|failed|error|winner|FAILED|Error" | tail -40
fi
if [ "${1:-tune}" = tune ] || [ "${2:-}" = tune ]; then
  cd /tmp && rm -f tuned.yaml
  for size in "-m 4096 -n 4096 -k 4096" "-m 16 -n 4096 -k 4096"; do
    ( time python3 "$ROOT/tune_gemm.py" $size --compare --tuning_results_file /tmp/tuned.yaml ) 2>&1 | tee -a "$OUT/tune.log"
  done
  cp /tmp/tuned.yaml "$OUT/"
  python3 "$ROOT/benchmarks/bench_gemm.py" /tmp/tuned.yaml --csv "$OUT/bench.csv" 2>&1 | tee "$OUT/bench.log"
fi
