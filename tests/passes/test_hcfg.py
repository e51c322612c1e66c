"""dycl.hcfg: nodes, edges, summary, Graphviz text, and dycl-opt --emit-hcfg."""

import shutil

import pytest

from dycl.hcfg import HCFG
from dycl.tools.dycl_opt import main as dycl_opt
from tests.passes import samples, support


@pytest.fixture(scope="module")
def early_exit():
    return HCFG.from_module(support.apply("dycl-pipeline", samples.EARLY_EXIT_WIDTHS))


def test_nodes_are_calls_and_control(early_exit):
    kinds = sorted(n.kind for n in early_exit.nodes.values())
    assert kinds == ["call", "call", "call", "entry", "if", "return"]
    (branch,) = [n for n in early_exit.nodes.values() if n.kind == "if"]
    inside = {n.region for n in early_exit.nodes.values() if n.parent == branch.id}
    assert inside == {"then", "else"}


def test_edges_carry_shapes_and_the_condition(early_exit):
    labels = {(e.src, e.dst): e.label for e in early_exit.edges if e.kind == "data"}
    first = next(n.id for n in early_exit.nodes.values() if n.kind == "call" and n.parent is None)
    branch = next(n.id for n in early_exit.nodes.values() if n.kind == "if")
    assert labels[("entry", first)] == "1x4:float32"
    assert labels[(first, branch)] == "i1 via Bool.Tensor+torch_c.to_i1"
    control = [e for e in early_exit.edges if e.kind == "control"]
    assert {e.label for e in control} == {"then", "else"}


def test_summary_counts_and_bytes(early_exit):
    summary = early_exit.summary()
    assert summary.subdnn_count == 3 and summary.call_count == 3
    assert sorted(summary.ops_per_subdnn.values()) == [1, 2, 4]
    # The host keeps the flag read and the two joins of the exit widths.
    assert summary.host_ops == {"torch.aten.Bool.Tensor": 1, "torch_c.to_i1": 1,
                                "torch.tensor_static_info_cast": 2}
    first = summary.calls[0]
    assert (first.input_bytes, first.output_bytes) == (16, 16 + 1)  # x in; h and the flag out
    assert "3 sub-DNNs" in str(summary)


def test_dot_is_graphviz_text(early_exit, tmp_path):
    dot = early_exit.to_dot()
    assert dot.startswith('digraph "forward" {') and dot.rstrip().endswith("}")
    assert dot.count("->") == len(early_exit.edges)
    if shutil.which("dot"):  # a nice extra where Graphviz is installed
        assert early_exit.render(tmp_path / "hcfg.png").stat().st_size > 0


def test_loop_body_calls_are_inside_the_loop():
    hcfg = HCFG.from_module(support.apply("dycl-pipeline", samples.DECODE))
    (loop,) = [n for n in hcfg.nodes.values() if n.kind == "while"]
    step = [n for n in hcfg.nodes.values() if n.kind == "call" and n.parent == loop.id]
    assert len(step) == 1 and step[0].region == "after"
    # The loop's carried hidden state comes back from the step (a yield edge).
    assert any(e.src == step[0].id and e.dst == loop.id and e.label.startswith("yield")
               for e in hcfg.edges)


def test_dycl_opt_emit_hcfg(tmp_path, capsys):
    path = tmp_path / "ee.mlir"
    path.write_text(samples.EARLY_EXIT_WIDTHS)
    assert dycl_opt([str(path), "-p", "dycl-pipeline", "--emit-hcfg=summary"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("HCFG of @forward: 3 sub-DNNs")
    assert dycl_opt([str(path), "-p", "dycl-pipeline", "--emit-hcfg=dot"]) == 0
    assert capsys.readouterr().out.startswith('digraph "forward"')


def test_no_host_function_is_an_error():
    from xdsl.dialects.builtin import ModuleOp

    with pytest.raises(ValueError, match="no host function"):
        HCFG.from_module(ModuleOp([]))


def test_summary_names_tensor_compute_left_in_the_host():
    # `x * m.item()`: the scalar is known only at run time, so the multiply stays a host op
    # (the interpreter still runs it exactly); the summary says where it is.
    V = "!torch.vtensor<[1,4],f32>"
    text = f"""
"builtin.module"() ({{
  "func.func"() <{{sym_name = "forward", function_type = ({V}) -> {V}}}> ({{
  ^bb0(%x: {V}):
    %m = "torch.aten.max"(%x) : ({V}) -> !torch.vtensor<[],f32>
    %f = "torch.aten.item"(%m) : (!torch.vtensor<[],f32>) -> !torch.float
    %y = "torch.aten.mul.Scalar"(%x, %f) : ({V}, !torch.float) -> {V}
    %z = "torch.aten.tanh"(%y) : ({V}) -> {V}
    "func.return"(%z) : ({V}) -> ()
  }}) : () -> ()
}}) : () -> ()
"""
    after = support.apply("dycl-pipeline", text)
    support.check_hcfg(after, allow_host_compute=True)
    summary = HCFG.from_module(after).summary()
    assert summary.subdnn_count == 2
    assert summary.host_compute_ops == ["@forward: op 2 (torch.aten.mul.Scalar)"]
    assert "tensor compute left in the host" in str(summary)
    from dycl.ir import parse_module

    before = parse_module(text)
    support.assert_equivalent(before, after, "forward",
                              support.random_args(next(support.host_functions(before))), {})
