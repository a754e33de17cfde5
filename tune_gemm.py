#!/usr/bin/env python3
"""tune_gemm's command line, run from a checkout:

    python tune_gemm.py -m 4096 -n 4096 -k 4096
    python tune_gemm.py --gemm_size_file input_gemm_sizes.yaml --compare
    python tune_gemm.py --gemm_size_file output_tuning.yaml --compare_wo_tuning

The code is the package `tune_gemm/` beside this file (installed, the same command is `tune-gemm`).
"""

import sys

from tune_gemm.cli import main

if __name__ == "__main__":
    sys.exit(main())
