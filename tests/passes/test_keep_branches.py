"""dycl-keep-branches and what it asks of the passes after it: a kept `scf.if` travels
whole into one sub-DNN (reference interpreter before and after), and dycl-dedup tells apart
sub-DNNs that differ only inside an arm."""

from pathlib import Path

import pytest

from dycl.dialects.dycl import is_kept_if
from dycl.ir import parse_module
from tests.passes import support

LIT = Path(__file__).resolve().parents[2] / "lit_tests"
CASES = [c for c in (LIT / "dycl-keep-branches.mlir").read_text().split("// -----") if c.strip()]
SPECS = [
    "dycl-keep-branches,dycl-outline,dycl-hoist-free,dycl-dedup,dycl-const-prop",
    "dycl-keep-branches{backend=tvm},dycl-outline{min-ops=2},dycl-hoist-free,dycl-dedup{weights-as-args=true}",
    "dycl-pipeline",
    "dycl-pipeline{keep-branches=true backend=tvm merge-calls=true}",
]


def _kept_in_host(module) -> list:
    return [op for fn in support.host_functions(module) for op in fn.walk() if is_kept_if(op)]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.replace("dycl-", "")[:40])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_keep_branches_preserves_results(case, spec):
    text = CASES[case]
    before = parse_module(text)
    after = support.apply(spec, text)
    support.check_hcfg(after, allow_host_compute=True)  # arms that read host scalars stay
    assert not _kept_in_host(after), "a kept if was left in the host"
    weights = support.random_weights(before)
    for fn in support.host_functions(before):
        support.assert_equivalent(before, after, fn.sym_name.data, support.random_args(fn), weights)


def test_skip_gate_becomes_one_call():
    """The SkipNet-like gate: split, three calls on the path that runs the block (gate,
    block, tail); kept, one call on both paths, the if inside the sub-DNN."""
    text = CASES[0]
    split = support.apply("dycl-pipeline{keep-branches=false}", text)
    kept = support.apply("dycl-pipeline", text)  # the default
    assert _calls(split) == 3
    assert _calls(kept) == 1
    (subdnn,) = support.subdnn_functions(kept)
    assert sum(is_kept_if(op) for op in subdnn.walk()) == 1


def _calls(module) -> int:
    return sum(1 for fn in support.host_functions(module) for op in fn.walk() if op.name == "func.call")


# Two sub-DNNs identical but for one op inside an arm of a kept if (exp vs neg), and two
# that differ only in the weight an arm reads.
_SUBDNN = """
  "func.func"() <{{sym_name = "{name}", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>, sym_visibility = "private"}}> ({{
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %none = "torch.constant.none"() : () -> !torch.none
    %s = "torch.aten.sum"(%x, %none) : (!torch.vtensor<[2],f32>, !torch.none) -> !torch.vtensor<[],f32>
    %zero = "torch.constant.float"() <{{value = 0.0 : f64}}> : () -> !torch.float
    %c = "torch.aten.gt.Scalar"(%s, %zero) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %cb = "torch.aten.Bool.Tensor"(%c) : (!torch.vtensor<[],i1>) -> !torch.bool
    %ci = "torch_c.to_i1"(%cb) : (!torch.bool) -> i1
    %y = "scf.if"(%ci) ({{
      %w = "dycl.param"() {{name = "{weight}"}} : () -> !torch.vtensor<[2],f32>
      %e = "torch.aten.{arm}"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      %m = "torch.aten.mul.Tensor"(%e, %w) : (!torch.vtensor<[2],f32>, !torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%m) : (!torch.vtensor<[2],f32>) -> ()
    }}, {{
      "scf.yield"(%x) : (!torch.vtensor<[2],f32>) -> ()
    }}) {{dycl.keep}} : (i1) -> !torch.vtensor<[2],f32>
    "func.return"(%y) : (!torch.vtensor<[2],f32>) -> ()
  }}) {{dycl.subdnn}} : () -> ()
"""


def _module(second_arm: str, second_weight: str) -> str:
    return f"""
"builtin.module"() ({{
  "func.func"() <{{sym_name = "forward", function_type = (!torch.vtensor<[2],f32>) -> (!torch.vtensor<[2],f32>, !torch.vtensor<[2],f32>)}}> ({{
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %a = "func.call"(%x) <{{callee = @first}}> : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    %b = "func.call"(%x) <{{callee = @second}}> : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    "func.return"(%a, %b) : (!torch.vtensor<[2],f32>, !torch.vtensor<[2],f32>) -> ()
  }}) : () -> ()
{_SUBDNN.format(name="first", arm="exp", weight="w1")}
{_SUBDNN.format(name="second", arm=second_arm, weight=second_weight)}
}}) : () -> ()
"""


@pytest.mark.parametrize(
    "second_arm, second_weight, spec, merged",
    [
        ("neg", "w1", "dycl-dedup", False),  # differ only inside the arm: never merged
        ("neg", "w1", "dycl-dedup{weights-as-args=true}", False),
        ("exp", "w1", "dycl-dedup", True),  # identical: merged
        ("exp", "w2", "dycl-dedup", False),  # another weight inside the arm
        ("exp", "w2", "dycl-dedup{weights-as-args=true}", True),  # ... passed as an argument
    ],
)
def test_dedup_looks_inside_arms(second_arm, second_weight, spec, merged):
    text = _module(second_arm, second_weight)
    before = parse_module(text)
    after = support.apply(spec, text)
    assert len(support.subdnn_functions(after)) == (1 if merged else 2)
    fn = next(support.host_functions(before))
    support.assert_equivalent(before, after, "forward", support.random_args(fn), support.random_weights(before))
