"""Malformed or unsupported IR gets a located diagnostic, not a traceback."""

from pathlib import Path

import pytest

from dycl.passes._common import HCFGError
from dycl.tools.dycl_opt import main as dycl_opt
from tests.passes import support

V = "!torch.vtensor"

REGION_OP = f"""
"builtin.module"() ({{
  "func.func"() <{{function_type = ({V}<[2],f32>, !torch.bool) -> {V}<[2],f32>, sym_name = "forward"}}> ({{
  ^bb0(%x: {V}<[2],f32>, %b: !torch.bool):
    %y = "torch.aten.relu"(%x) : ({V}<[2],f32>) -> {V}<[2],f32>
    %z = "torch.prim.Loop"(%b) ({{
      "torch.prim.Loop.condition"(%y) : ({V}<[2],f32>) -> ()
    }}) : (!torch.bool) -> {V}<[2],f32>
    "func.return"(%z) : ({V}<[2],f32>) -> ()
  }}) : () -> ()
}}) : () -> ()
"""

UNRANKED_ENTRY = f"""
"builtin.module"() ({{
  "func.func"() <{{function_type = ({V}<*,f32>) -> {V}<*,f32>, sym_name = "forward"}}> ({{
  ^bb0(%x: {V}<*,f32>):
    %y = "torch.aten.relu"(%x) : ({V}<*,f32>) -> {V}<*,f32>
    "func.return"(%y) : ({V}<*,f32>) -> ()
  }}) : () -> ()
}}) : () -> ()
"""

NESTED_REGION = f"""
"builtin.module"() ({{
  "func.func"() <{{function_type = ({V}<[2],f32>, i1, !torch.bool) -> {V}<[2],f32>, sym_name = "forward"}}> ({{
  ^bb0(%x: {V}<[2],f32>, %p: i1, %b: !torch.bool):
    %r = "scf.if"(%p) ({{
      %z = "torch.prim.If"(%b) ({{
        "torch.prim.If.yield"(%x) : ({V}<[2],f32>) -> ()
      }}, {{
        "torch.prim.If.yield"(%x) : ({V}<[2],f32>) -> ()
      }}) : (!torch.bool) -> {V}<[2],f32>
      "scf.yield"(%z) : ({V}<[2],f32>) -> ()
    }}, {{
      "scf.yield"(%x) : ({V}<[2],f32>) -> ()
    }}) : (i1) -> {V}<[2],f32>
    "func.return"(%r) : ({V}<[2],f32>) -> ()
  }}) : () -> ()
}}) : () -> ()
"""


@pytest.mark.parametrize(
    "text, message",
    [
        (REGION_OP, r"@forward: op \d \(torch.prim.Loop\): an op with regions cannot be part"),
        (UNRANKED_ENTRY, r"@forward: op 0 \(torch.aten.relu\): tensor of shape \*:float32 "
                         r"inside a would-be sub-DNN: its rank is not determined"),
        (NESTED_REGION, r"@forward: op 0 \(scf.if\) / then / op 0 \(torch.prim.If\)"),
    ],
    ids=["region_op", "unranked_entry", "nested_region_op"],
)
def test_outline_diagnostics_are_located(text, message):
    with pytest.raises(HCFGError, match=message):
        support.apply("dycl-pipeline", text)


def test_dycl_opt_prints_the_diagnostic(tmp_path: Path, capsys):
    path = tmp_path / "bad.mlir"
    path.write_text(UNRANKED_ENTRY)
    assert dycl_opt([str(path), "-p", "dycl-pipeline"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}: error: @forward: op 0 (torch.aten.relu): tensor of shape *:float32")
    assert "Traceback" not in err


def test_shape_varying_loop_kept_rolled_is_reported(tmp_path: Path, capsys):
    text = (Path(__file__).resolve().parents[2] / "lit_tests" / "dycl-shape-infer.mlir").read_text()
    from dycl.passes.shape_infer import infer_shapes
    from dycl.ir import parse_module

    notes = [str(n) for n in infer_shapes(parse_module(text))]
    assert any("growing_carry" in n and "changes shape per iteration" in n for n in notes)
    assert any("join_widths" in n and "merges two shapes" in n for n in notes)
    assert not any("static_carry" in n for n in notes)
    # Unrolling is what specialises the growing carry; kept rolled, its body is a sub-DNN
    # whose carried dim is a symbolic size.
    outlined = str(support.apply("dycl-pipeline{max-trip-count=2}", text))
    body = outlined[outlined.index("@growing_carry"):outlined.index("@static_carry")]
    assert "scf.for" in body
    assert "func.call @subdnn_5(%acc, %x) : (!torch.vtensor<[1,?],f32>, !torch.vtensor<[1,2],f32>) -> !torch.vtensor<[1,?],f32>" in body
