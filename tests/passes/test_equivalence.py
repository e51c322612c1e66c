"""Every HCFG pass, and the whole pipeline, computes exactly what the host IR computed.

Random weights and inputs at several scales drive the interpreter before and after; the
samples are the hand-written IR of tests/passes/samples.py, the foundation samples, and
every function of the lit tests of these passes (each exercises one feature)."""

from pathlib import Path

import pytest

from dycl.ir import parse_module
from tests.foundation import samples as foundation
from tests.passes import samples, support

LIT = Path(__file__).resolve().parents[2] / "lit_tests"

SOURCES = {
    **samples.SAMPLES,
    **{f"foundation_{k}": v for k, v in foundation.SAMPLES.items()},
    "lit_outline": (LIT / "dycl-outline.mlir").read_text(),
    "lit_shape_infer": (LIT / "dycl-shape-infer.mlir").read_text(),
    "lit_hoist_free": (LIT / "dycl-hoist-free.mlir").read_text(),
    "lit_dedup": (LIT / "dycl-dedup.mlir").read_text(),
    "lit_pipeline": (LIT / "dycl-pipeline.mlir").read_text(),
    "lit_hcfg": (LIT / "hcfg.mlir").read_text(),
}

SPECS = [
    "dycl-shape-infer",
    "dycl-shape-infer,dycl-unroll-loops{shape-varying-only=true},dycl-shape-infer,dycl-outline",
    "dycl-shape-infer,dycl-outline{min-ops=2},dycl-hoist-free",
    "dycl-outline,dycl-hoist-free,dycl-dedup",
    "dycl-outline,dycl-dedup{weights-as-args=true}",
    "dycl-pipeline",
]

# Functions whose tensor shapes are not all determined (they exist to test diagnostics or
# the shape-infer marks), for specs that outline without unrolling first.
NEEDS_UNROLL = {
    ("lit_shape_infer", "growing_carry"),
    ("lit_shape_infer", "join_widths"),
    ("lit_pipeline", "growing"),
}


def _cases():
    for source, text in SOURCES.items():
        for name in support.function_names(parse_module(text)):
            yield source, name


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.replace("dycl-", "")[:40])
@pytest.mark.parametrize("source", sorted(SOURCES))
def test_pass_preserves_results(source, spec):
    text = SOURCES[source]
    before = parse_module(text)
    outlines = "outline" in spec or "pipeline" in spec
    if outlines and "unroll" not in spec and "pipeline" not in spec:
        names = support.function_names(before)
        if any((source, n) in NEEDS_UNROLL for n in names):
            pytest.skip("has shapes only unrolling determines")
    after = support.apply(spec, text)
    if outlines:
        support.check_hcfg(after)
    weights = support.random_weights(before)
    for fn in support.host_functions(before):
        name = fn.sym_name.data
        support.assert_equivalent(before, after, name, support.random_args(fn), weights)


def test_early_exit_takes_both_exits_and_keeps_them_apart():
    before = parse_module(samples.EARLY_EXIT_WIDTHS)
    after = support.apply("dycl-pipeline", samples.EARLY_EXIT_WIDTHS)
    fn = next(support.host_functions(before))
    outs = support.assert_equivalent(before, after, "forward", support.random_args(fn, 20),
                                     support.random_weights(before))
    assert {int(o[1]) for o in outs} == {0, 1}
    assert {tuple(o[0].shape) for o in outs} == {(1, 3), (1, 7)}
    assert len(support.subdnn_functions(after)) == 3


def test_decode_loop_breaks_at_different_steps():
    before = parse_module(samples.DECODE)
    after = support.apply("dycl-pipeline", samples.DECODE)
    fn = next(support.host_functions(before))
    outs = support.assert_equivalent(before, after, "forward", support.random_args(fn, 16),
                                     support.random_weights(before))
    lengths = {o[1] for o in outs}
    assert 6 in lengths and len(lengths) >= 3  # the bound and several early breaks
    # The step is one sub-DNN called in the loop (kept rolled); the first token another.
    assert len(support.subdnn_functions(after)) == 2
