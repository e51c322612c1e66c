"""Malformed IR and pipelines: dycl-opt ends every case with a diagnostic and exit code 1
(or 0 when the mutant is valid) - no traceback, no hang."""

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dycl.fuzz.ir_campaign import FAILING, MutationCase, load_seeds, run_mutations
from dycl.fuzz.ir_mutate import run_case

LIT = Path(__file__).resolve().parents[2] / "lit_tests"
SEEDS = load_seeds([LIT])
LOCATED = re.compile(r"^\S+:\d+:\d+: error: \S", re.MULTILINE)


def test_a_fixed_slice_of_mutations_ends_in_diagnostics():
    statuses, failures = run_mutations(150, 7, SEEDS, timeout=30.0)
    assert not [(c.index, c.mutation, c.pipeline, r.status, r.stderr[:200]) for c, r in failures]
    assert statuses["diagnostic"] > 60  # the mutations do break the input


# The internal errors of the 10,000-case campaign with seed 1: IR that parses but does not
# verify, on which xDSL's verifier (it verifies an op's contents first) or a pass crashed.
# A case depends on the seed files: these are the 16 lit inputs of that campaign.
CAMPAIGN_SEEDS = [(name, text) for name, text in SEEDS if Path(name).relative_to(LIT).as_posix() in {
    "dialects/dycl-param-invalid.mlir", "dialects/dycl-param.mlir", "dialects/torch-ops.mlir",
    "dialects/torch-types.mlir", "dycl-const-prop.mlir", "dycl-dedup.mlir", "dycl-hoist-free.mlir",
    "dycl-opt/errors.mlir", "dycl-opt/split-input-file.mlir", "dycl-outline-errors.mlir", "dycl-outline.mlir",
    "dycl-pipeline.mlir", "dycl-run/early-exit.mlir", "dycl-shape-infer.mlir", "dycl-unroll-loops.mlir",
    "hcfg.mlir"}]
CAMPAIGN_SEED_1 = {
    # a block label moved to module level (two module blocks): func.call's symbol lookup
    # in the verifier raised ValueError "'block' property ... only available for single-block regions"
    2913: ("'builtin.module' op Region 'body' at position 0 expected a single block, but got 2 blocks", ":4:1: "),
    7351: ("'builtin.module' op Region 'body' at position 0 expected a single block, but got 2 blocks", ":4:1: "),
    9770: ("'builtin.module' op Region 'body' at position 0 expected a single block, but got 2 blocks", ":4:1: "),
    # `function_typefunction_type`: func.return's verifier read the missing property (KeyError)
    8218: ("'func.func' op property 'function_type' expected", ":41:3: "),
}


@pytest.mark.parametrize("index", sorted(CAMPAIGN_SEED_1))
def test_campaign_seed_1_internal_errors_are_located_diagnostics(index):
    case = MutationCase.make(1, index, CAMPAIGN_SEEDS)
    assert case.source.endswith(("dycl-hoist-free.mlir", "dycl-shape-infer.mlir")), "the seed files changed"
    result = run_case(case.text, case.pipeline, timeout=120.0)
    message, where = CAMPAIGN_SEED_1[index]
    assert result.status == "diagnostic" and result.exit_code == 1, result.stderr
    assert result.error_type == "IRVerifyError"
    first = result.stderr.splitlines()[0]
    assert LOCATED.match(first) and where in first and message in first, result.stderr


def test_campaign_seed_1_case_4580_is_no_crash():
    """`insert '>'` made an op name `torch.tensor_static_info_>cast`: dycl-shape-infer raised
    ValueError ("not enough values to unpack"). The op has no shape rule now; dycl-outline
    reported the `?` dim it gave as one it could not make static, and since sub-DNNs take
    dims known only at run time, it outlines the unknown op like any other torch op (a
    backend would name it when it fails to compile it)."""
    case = MutationCase.make(1, 4580, CAMPAIGN_SEEDS)
    assert case.mutation == "insert '>' at 5253", "the seed files changed"
    result = run_case(case.text, case.pipeline, timeout=120.0)
    assert result.status == "ok" and result.exit_code == 0, result.stderr
    assert "Traceback" not in result.stderr


FUNC = '"func.func"() <{{sym_name = "f", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>}}> ({{\n{}}}) : () -> ()\n'
RELU = '"torch.aten.relu"({}) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>'
RETURN = '"func.return"({}) : (!torch.vtensor<[2],f32>) -> ()'


