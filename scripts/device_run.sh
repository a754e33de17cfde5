#!/usr/bin/env bash
# One device-machine call: GPU tests, then full-space tuning of the closing-note sizes and the benchmark.
# Usage (device tool, carry .whl): bash scripts/device_run.sh [tests|tune]
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
export PYTHONUNBUFFERED=1
# Everything goes to /tmp/o, packed into one archive in $OUT at the end (the device tool returns at most 8 files).
FINAL=${OUT:-/tmp/out}; OUT=/tmp/o; rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL"
trap 'tar -czf "$FINAL/device_out.tgz" -C "$OUT" .' EXIT
ROOT=$PWD
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } | tee "$OUT/gpu.txt"
if [ "${1:-tests}" = tests ]; then
  # the newest GPU tests first; the long tuning/ncu tests last (the call's time limit may cut them)
  timeout "${TEST_SECONDS:-270}" python3 -m pytest -m gpu -q -s -p no:cacheprovider tests/gpu/test_tma_family_gpu.py \
    tests/gpu/test_runtime_gpu.py tests/gpu/test_benchmark_gpu.py tests/gpu/test_run_knobs_gpu.py \
    tests/gpu/test_search_gpu.py tests/gpu/test_tuning_gpu.py tests/gpu/test_ncu_gpu.py 2>&1 \
    | tee "$OUT/pytest_gpu.log" | grep -E "passed|failed|error|winner|FAILED|Error|compile ahead" | tail -40
fi
if [ "${1:-tune}" = tune ]; then
  cd /tmp && rm -f tuned.yaml halving.yaml
  for size in "-m 4096 -n 4096 -k 4096" "-m 4095 -n 4097 -k 1023"; do
    ( time python3 "$ROOT/tune_gemm.py" $size --compare --quiet --time_breakdown --tuning_results_file /tmp/tuned.yaml \
        --report "$OUT/report" ) 2>&1 | grep -v "^ *%\|^ *tt\.\|^ *scf\.\|^ *arith\." | tee -a "$OUT/tune.log" | tail -25
    ( time python3 "$ROOT/tune_gemm.py" $size --search halving --quiet --time_breakdown \
        --tuning_results_file /tmp/halving.yaml ) 2>&1 | grep -v "^ *%\|^ *tt\.\|^ *scf\.\|^ *arith\." | tee -a "$OUT/halving.log" | tail -12
  done
  cp /tmp/tuned.yaml /tmp/halving.yaml "$OUT/"
  python3 "$ROOT/tune_gemm.py" --tuning_results_file /tmp/tuned.yaml --export triton,json > "$OUT/export.log" 2>&1
  cp /tmp/triton_configs_* /tmp/*GEMM.json "$OUT/" 2>/dev/null
  python3 "$ROOT/benchmarks/bench_gemm.py" /tmp/tuned.yaml --csv "$OUT/bench.csv" --png "$OUT/bench.png" 2>&1 \
    | tee "$OUT/bench.log" | grep -v Warning | tail -12
fi
