"""Found by `python -m dycl.fuzz --count 150 --seed 340000 --backend onnxruntime --tvm-every 10`,
seed 340000 (on TVM): the sub-DNN of the `tensor_predicate` condition
`if (x[0, 1] > 0.0).double().allclose(torch.ones((), dtype=torch.float64), atol=0.5):` failed
to compile ("Check failed: (t.MatchesCode(DLDataTypeCode::kDLFloat)) is false"):
`isclose` decomposes to `mul(eq, ne)`, a product of two bool tensors, and TVM lowers an `i1`
multiply through a float check. A product (sum) of bools is their `and` (`or`), and is
written so (`tvm._bool_arithmetic_as_logic`)."""

import os
import tempfile

import pytest
import torch
from torch import nn

from tests.frontend.helpers import assert_compiled_exactly

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))

INPUTS = [(torch.randn(2, 4, generator=torch.Generator().manual_seed(k)) + shift,) for k in range(2) for shift in (-3.0, 0.0, 3.0)]


class BoolProducts(nn.Module):
    def forward(self, x):
        near = torch.isclose(x, torch.ones(()), atol=0.5)
        both = (x > 0) * (x < 1)
        either = (x < -1) + (x > 1)
        if (x[0, 1] > 0.0).double().allclose(torch.ones((), dtype=torch.float64), atol=0.5):
            return x + 1, near, both, either
        return x - 1, near, both, either


def _bool_ops(graph_module) -> list[str]:
    """The arithmetic ops of the graph whose operands are all bool tensors."""
    names = []
    for node in graph_module.graph.nodes:
        values = [a.meta.get("val") for a in node.args[:2] if isinstance(a, torch.fx.Node)]
        if node.op == "call_function" and len(values) == 2 and all(v is not None and v.dtype == torch.bool for v in values):
            names.append(node.target.__name__)
    return names


def test_products_and_sums_of_bools_become_their_logic_before_relax():
    """(No TVM build: the rewrite on the exported graph, which must compute what eager does.)"""
    from dycl.backends.tvm import _bool_arithmetic_as_logic

    class Graph(nn.Module):
        def forward(self, x):
            return torch.isclose(x, torch.ones(()), atol=0.5), (x > 0) * (x < 1), (x < -1) + (x > 1)

    (x,) = INPUTS[1]
    program = torch.export.export(Graph(), (x,)).run_decompositions()
    before = _bool_ops(program.graph_module)
    assert "mul.Tensor" in before and "add.Tensor" in before
    _bool_arithmetic_as_logic(program.graph_module)
    after = _bool_ops(program.graph_module)
    assert "mul.Tensor" not in after and "add.Tensor" not in after and "bitwise_and.Tensor" in after
    for (x,) in INPUTS:
        for got, want in zip(program.module()(x), Graph()(x)):
            assert got.dtype == torch.bool and torch.equal(got, want)


@pytest.mark.slow
def test_bool_products_compile_for_tvm():
    assert_compiled_exactly(BoolProducts, INPUTS, "tvm")
