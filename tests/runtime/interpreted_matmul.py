"""Runs the run-time matmul on the CPU under the Triton interpreter, for test_matmul_interpreter.py.

    TRITON_INTERPRET=1 python interpreted_matmul.py RESULTS CASES.json OUT.json

It is a separate process because the interpreter is chosen when Triton kernels are first decorated, i.e. when
the kernel family is imported: the pytest process may already hold compiled-mode kernels. Each case's output is
poisoned (NaN, or the most negative int32) before the kernel runs (through dispatch.new_output), so an element the
kernel skips shows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from tune_gemm import explain, load_results, matmul
from tune_gemm.kernels.matmul_family import poison
from tune_gemm.runtime import dispatch
from tune_gemm.runtime.op import matmul_op

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32, "fp8": torch.float8_e4m3fn,
          "bf8": torch.float8_e5m2, "int8": torch.int8, "int32": torch.int32}
ALL_OPCHECKS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")
INT_SPREAD = 40  # int8 operands: normal values times this, rounded (products and sums stay exact in int32)


def _poisoned(shape, dtype, device):
    c = torch.empty(shape, dtype=dtype, device=device)
    poison(c)  # NaN, or the most negative int32
    return c


def operand(rows: int, cols: int, column_major: bool, dtype: torch.dtype, storage: str, seed: int) -> torch.Tensor:
    """A random (rows, cols) operand; storage 'padded' pads its leading dimension, 'strided' leaves no unit stride."""
    generator = torch.Generator().manual_seed(seed)
    outer, inner = (cols, rows) if column_major else (rows, cols)
    step = 2 if storage == "strided" else 1
    extra = 5 if storage == "padded" else 0
    values = torch.randn(outer, inner * step + extra, generator=generator)
    if not dtype.is_floating_point:
        values = (values * INT_SPREAD).round()
    data = values.to(dtype)[:, : inner * step: step]
    return data.t() if column_major else data


def relative_error(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor, scales: tuple = (1.0, 1.0)) -> float:
    reference = (a.double() * scales[0]) @ (b.double() * scales[1])
    if not torch.isfinite(c.double()).all():
        return float("inf")
    if reference.numel() == 0 or not reference.abs().max():
        return float((c.double() - reference).abs().max()) if c.numel() else 0.0
    return float(torch.linalg.norm(c.double() - reference) / torch.linalg.norm(reference))


def run_case(case: dict) -> dict:
    dtype, out_dtype = DTYPES[case["dtype"]], DTYPES.get(case.get("out_dtype"))
    a = operand(case["M"], case["K"], case["col_a"], dtype, case.get("storage_a", "plain"), seed=1)
    b = operand(case["K"], case["N"], case["col_b"], dtype, "plain", seed=2)
    scales = case.get("scales")
    if scales:
        c = matmul(a, b, out_dtype, scale_a=torch.tensor([scales[0]]), scale_b=torch.tensor([scales[1]]))
    else:
        c = matmul(a, b, out_dtype)
    return {"error": relative_error(c, a, b, scales or (1.0, 1.0)), "rule": explain(a, b, out_dtype).rule,
            "shape": list(c.shape),
            "dtype": str(c.dtype).removeprefix("torch."), "contiguous": c.is_contiguous()}


def run_compiled() -> dict:
    """matmul inside torch.compile(fullgraph=True): traced through the op's fake, run through the op."""
    a, b = operand(33, 40, False, torch.float16, "plain", 3), operand(40, 17, False, torch.float16, "plain", 4)
    compiled = torch.compile(lambda x, y: matmul(x, y) * 2, fullgraph=True, backend="aot_eager")
    result = compiled(a, b)
    dynamic = torch.compile(lambda x, y: matmul(x, y) * 2, fullgraph=True, dynamic=True, backend="aot_eager")
    rows = [operand(M, 40, False, torch.float16, "plain", M) for M in (5, 33, 70)]  # one graph, symbolic M
    return {"error": relative_error(result / 2, a, b), "same_as_eager": bool(torch.equal(result, matmul(a, b) * 2)),
            "dynamic_same_as_eager": all(torch.equal(dynamic(x, b), matmul(x, b) * 2) for x in rows)}


def run_opcheck() -> dict:
    a, b = operand(20, 12, True, torch.float32, "plain", 5), operand(12, 9, False, torch.float32, "plain", 6)
    fp8 = torch.float8_e4m3fn
    a8, b8 = operand(20, 40, False, fp8, "plain", 7), operand(40, 9, True, fp8, "plain", 8)
    # fp8 skips test_schema, whose check multiplies the inputs, which the CPU cannot do in fp8
    samples = {"fp32": ((a, b, None), ALL_OPCHECKS),
               "fp8, scaled": ((a8, b8, None, torch.tensor([0.5]), torch.tensor([2.0])), ALL_OPCHECKS[1:])}
    failures = {f"{sample} {name}": str(result) for sample, (arguments, checks) in samples.items()
                for name, result in torch.library.opcheck(matmul_op, arguments, test_utils=checks).items()
                if result != "SUCCESS"}
    return {"failures": failures}


def main() -> int:
    results, cases, out = (Path(arg) for arg in sys.argv[1:4])
    dispatch.new_output = _poisoned
    load_results(results)
    report = {case["name"]: run_case(case) for case in json.loads(cases.read_text())}
    report["compiled"] = run_compiled()
    report["opcheck"] = run_opcheck()
    out.write_text(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
