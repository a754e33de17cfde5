"""`python -m tune_gemm`: the command line."""

import sys

from tune_gemm.cli import main

sys.exit(main())
