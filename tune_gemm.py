#!/usr/bin/env python3
"""tune_gemm: find, check and record the fastest Triton GEMM config for each matrix size.

    python tune_gemm.py -m 4096 -n 4096 -k 4096
    python tune_gemm.py --gemm_size_file input_gemm_sizes.yaml --compare
    python tune_gemm.py --gemm_size_file output_tuning.yaml --compare_wo_tuning
"""

import sys

from tuner.cli import main

if __name__ == "__main__":
    sys.exit(main())
