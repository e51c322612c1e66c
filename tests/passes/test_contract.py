"""The HCFG contract (docs/conventions.md, "The HCFG"): every rule of `dycl.hcfg.CONTRACT`
broken by a hand-made pipeline is a `PipelineError` naming the rule, the function, the op
and the last pass that ran, from `run_passes` (what `dycl.compile(passes=...)` runs), from
`dycl.compile_module` before any backend, and from `dycl-opt --verify-hcfg`."""

import pytest

import dycl
from dycl.hcfg import CONTRACT, contract_violations
from dycl.ir import make_context, parse_module
from dycl.passes.compose import parse_passes, run_passes
from dycl.passes.pipeline import PipelinePass
from dycl.tools.dycl_opt import main as dycl_opt
from tests.foundation import samples as foundation_samples
from tests.passes import samples
from tests.passes.contract_breakers import EraseArgumentRank, LoopInSubDNN, PublishSubDNNs, SecondBlock

# rule -> (a pipeline that breaks it, the last pass, the function and op it names)
BREAKERS = {
    "subdnn-private": ([PipelinePass(), PublishSubDNNs()], "test-publish-subdnns", "subdnn_0", None),
    "subdnn-tensor-signature": ([PipelinePass(), EraseArgumentRank()], "test-erase-argument-rank", "subdnn_0", None),
    "subdnn-straight-line": ([PipelinePass(), LoopInSubDNN()], "test-loop-in-subdnn", "subdnn_0", "scf.for"),
    "one-block-functions": ([PipelinePass(), SecondBlock()], "test-second-block", "forward", None),
    # no dycl-outline: the tensor math stays in the host, which host code cannot run
    "host-translatable": ("dycl-const-prop,dycl-shape-infer", "dycl-shape-infer", "forward", "torch.aten.linear"),
}


def run(passes, text: str):
    module = parse_module(text)
    run_passes(make_context(), module, parse_passes(passes))
    return module


def test_every_rule_has_a_pipeline_that_breaks_it():
    assert set(BREAKERS) == set(CONTRACT)


@pytest.mark.parametrize("rule", sorted(BREAKERS))
def test_a_broken_rule_is_a_pipeline_error_naming_rule_function_op_and_pass(rule):
    passes, last_pass, function, op_name = BREAKERS[rule]
    with pytest.raises(dycl.PipelineError) as info:
        run(passes, samples.EARLY_EXIT_WIDTHS)
    error = info.value
    assert (error.rule, error.function, error.last_pass) == (rule, function, last_pass)
    message = str(error)
    assert f"rule '{rule}'" in message and f"after pass {last_pass}" in message and f"@{function}" in message
    if op_name is not None:
        assert error.op is not None and op_name in message


@pytest.mark.parametrize("name", sorted({**samples.SAMPLES, **foundation_samples.SAMPLES}))
def test_dycl_pipeline_keeps_the_contract(name):
    text = {**samples.SAMPLES, **foundation_samples.SAMPLES}[name]
    for spec in ("dycl-pipeline", "dycl-pipeline{keep-branches=false merge-calls=true}",
                 "dycl-pipeline,dycl-single-thread{max-macs=1000}"):
        assert contract_violations(run(spec, text)) == []


def test_outline_without_hoist_free_is_an_hcfg():
    # dycl-hoist-free is an optimisation: what dycl-outline leaves is already an HCFG.
    for text in samples.SAMPLES.values():
        assert contract_violations(run("dycl-const-prop,dycl-shape-infer,dycl-outline", text)) == []


def test_no_pass_names_no_pass():
    with pytest.raises(dycl.PipelineError, match="before any pass ran") as info:
        run((), samples.EARLY_EXIT_WIDTHS)
    assert info.value.last_pass is None and info.value.rule == "host-translatable"


def test_compile_module_stops_before_the_backends():
    passes, *_ = BREAKERS["subdnn-straight-line"]
    module = parse_module(samples.EARLY_EXIT_WIDTHS)
    with pytest.raises(dycl.PipelineError, match="scf.for in a sub-DNN.*after pass test-loop-in-subdnn|after pass test-loop-in-subdnn.*scf.for"):
        dycl.compile_module(module, {}, passes=passes, progress=False)  # no weights: no backend may run


def test_dycl_opt_verify_hcfg_is_a_located_diagnostic(tmp_path, capsys):
    source = tmp_path / "ee.mlir"
    source.write_text(samples.EARLY_EXIT_WIDTHS)
    assert dycl_opt([str(source), "-p", "dycl-const-prop,dycl-shape-infer", "--verify-hcfg"]) == 1
    err = capsys.readouterr().err
    line = next(i for i, text in enumerate(samples.EARLY_EXIT_WIDTHS.splitlines(), 1) if "torch.aten.linear" in text)
    assert err.startswith(f"{source}:{line}:5: error: the module breaks the HCFG contract after pass dycl-shape-infer: "
                          "rule 'host-translatable'")
    assert "Traceback" not in err and err.count("\n") == 1
    assert dycl_opt([str(source), "-p", "dycl-pipeline", "--verify-hcfg"]) == 0
    assert '"func.func"' in capsys.readouterr().out
