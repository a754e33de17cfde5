"""Run-time GEMM through the tuned table. The public functions are in `tune_gemm.runtime.api` (and `tune_gemm` re-exports
them); this package file imports nothing, so that the tuner can read results through `tune_gemm.runtime.table` without
loading Triton kernels or registering the custom op."""