@pytest.mark.parametrize("pipeline", ["", "dycl-const-prop", "dycl-outline,dycl-hoist-free,dycl-dedup", "dycl-pipeline"])
def test_a_use_above_its_definition_is_located_before_any_pass(pipeline):
    """Swapped lines: xDSL checks no dominance, and a pass erased an op that still had
    uses ("Erased SSA value is used by the operation")."""
    body = (f"^bb0(%x: !torch.vtensor<[2],f32>):\n  %z = {RELU.format('%y')}\n  %y = {RELU.format('%x')}\n"
            f"  {RETURN.format('%z')}\n")
    result = run_case(FUNC.format(body), pipeline, timeout=120.0)
    assert result.status == "diagnostic" and result.error_type == "IRVerifyError", result.stderr
    assert re.search(r":3:3: error: 'torch.aten.relu' op operand #0 \(%y\) does not dominate this use "
                     r"\(defined at line 4, column 3\)", result.stderr)


@pytest.mark.parametrize("pipeline", ["dycl-shape-infer", "dycl-outline", "dycl-hoist-free", "dycl-dedup"])
def test_a_function_of_two_blocks_is_a_pass_diagnostic(pipeline):
    """Valid xDSL IR (cf-style blocks) that the HCFG passes do not take: their
    `fn.body.block` raised ValueError."""
    body = (f"^bb0(%x: !torch.vtensor<[2],f32>):\n  {RETURN.format('%x')}\n"
            f"^bb1(%y: !torch.vtensor<[2],f32>):\n  {RETURN.format('%y')}\n")
    result = run_case(FUNC.format(body), pipeline, timeout=120.0)
    assert result.status == "diagnostic" and result.error_type == "HCFGError", result.stderr
    assert "error: @f: a function with 2 blocks" in result.stderr


def test_a_sub_dnn_declaration_is_a_pass_diagnostic():
    text = ('"func.func"() <{sym_name = "subdnn_0", function_type = () -> (), sym_visibility = "private"}> ({\n'
            "}) {dycl.subdnn} : () -> ()\n")
    for pipeline in ("dycl-hoist-free", "dycl-dedup"):
        result = run_case(text, pipeline, timeout=120.0)
        assert result.status == "diagnostic" and "error: @subdnn_0: a sub-DNN with no body" in result.stderr


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowed alarm
def test_an_alarm_swallowed_by_a_destructor_is_a_hang_not_a_traceback(monkeypatch):
    """Regression (seed 3, cases 1204 and 1286 on a loaded machine): the time limit fired
    inside a `__del__`, Python printed "Exception ignored ... Traceback" and the run went
    on; the case was reported as a traceback instead of a hang (which is retried)."""
    import dycl.tools.dycl_opt as opt

    class SlowToCollect:
        def __del__(self):
            time.sleep(60)  # the alarm interrupts this

    def main(argv):
        SlowToCollect()
        return 1

    monkeypatch.setattr(opt, "main", main)
    assert run_case("", "", timeout=0.5).status == "hang"


@pytest.mark.parametrize("index", [0, 1, 2])
def test_the_command_agrees_with_the_in_process_run(index, tmp_path):
    case = MutationCase.make(11, index, SEEDS)
    path = tmp_path / "case.mlir"
    path.write_text(case.text)
    argv = [sys.executable, "-m", "dycl.tools.dycl_opt", str(path)] + (["-p", case.pipeline] if case.pipeline else [])
    run = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in run.stderr
    assert run.returncode in (0, 1)
    assert (run.returncode == 0) == (run_case(case.text, case.pipeline, 60.0).status == "ok")
    if run.returncode:
        assert ": error: " in run.stderr


