"""Run-level outputs of the tuner: `--export triton|json` (the winners in other formats) and `--report DIR`
(Markdown and PNG plots: TFLOP/s per shape, the spread of all configs' times)."""
