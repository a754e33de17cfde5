"""tune_gemm.runtime.api: an eager call runs the dispatcher directly; tracing, dispatch modes and autograd go through the op."""

from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from tune_gemm.runtime import api


def test_an_eager_call_runs_the_dispatcher_directly(monkeypatch):
    through_op = []
    monkeypatch.setattr(api, "matmul_op", lambda *args: through_op.append(args))
    a, b = torch.randn(12, 20).half(), torch.randn(20, 9).half()
    c = api.matmul(a, b)
    reference = a.double() @ b.double()
    assert not through_op and float(torch.linalg.norm(c.double() - reference) / torch.linalg.norm(reference)) < 1e-3
    weight = torch.nn.Parameter(b, requires_grad=False)  # a module's weight, frozen for inference
    assert not api._through_op(a, weight)
    with torch.no_grad():
        assert not api._through_op(a, torch.nn.Parameter(b))


def test_autograd_tracing_and_dispatch_modes_go_through_the_op():
    a, b = torch.randn(12, 20), torch.randn(20, 9)
    assert api._through_op(a, b.clone().requires_grad_())  # the op refuses a backward pass, not drop the gradient
    with FakeTensorMode() as mode:
        assert api._through_op(mode.from_tensor(a), mode.from_tensor(b))
    seen = []
    compiled = torch.compile(lambda x, y: seen.append(api._through_op(x, y)) or x, backend="eager", fullgraph=False)
    compiled(a, b)
    assert seen == [True]
