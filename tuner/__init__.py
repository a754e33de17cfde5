"""Core of tune_gemm: problem and dtype types, sizes/results files, the tuning pipeline and the CLI."""
