"""The torch/dycl dialect subset: types, accessors and round trips of real torch-mlir IR."""

import shutil
import subprocess

import pytest
import torch

from dycl.dialects import torch as t
from dycl.dialects.dtypes import dtype_name, element_type
from dycl.ir import IRParseError, parse_module, print_module
from tests.foundation.models import ConvBnLinear, randomize_bn
from tests.support.static_import import import_static


def _module_with_arg(type_text):
    return parse_module(
        '"builtin.module"() ({\n  "func.func"() <{sym_name = "f", function_type = ('
        + type_text
        + ") -> ()}> ({\n  ^bb0(%a: "
        + type_text
        + '):\n    "func.return"() : () -> ()\n  }) : () -> ()\n}) : () -> ()'
    )


def _type(type_text):
    return _module_with_arg(type_text).ops.first.function_type.inputs.data[0]


def test_vtensor_accessors():
    ty = _type("!torch.vtensor<[1,?,32],f32>")
    assert isinstance(ty, t.ValueTensorType)
    assert ty.shape == (1, None, 32)
    assert ty.rank == 3 and not ty.has_static_shape
    assert dtype_name(ty.element_type) == "float32"
    assert ty.with_shape((1, 4, 32)).has_static_shape


@pytest.mark.parametrize(
    "text",
    [
        "!torch.vtensor<[],i1>",
        "!torch.vtensor<[2,3],si64>",
        "!torch.vtensor<*,f32>",
        "!torch.vtensor",
        "!torch.int",
        "!torch.list<int>",
        "!torch.list<vtensor<[1,4],f32>>",
        "!torch.list<vtensor>",
        "!torch.optional<list<int>>",
        "!torch.tuple<int, vtensor<[1],f32>>",  # unregistered fallback
    ],
)
def test_types_round_trip(text):
    printed = print_module(_module_with_arg(text))
    assert f"^bb0(%a: {text})" in printed
    assert print_module(parse_module(printed)) == printed


def test_dtype_names_invert():
    for name in ("float32", "float64", "int64", "int32", "bool", "uint8", "float16"):
        assert dtype_name(element_type(name)) == name


def test_torch_mlir_output_round_trips_with_weights_as_references():
    model = randomize_bn(ConvBnLinear())
    module, weights = import_static(model, torch.randn(2, 3, 8, 8))
    text = print_module(module)
    assert "dense_resource" not in text
    assert '"dycl.param"() {name = "conv.weight"}' in text
    assert set(weights) >= {"conv.weight", "bn.running_mean", "fc.bias"}
    assert print_module(parse_module(text)) == text
    # Unknown aten ops parse through the unregistered fallback and keep their names.
    assert '"torch.aten.conv2d"' in text and '"torch.aten.mean.dim"' in text


@pytest.mark.skipif(shutil.which("torch-mlir-opt") is None, reason="torch-mlir-opt missing")
def test_dycl_opt_output_parses_in_torch_mlir_opt(tmp_path):
    module, _ = import_static(randomize_bn(ConvBnLinear()), torch.randn(2, 3, 8, 8))
    source = tmp_path / "in.mlir"
    source.write_text(print_module(module))
    out = tmp_path / "out.mlir"
    subprocess.run(["dycl-opt", str(source), "-p", "dycl-const-prop", "-o", str(out)], check=True)
    result = subprocess.run(
        ["torch-mlir-opt", "--allow-unregistered-dialect", str(out)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert "torch.aten.conv2d" in result.stdout


def test_parse_error_is_located():
    with pytest.raises(IRParseError, match=r"<string>:2:77: error: Expected integer literal"):
        parse_module('"builtin.module"() ({\n  %0 = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.vtensor<[1,x],f32>\n}) : () -> ()')
