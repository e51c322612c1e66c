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


R = "!torch.vtensor<[?],f32>"


def first_rows_subdnn(start: int, end: int):
    """`x[start:end]` of a dim known only at run time (`scores[keep].sort()[0][:4]`)."""
    constants = "\n".join(
        f'    %c{k} = "torch.constant.int"() <{{value = {v} : i64}}> : () -> !torch.int' for k, v in enumerate((0, start, end, 1))
    )
    text = f'''"builtin.module"() ({{
  "func.func"() <{{sym_name = "subdnn_3", function_type = ({R}) -> ({R}), sym_visibility = "private"}}> ({{
  ^bb0(%x: {R}):
{constants}
    %y = "torch.aten.slice.Tensor"(%x, %c0, %c1, %c2, %c3) : ({R}, !torch.int, !torch.int, !torch.int, !torch.int) -> {R}
    "func.return"(%y) : ({R}) -> ()
  }}) {{dycl.subdnn}} : () -> ()
}}) : () -> ()'''
    (subdnn,) = subdnns_of(parse_module(text))
    return subdnn


@pytest.mark.parametrize("start, end", [(0, 4), (0, 2), (-4, 9223372036854775807)], ids=["first_4", "first_2", "last_4"])
def test_a_constant_slice_of_a_runtime_dim_holds_for_every_size(start, end):
    """Export compared the bounds with the example size (3) and assumed the answer: `x[:4]`
    of 3 rows bounded the dim by 3 and dropped the slice, and ONNX Runtime gave 5 rows for
    5. The bounds are clamped to the size as symbolic ints. (Sizes from 2: the host calls
    sub-DNNs of their own for sizes 0 and 1.)"""
    from dycl.backends.fx_rebuild import export

    program = export(first_rows_subdnn(start, end), {}, "onnxruntime")
    for n in (2, 3, 4, 5, 9):
        x = torch.arange(float(n))
        (y,) = program.module()(x)
        assert torch.equal(y, x[start:end])

