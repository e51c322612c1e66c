"""dycl-const-prop and dycl-unroll-loops must not change what the IR computes."""

import pytest
import torch
from xdsl.context import Context
from xdsl.dialects import scf

from dycl.interpreter import run_function
from dycl.ir import parse_module, print_module
from dycl.passes import get_all_passes
from tests.foundation import samples


def apply(pass_spec: str, text: str):
    from xdsl.passes import PassPipeline

    module = parse_module(text)
    PassPipeline.parse_spec(
        {**get_all_passes()}, pass_spec
    ).apply(Context(allow_unregistered=True), module)
    module.verify()
    return module


def assert_same_results(before, after, inputs, weights):
    for x in inputs:
        want = run_function(before, [x], weights)
        got = run_function(after, [x], weights)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert torch.equal(g, w) if isinstance(w, torch.Tensor) else g == w


@pytest.mark.parametrize("name", sorted(samples.SAMPLES))
@pytest.mark.parametrize(
    "pipeline",
    ["dycl-const-prop", "dycl-unroll-loops", "dycl-unroll-loops,dycl-const-prop"],
)
def test_pass_preserves_results(name, pipeline):
    text = samples.SAMPLES[name]
    after = apply(pipeline, text)
    # The transformed IR must print and parse again.
    after = parse_module(print_module(after))
    assert_same_results(parse_module(text), after, samples.inputs(), samples.weights())


def test_unroll_removes_the_constant_trip_loop():
    after = apply("dycl-unroll-loops", samples.GATED_LOOP)
    assert not any(isinstance(op, scf.ForOp) for op in after.walk())
    assert sum(isinstance(op, scf.IfOp) for op in after.walk()) == 4


def test_unroll_respects_max_trip_count():
    after = apply("dycl-unroll-loops{max-trip-count=3}", samples.GATED_LOOP)
    assert any(isinstance(op, scf.ForOp) for op in after.walk())


def test_const_prop_keeps_tensor_branches_and_folds_scalar_ones():
    after = apply("dycl-const-prop", samples.EARLY_EXIT)
    text = print_module(after)
    assert '"scf.if"' in text  # the condition depends on the input
    assert "torch.aten.sub.int" not in text  # 2 - 1 folded
