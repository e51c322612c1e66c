"""dycl-merge-calls computes exactly what the HCFG computed before it (reference
interpreter, random weights and inputs), keeps the HCFG contract, and makes fewer sub-DNN
calls per run where a call follows a branch that ends in one (SkipNet)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dycl import interpreter
from dycl.ir import parse_module
from dycl.passes._common import subdnn_functions
from tests.passes import samples, support

LIT = Path(__file__).resolve().parents[2] / "lit_tests"
CASES = [c for c in (LIT / "dycl-merge-calls.mlir").read_text().split("// -----") if c.strip()]
SPECS = ["dycl-merge-calls", "dycl-merge-calls{sink-into-branches=false}"]


class CallCounter:
    """Counts the sub-DNN calls the reference interpreter makes."""

    def __init__(self, monkeypatch, module):
        self.names = {f.sym_name.data for f in subdnn_functions(module)}
        self.count = 0
        original = interpreter.ReferenceInterpreter.call_op
        counter = self

        def call_op(self, op, inputs):
            if isinstance(op, str):
                name = op
            elif hasattr(op, "root_reference"):  # a SymbolRefAttr (func.call's callee)
                name = op.root_reference.data
            else:
                name = getattr(getattr(op, "sym_name", None), "data", None)
            if name in counter.names:
                counter.count += 1
            return original(self, op, inputs)

        monkeypatch.setattr(interpreter.ReferenceInterpreter, "call_op", call_op)


def calls_per_run(monkeypatch, module, name, arg_lists, weights) -> list[int]:
    counts = []
    with monkeypatch.context() as patch:
        counter = CallCounter(patch, module)
        for args in arg_lists:
            counter.count = 0
            interpreter.run_function(module, args, weights, name=name)
            counts.append(counter.count)
    return counts


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("case", range(len(CASES)))
def test_lit_cases_preserve_results(case, spec):
    before = parse_module(CASES[case])
    after = support.apply(spec, CASES[case])
    support.check_hcfg(after, allow_host_compute=True)
    weights = support.random_weights(before)
    for fn in support.host_functions(before):
        support.assert_equivalent(before, after, fn.sym_name.data, support.random_args(fn), weights)


def test_skip_block_makes_one_call_fewer_when_the_block_runs(monkeypatch):
    text = next(c for c in CASES if '"skip_block"' in c)
    before = parse_module(text)
    after = support.apply("dycl-merge-calls", text)
    fn = next(support.host_functions(before))
    args = support.random_args(fn, 20)
    support.assert_equivalent(before, after, "skip_block", args, {})
    old = calls_per_run(monkeypatch, before, "skip_block", args, {})
    new = calls_per_run(monkeypatch, after, "skip_block", args, {})
    # 2 calls when the gate skips the block, 3 when it runs it; after: 2 on both paths.
    assert set(old) == {2, 3} and set(new) == {2}


@pytest.mark.parametrize("source", sorted(samples.SAMPLES))
def test_pipeline_with_merge_calls_preserves_results(source):
    text = samples.SAMPLES[source]
    before = parse_module(text)
    after = support.apply("dycl-pipeline{merge-calls=true}", text)
    support.check_hcfg(after)
    weights = support.random_weights(before)
    for fn in support.host_functions(before):
        support.assert_equivalent(before, after, fn.sym_name.data, support.random_args(fn), weights)


@pytest.mark.slow
def test_skipnet_calls_per_inference(monkeypatch):
    """The zoo's SkipNet split as the DyCL paper splits it (keep-branches off: kept gates
    make it one call): same outputs on every path input, 18 calls instead of 25-30."""
    import torch

    from dycl.frontend import import_module
    from dycl.ir import make_context
    from dycl.passes.pipeline import PipelinePass
    from dycl.zoo import REGISTRY

    entry = REGISTRY["skipnet_ff"]
    model = entry.build(0)
    program = import_module(model, tuple(entry.example_inputs()))
    modules = {}
    for merge in (False, True):
        modules[merge] = program.module.clone()
        PipelinePass(merge_calls=merge, keep_branches=False).apply(make_context(), modules[merge])
    support.check_hcfg(modules[True])
    inputs = [list(args) for args in entry.path_inputs()]
    name = program.function_name
    for args in inputs:
        want = interpreter.run_function(modules[False], args, program.weights, name=name)
        got = interpreter.run_function(modules[True], args, program.weights, name=name)
        assert support.same(got, want)
        with torch.no_grad():
            eager = model(*args)
        eager = eager[0] if isinstance(eager, tuple) else eager
        assert torch.allclose(got[0], eager, rtol=1e-4, atol=1e-5)
    old = calls_per_run(monkeypatch, modules[False], name, inputs, program.weights)
    new = calls_per_run(monkeypatch, modules[True], name, inputs, program.weights)
    assert all(n < o for n, o in zip(new, old)), (old, new)
    assert max(new) <= 18, new
