"""Kept ifs through the backends: the IR of lit_tests/dycl-keep-branches.mlir compiled by
dycl.compile's pipeline and run against the reference interpreter on both branch values;
ONNX Runtime's arms own their weights; TVM casts scalar operands inside arms. ONNX Runtime
in the default tier, TVM in the slow tier."""

from pathlib import Path

import numpy as np
import pytest
import torch

from dycl.api import compile_module
from dycl.interpreter import run_function
from dycl.ir import parse_module
from tests.passes import support

LIT = Path(__file__).resolve().parents[2] / "lit_tests"
CASES = [c for c in (LIT / "dycl-keep-branches.mlir").read_text().split("// -----") if c.strip()]
KEPT = {"skip_gate": 0, "nested": 1, "shared_condition": 6}  # cases whose ifs are kept

BACKEND_PARAMS = ["onnxruntime", pytest.param("tvm", marks=pytest.mark.slow)]

# An arm that adds a 0-d float64 tensor to a float32 one (PyTorch computes in float32;
# Relax would promote to float64 without the cast) and an arm of a conv with its weight.
SCALAR_AND_CONV = """
"builtin.module"() ({
  "func.func"() <{sym_name = "forward", function_type = (!torch.vtensor<[1,2,4,4],f32>, !torch.vtensor<[],f64>) -> !torch.vtensor<[1,2,4,4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,2,4,4],f32>, %k: !torch.vtensor<[],f64>):
    %none = "torch.constant.none"() : () -> !torch.none
    %s = "torch.aten.sum"(%x, %none) : (!torch.vtensor<[1,2,4,4],f32>, !torch.none) -> !torch.vtensor<[],f32>
    %zero = "torch.constant.float"() <{value = 0.0 : f64}> : () -> !torch.float
    %c = "torch.aten.gt.Scalar"(%s, %zero) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %cb = "torch.aten.Bool.Tensor"(%c) : (!torch.vtensor<[],i1>) -> !torch.bool
    %ci = "torch_c.to_i1"(%cb) : (!torch.bool) -> i1
    %y = "scf.if"(%ci) ({
      %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
      %a = "torch.aten.add.Tensor"(%x, %k, %one) : (!torch.vtensor<[1,2,4,4],f32>, !torch.vtensor<[],f64>, !torch.int) -> !torch.vtensor<[1,2,4,4],f32>
      "scf.yield"(%a) : (!torch.vtensor<[1,2,4,4],f32>) -> ()
    }, {
      %w = "dycl.param"() {name = "conv.weight"} : () -> !torch.vtensor<[2,2,3,3],f32>
      %i1 = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
      %i0 = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
      %st = "torch.prim.ListConstruct"(%i1, %i1) : (!torch.int, !torch.int) -> !torch.list<int>
      %pd = "torch.prim.ListConstruct"(%i1, %i1) : (!torch.int, !torch.int) -> !torch.list<int>
      %dl = "torch.prim.ListConstruct"(%i1, %i1) : (!torch.int, !torch.int) -> !torch.list<int>
      %v = "torch.aten.conv2d"(%x, %w, %none, %st, %pd, %dl, %i1) : (!torch.vtensor<[1,2,4,4],f32>, !torch.vtensor<[2,2,3,3],f32>, !torch.none, !torch.list<int>, !torch.list<int>, !torch.list<int>, !torch.int) -> !torch.vtensor<[1,2,4,4],f32>
      "scf.yield"(%v) : (!torch.vtensor<[1,2,4,4],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[1,2,4,4],f32>
    %t = "torch.aten.tanh"(%y) : (!torch.vtensor<[1,2,4,4],f32>) -> !torch.vtensor<[1,2,4,4],f32>
    "func.return"(%t) : (!torch.vtensor<[1,2,4,4],f32>) -> ()
  }) : () -> ()
}) : () -> ()
"""


def check_against_interpreter(text: str, name: str, backend: str, tmp_path, args_list=None):
    module = parse_module(text)
    weights = support.random_weights(module)
    fn = next(f for f in support.host_functions(module) if f.sym_name.data == name)
    args_list = args_list or support.random_args(fn, 20)
    compiled = compile_module(parse_module(text), weights, backend, entry=name, cache_dir=tmp_path, progress=False)
    assert compiled.compile_report["subdnn_count"] == 1
    branches = set()
    for args in args_list:
        (want,) = run_function(module, args, weights, name=name)
        got = compiled(*args)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert torch.allclose(got, want, rtol=1e-5, atol=1e-5), float((got - want).abs().max())
        branches.add(bool(args[0].sum() > 0))
    assert branches == {True, False}  # both arms ran
    return compiled


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
@pytest.mark.parametrize("name", sorted(KEPT))
def test_kept_ifs_match_the_interpreter(name, backend, tmp_path):
    check_against_interpreter(CASES[KEPT[name]], name, backend, tmp_path)


