#!/usr/bin/env bash
# One device-machine call: GPU tests, then full-space tuning of the closing-note sizes and the benchmark.
# Usage (device tool, carry .whl): bash scripts/device_run.sh tests [FILES] | breakdown M N K CONFIG... |
#   sizes SIZES_FILE [TUNER ARGS] | search SIZES_FILE [BENCH_SEARCH ARGS] | bench RESULTS_FILE [BEFORE_FILE] | tune
# tests: FILES are test files only; TEST_K="expression" passes `-k expression` to each file's pytest, TEST_ARGS
#   other options (e.g. "-n 6" with pytest-xdist's wheel in .whl: compile-bound files in parallel workers; not the
#   files that tune or time, whose tuners would share the GPU: runtime, tuning, search, interleaved, run_knobs, ...).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
# the package from this checkout, for the benchmark scripts and tests (the device has no install of it)
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1
# The device's torch has no compiled bytecode and its folder is read-only: without a writable cache every
# Python process (compile workers, timing children) spends about 9 s compiling torch's sources on import.
export PYTHONPYCACHEPREFIX=/tmp/pycache
ROOT=$PWD
mode=${1:-tests}; shift || true
# Everything goes to /tmp/o_MODE, packed into one archive per run of a mode in $OUT at the end (the device tool
# returns at most 8 files; one archive per run, so that runs chained in one call do not overwrite each other's logs:
# device_out_tests.tgz, then device_out_tests_2.tgz, ...).
FINAL=${OUT:-/tmp/out}; OUT=/tmp/o_$mode; rm -rf "$OUT"; mkdir -p "$OUT" "$FINAL"
archive=$FINAL/device_out_$mode.tgz; run=1
while [ -e "$archive" ]; do run=$((run + 1)); archive=$FINAL/device_out_${mode}_$run.tgz; done
trap 'tar -czf "$archive" -C "$OUT" .' EXIT
# each mode's run ends before the device call's limit, so that the archive of its logs is still written
bounded() { timeout "${RUN_SECONDS:-560}" "$@"; }
without_ir() { grep -v "^ *%\|^ *tt\.\|^ *scf\.\|^ *arith\."; }  # drops the MLIR a failing compile dumps
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } | tee "$OUT/gpu.txt"
if [ "$mode" = tests ]; then
  # one pytest per file (newest first), so that a time-out loses one file's summary, not all of them
  files=${*:-tests/gpu/test_replay_gpu.py tests/gpu/test_small_rows_gpu.py tests/gpu/test_warp_group_family_gpu.py tests/gpu/test_parts_gpu.py tests/gpu/test_tma_family_gpu.py
    tests/gpu/test_dtypes_gpu.py tests/gpu/test_runtime_gpu.py
    tests/gpu/test_benchmark_gpu.py tests/gpu/test_bench_gemm_gpu.py tests/gpu/test_interleaved_gpu.py tests/gpu/test_run_knobs_gpu.py tests/gpu/test_search_gpu.py
    tests/gpu/test_tuning_gpu.py tests/gpu/test_ncu_gpu.py tests/gpu/test_floors_gpu.py tests/gpu/test_workers_gpu.py}
  deadline=$(( $(date +%s) + ${TEST_SECONDS:-270} ))
  for file in $files; do
    [ -f "$file" ] || { echo "not a test file: $file (pytest options go in TEST_K)" | tee -a "$OUT/pytest_gpu.log"; exit 2; }
  done
  for file in $files; do
    left=$(( deadline - $(date +%s) )); [ "$left" -gt 5 ] || { echo "not run (time): $file" | tee -a "$OUT/pytest_gpu.log"; continue; }
    timeout "$left" python3 -m pytest -m gpu -q -s -p no:cacheprovider --tb=short -rfE ${TEST_K:+-k "$TEST_K"} ${TEST_ARGS:-} "$file" 2>&1 \
      | tee -a "$OUT/pytest_gpu.log" | grep -E "passed|failed|FAILED|ERROR|compile ahead" | tail -15
  done
fi
if [ "$mode" = breakdown ]; then
  python3 benchmarks/breakdown.py "$@" 2>&1 | tee "$OUT/breakdown.log"
fi
if [ "$mode" = sizes ]; then
  # tune every size of a sizes file; the results file is written straight to the returned folder, so a
  # time-out keeps every size already done
  sizes=$1; shift
  ( time bounded python3 tune_gemm.py --gemm_size_file "$sizes" --compare --quiet --tuning_results_file "$FINAL/tuned.yaml" "$@" ) \
    2>&1 | without_ir | tee "$OUT/tune_sizes.log" | grep -E "PASS|FAIL|real|winner|error" | tail -40
fi
if [ "$mode" = search ]; then
  # searches side by side (benchmarks/bench_search.py); its table and one results file per search go straight
  # to the returned folder, rewritten after each size
  sizes=$1; shift
  bounded python3 benchmarks/bench_search.py "$sizes" --out "$FINAL/search" "$@" 2>&1 | without_ir | tee "$OUT/search.log" \
    | grep -E "^entry|^skip|within 1%|s in all|not run|Error|error" | tail -30
fi
if [ "$mode" = bench ]; then
  # the budget leaves sizes out before the call's limit cuts one (and the table and chart with it)
  # a second file, when given, is an earlier tuning of the same shapes timed beside each entry (--before)
  bounded python3 benchmarks/bench_gemm.py "$1" ${2:+--before "$2"} --csv "$FINAL/bench.csv" --png "$FINAL/bench.png" \
    --time_budget $(( ${RUN_SECONDS:-560} - 20 )) 2>&1 \
    | tee "$OUT/bench.log" | grep -v Warning | tail -16
fi
if [ "$mode" = tune ]; then
  cd /tmp && rm -f tuned.yaml halving.yaml
  for size in "-m 4096 -n 4096 -k 4096" "-m 4095 -n 4097 -k 1023"; do
    ( time python3 "$ROOT/tune_gemm.py" $size --compare --quiet --time_breakdown --tuning_results_file /tmp/tuned.yaml \
        --report "$OUT/report" ) 2>&1 | without_ir | tee -a "$OUT/tune.log" | tail -25
    ( time python3 "$ROOT/tune_gemm.py" $size --search halving --quiet --time_breakdown \
        --tuning_results_file /tmp/halving.yaml ) 2>&1 | without_ir | tee -a "$OUT/halving.log" | tail -12
  done
  cp /tmp/tuned.yaml /tmp/halving.yaml "$OUT/"
  python3 "$ROOT/tune_gemm.py" --tuning_results_file /tmp/tuned.yaml --export triton,json > "$OUT/export.log" 2>&1
  cp /tmp/triton_configs_* /tmp/*GEMM.json "$OUT/" 2>/dev/null
  python3 "$ROOT/benchmarks/bench_gemm.py" /tmp/tuned.yaml --csv "$OUT/bench.csv" --png "$OUT/bench.png" 2>&1 \
    | tee "$OUT/bench.log" | grep -v Warning | tail -12
fi