@pytest.mark.parametrize("pipeline", ["{", "dycl-const-prop{", "dycl-outline{min-ops=}", "dycl-const-prop{,dycl-dedup"])
def test_a_malformed_pipeline_is_a_diagnostic_not_a_traceback(pipeline, tmp_path):
    """Regression: xDSL's ArgSpecParseError is a BaseException and escaped dycl-opt's main."""
    path = tmp_path / "ok.mlir"
    path.write_text('"builtin.module"() ({}) : () -> ()\n')
    run = subprocess.run([sys.executable, "-m", "dycl.tools.dycl_opt", str(path), "-p", pipeline],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.startswith("<pass pipeline>: error: Error parsing pass pipeline")


def test_junk_in_a_block_says_what_was_expected():
    """Regression: xDSL's message was only ' in block definition'."""
    text = '"func.func"() <{sym_name = "f", function_type = () -> ()}> ({\n  =() : () -> ()\n}) : () -> ()\n'
    result = run_case(text, "")
    assert result.status == "diagnostic"
    assert ":2:3: error: expected an operation, '}' or a block label" in result.stderr


def test_failing_statuses_are_the_ones_the_issue_forbids():
    assert set(FAILING) == {"internal", "traceback", "hang", "bad-exit"}


def test_an_unterminated_string_before_a_long_line_does_not_hang():
    """Regression: xDSL's string-literal regex backtracked exponentially (fixed in dycl.ir)."""
    text = '"builtin.module"() ({\n  %0 = "unterminated' + " (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>" * 3 + "\n}) : () -> ()\n"
    result = run_case(text, "dycl-const-prop", timeout=60.0)
    assert result.status == "diagnostic", result.stderr
    assert "string literal" in result.stderr


def test_shape_infer_on_an_op_name_without_a_namespace_is_a_diagnostic():
    """Regression: "torch.<name>" with no "<ns>.<op>" made dycl-shape-infer raise ValueError
    ("not enough values to unpack") from TorchOpCall; such an op now has no shape rule."""
    text = (
        '"func.func"() <{sym_name = "f", function_type = (!torch.vtensor<[1,?],f32>) -> !torch.vtensor<[1,?],f32>}> ({\n'
        "^bb0(%x: !torch.vtensor<[1,?],f32>):\n"
        '  %y = "torch.oddname"(%x) : (!torch.vtensor<[1,?],f32>) -> !torch.vtensor<[1,?],f32>\n'
        '  "func.return"(%y) : (!torch.vtensor<[1,?],f32>) -> ()\n'
        "}) : () -> ()\n"
    )
    result = run_case(text, "dycl-shape-infer", timeout=60.0)
    assert result.status == "ok", result.stderr


def test_const_prop_keeps_an_op_in_terminator_position():
    """Regression (seed 1, case 2118 of the rerun): with "func.return" renamed to an unknown
    torch op, dycl-const-prop erased that op as dead and left the function an empty block,
    which no longer verified (found once dycl-opt verified the IR after each pass); it also
    erased torch-mlir's `torch.prim.If.yield`."""
    case = MutationCase.make(1, 2118, CAMPAIGN_SEEDS)
    assert case.mutation == "op '\"func.return\"' -> '\"torch.aten.no_such_op\"'", "the seed files changed"
    result = run_case(case.text, "dycl-const-prop", timeout=120.0)
    assert result.status == "ok", result.stderr
    result = run_case(case.text, case.pipeline, timeout=120.0)  # dycl-pipeline
    assert result.status == "diagnostic", result.stderr
    assert "error: @fold_int_arith: op 1 (torch.aten.no_such_op): a function that does not end in func.return" \
        in result.stderr

    from dycl.ir import parse_module, print_module, verify_module
    from dycl.passes.const_prop import ConstPropPass

    text = (
        '"func.func"() <{sym_name = "f", function_type = (!torch.vtensor<[2],f32>, !torch.bool) -> !torch.vtensor<[2],f32>}> ({\n'
        "^bb0(%x: !torch.vtensor<[2],f32>, %b: !torch.bool):\n"
        '  %y = "torch.aten.relu"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>\n'
        '  %z = "torch.prim.If"(%b) ({\n'
        '    "torch.prim.If.yield"(%y) : (!torch.vtensor<[2],f32>) -> ()\n'
        "  }, {\n"
        '    "torch.prim.If.yield"(%x) : (!torch.vtensor<[2],f32>) -> ()\n'
        "  }) : (!torch.bool) -> !torch.vtensor<[2],f32>\n"
        '  "func.return"(%z) : (!torch.vtensor<[2],f32>) -> ()\n'
        "}) : () -> ()\n"
    )
    module = parse_module(text)
    ConstPropPass().apply(None, module)
    verify_module(module)
    assert print_module(module).count('"torch.prim.If.yield"') == 2


def test_campaign_seed_2_case_8275_a_sub_dnn_without_func_return_is_a_diagnostic():
    """`func.ret\\t\\turn`: an unregistered op ended the sub-DNN @mixed (xDSL verifies it as a
    terminator) and dycl-hoist-free's `assert isinstance(ret, func.ReturnOp)` failed; the
    AssertionError's empty message made dycl-opt print `file: error: ` (no diagnostic)."""
    seeds = CAMPAIGN_SEEDS + [(n, t) for n, t in SEEDS if n.endswith("dycl-opt/verifier-diagnostics.mlir")]
    case = MutationCase.make(2, 8275, sorted(seeds))
    assert case.mutation == "insert '\\t\\t' at 5678", "the seed files changed"
    result = run_case(case.text, case.pipeline, timeout=120.0)
    assert result.status == "diagnostic" and result.error_type == "HCFGError", result.stderr
    assert "error: @mixed: op 10 (func.ret\t\turn): a sub-DNN that does not end in func.return" in result.stderr


def test_an_internal_error_without_a_message_still_says_what_it_is():
    from dycl.tools.diagnostics import format_error

    assert format_error(AssertionError(), "in.mlir") == "in.mlir: error: AssertionError"
