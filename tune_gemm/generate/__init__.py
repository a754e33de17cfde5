"""Generator: writes the generated_kernel*.py module with one specialized kernel per config."""

from tune_gemm.generate.writer import generated_filename, render, write_module

__all__ = ["generated_filename", "render", "write_module"]
