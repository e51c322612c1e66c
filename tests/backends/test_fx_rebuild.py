"""Sub-DNN func -> torch.fx graph: same numbers as eager, unknown ops named."""

import pytest
import torch
from xdsl.dialects.builtin import StringAttr, UnitAttr

from dycl.backends import BackendError, subdnns_of
from dycl.backends.fx_rebuild import example_inputs, rebuild
from dycl.ir import parse_module
from tests.support.static_import import import_static


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x))).mean(dim=(2, 3))
        z = self.fc(y)
        return z, z.max() > 0.5, torch.softmax(z, -1).to(torch.float64)


def as_subdnn(module):
    (function,) = list(module.ops)
    function.attributes["dycl.subdnn"] = UnitAttr()
    function.properties["sym_visibility"] = StringAttr("private")
    (subdnn,) = subdnns_of(module)
    return subdnn


def test_rebuilt_graph_matches_eager():
    torch.manual_seed(0)
    model = Small().eval()
    x = torch.randn(1, 3, 8, 8)
    module, weights = import_static(model, x, func_name="subdnn_0")
    subdnn = as_subdnn(module)
    assert subdnn.weight_names and "conv.weight" in subdnn.weight_names
    graph = rebuild(subdnn, weights, "onnxruntime")
    with torch.no_grad():
        expected = model(x)
        actual = graph(x)
    assert actual[1].dtype == torch.bool and actual[2].dtype == torch.float64  # dtype codes decoded
    for e, a in zip(expected, actual):
        assert torch.equal(e, a) or torch.allclose(e, a, atol=1e-6)
    assert [t.shape for t in example_inputs(subdnn)] == [torch.Size([1, 3, 8, 8])]


T = "!torch.vtensor<[4,4],f32>"


def one_op_subdnn(op_name: str):
    text = f'''"builtin.module"() ({{
  "func.func"() <{{sym_name = "subdnn_7", function_type = ({T}) -> ({T}), sym_visibility = "private"}}> ({{
  ^bb0(%x: {T}):
    %y = "{op_name}"(%x) : ({T}) -> {T}
    "func.return"(%y) : ({T}) -> ()
  }}) {{dycl.subdnn}} : () -> ()
}}) : () -> ()'''
    (subdnn,) = subdnns_of(parse_module(text))
    return subdnn


def test_unknown_op_is_named_with_its_subdnn():
    with pytest.raises(BackendError) as info:
        rebuild(one_op_subdnn("torch.aten.not_an_op"), {}, "onnxruntime")
    assert info.value.op == "torch.aten.not_an_op" and info.value.subdnn == "subdnn_7"
    assert "@subdnn_7" in str(info.value) and "torch.aten.not_an_op" in str(info.value)


def test_missing_weight_is_reported():
    model = torch.nn.Linear(4, 4).eval()
    module, _ = import_static(model, torch.randn(1, 4), func_name="subdnn_0")
    with pytest.raises(BackendError, match="no weight named 'weight'"):
        rebuild(as_subdnn(module), {}, "tvm")
