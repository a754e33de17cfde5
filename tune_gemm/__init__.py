"""tune_gemm: find, check and record the fastest Triton GEMM config for each matrix size, and run it.

The command line is `tune_gemm.cli` (`python tune_gemm.py`, `tune-gemm`, `python -m tune_gemm`); the run-time
API through the tuned table is re-exported here and imported on first use, so that `import tune_gemm` loads
neither torch nor Triton:

    from tune_gemm import matmul, load_results

The subpackages, ground floor first (each imports only the ones before it): core, space, kernels, generate,
compile, measure, search, files, run, runtime, outputs; cli on top.
"""

from __future__ import annotations

_RUNTIME = ("matmul", "load_results", "clear_results", "explain")
__all__ = list(_RUNTIME)


def __getattr__(name: str):
    """The run-time API, imported on first use."""
    if name in _RUNTIME:
        from tune_gemm.runtime import api

        return getattr(api, name)
    raise AttributeError(f"module 'tune_gemm' has no attribute {name!r}")
