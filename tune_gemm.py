#!/usr/bin/env python3
"""tune_gemm: find, check and record the fastest Triton GEMM config for each matrix size.

    python tune_gemm.py -m 4096 -n 4096 -k 4096
    python tune_gemm.py --gemm_size_file input_gemm_sizes.yaml --compare
    python tune_gemm.py --gemm_size_file output_tuning.yaml --compare_wo_tuning

and, from Python, the run-time matmul through the tuned table (runtime/):

    from tune_gemm import matmul, load_results
"""

import sys

_RUNTIME = ("matmul", "load_results", "clear_results", "explain")


def __getattr__(name: str):
    """The run-time API, imported on first use: importing this module loads neither it nor the command line."""
    if name in _RUNTIME:
        import runtime.api

        return getattr(runtime.api, name)
    raise AttributeError(f"module 'tune_gemm' has no attribute {name!r}")


if __name__ == "__main__":
    from tuner.cli import main

    sys.exit(main())
