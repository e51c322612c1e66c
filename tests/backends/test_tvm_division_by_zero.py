"""`x / 0` with a number 0: a sub-DNN made for a dim of size 0 divides by its size
(`hs.sum(1) / hs.size(1)`), and TVM stopped the compile folding the constant divisor
(Divide by zero). Written as `x * inf` with the zero's sign, which is PyTorch's answer."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import dycl
from dycl.backends.tvm import _divisions_by_a_zero_number

VALUES = torch.tensor([[3.0, -2.0, 0.0, -0.0], [float("nan"), float("inf"), 1e-30, -5.0]])


class ByZeros(nn.Module):
    def forward(self, x, counts):
        return x / 0, x / -0.0, counts / 0, x.sum(1) / 0.0


def _exported():
    program = torch.export.export(ByZeros(), (VALUES, torch.tensor([0, 3, -2])))
    return program.run_decompositions()


def test_a_division_by_a_zero_number_is_a_product_with_its_signed_infinity():
    program = _exported()
    expected = program.module()(VALUES, torch.tensor([0, 3, -2]))
    _divisions_by_a_zero_number(program.graph_module)
    targets = [n.target for n in program.graph.nodes if n.op == "call_function"]
    assert torch.ops.aten.div.Tensor not in targets and torch.ops.aten.div.Scalar not in targets
    for e, a in zip(expected, program.module()(VALUES, torch.tensor([0, 3, -2]))):
        assert e.dtype == a.dtype and torch.equal(e.isnan(), a.isnan())
        assert torch.equal(e[~e.isnan()], a[~a.isnan()])


@pytest.mark.slow
def test_a_division_by_a_zero_number_compiles_on_tvm():
    model = ByZeros().eval()
    counts = torch.tensor([0, 3, -2])
    compiled = dycl.compile(model, (VALUES, counts), backend="tvm", progress=False)
    for e, a in zip(model(VALUES, counts), compiled(VALUES, counts)):
        assert e.dtype == a.dtype and torch.equal(e.isnan(), a.isnan())
        assert torch.equal(e[~e.isnan()], a[~a.isnan()])