def _scalar_args():
    gen = torch.Generator().manual_seed(3)
    return [[torch.randn(1, 2, 4, 4, generator=gen) + shift, torch.tensor(0.3, dtype=torch.float64)]
            for shift in (-2.0, 2.0, -1.0, 1.0)]


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
def test_scalar_operand_and_conv_arms(backend, tmp_path):
    compiled = check_against_interpreter(SCALAR_AND_CONV, "forward", backend, tmp_path, _scalar_args())
    if backend == "onnxruntime":
        import onnx

        (path,) = Path(compiled.directory).glob("*.onnx")
        graph = onnx.load(str(path)).graph
        (if_node,) = [n for n in graph.node if n.op_type == "If"]
        arms = {a.name: a.g for a in if_node.attribute}
        # The conv weight belongs to the arm that reads it (ONNX Runtime's NCHWc layout).
        assert [i.name for i in arms["else_branch"].initializer] and not arms["then_branch"].initializer
        conv_inputs = {name for n in arms["else_branch"].node if n.op_type == "Conv" for name in n.input}
        assert conv_inputs & {i.name for i in arms["else_branch"].initializer}
        assert not conv_inputs & {i.name for i in graph.initializer}


def test_sink_arm_initializers_moves_only_single_arm_weights():
    import onnx
    from onnx import TensorProto, helper

    from dycl.backends.onnxruntime import sink_arm_initializers

    def arm(name, weight):
        return helper.make_graph([helper.make_node("Mul", ["x", weight], [f"{name}_out"])], name, [],
                                 [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [2])])

    weights = [helper.make_tensor(n, TensorProto.FLOAT, [2], [1.0, 2.0]) for n in ("only_then", "shared", "unread")]
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=arm("then", "only_then"), else_branch=arm("else", "shared")),
         helper.make_node("Add", ["y", "shared"], ["z"])],
        "main",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []), helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])],
        initializer=weights,
    )
    assert sink_arm_initializers(graph) == 1
    assert [i.name for i in graph.initializer] == ["shared"]  # read twice stays; unread goes
    then_branch = graph.node[0].attribute[0].g if graph.node[0].attribute[0].name == "then_branch" else graph.node[0].attribute[1].g
    assert [i.name for i in then_branch.initializer] == ["only_then"]
    onnx.checker.check_graph(graph)
    import onnxruntime as ort

    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    session = ort.InferenceSession(model.SerializeToString())
    x = np.array([3.0, 4.0], dtype=np.float32)
    for c, want in ((True, x * [1, 2] + [1, 2]), (False, x * [1, 2] + [1, 2])):
        (z,) = session.run(None, {"c": np.array(c), "x": x})
        np.testing.assert_allclose(z, want)


class _ChunkOperands(torch.nn.Module):
    """The else arm yields `a` and `t`, which share memory (`a` is a chunk of `t`)."""

    def forward(self, x):
        t = x + 1
        a, b = t.chunk(2, 1)
        if a.sum() > 0:
            a = a * 3
            t = t * 2
        return t, a, b


class _TransposedOperand(torch.nn.Module):
    """One arm yields a transposed operand, the other a new tensor (their strides differ)."""

    def forward(self, x):
        t = x.reshape(2, 2) + 1
        u = t.t()
        if t.sum() > 0:
            t = t * 2
            u = u + 1
        return t, u


class _MaskedFillInAnArm(torch.nn.Module):
    """Fuzz seed 105009: a masked fill in one arm (an arm output forced through
    `aten.contiguous` made torch.cond see it aliasing: "cond_true might be aliasing")."""

    def forward(self, x):
        x = x * 0.5 + 1.0
        keep = x
        if x.max() > 0.0:
            x.masked_fill_(x > 1.0, -1.0)
        return x + keep


@pytest.mark.parametrize("backend", BACKEND_PARAMS)
@pytest.mark.parametrize("factory", [_ChunkOperands, _TransposedOperand, _MaskedFillInAnArm], ids=lambda f: f.__name__)
def test_kept_ifs_with_view_operands_and_outputs(factory, backend, tmp_path):
    import dycl

    model = factory().eval()
    inputs = [torch.ones(1, 4), -3 * torch.ones(1, 4)]
    compiled = dycl.compile(model, (inputs[0],), backend=backend, cache_dir=tmp_path, progress=False)
    assert compiled.compile_report["subdnn_count"] == 1  # the if is kept inside the sub-DNN
    for x in inputs:
        for want, got in zip(model(x), compiled(x)):
            assert torch.equal(got, want)
