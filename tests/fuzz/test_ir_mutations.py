"""Malformed IR and pipelines: dycl-opt ends every case with a diagnostic and exit code 1
(or 0 when the mutant is valid) - no traceback, no hang."""

import subprocess
import sys
from pathlib import Path

import pytest

from dycl.fuzz.ir_campaign import FAILING, MutationCase, load_seeds, run_mutations
from dycl.fuzz.ir_mutate import run_case

LIT = Path(__file__).resolve().parents[2] / "lit_tests"
SEEDS = load_seeds([LIT])


# Internal errors still reported as `file: error: ...` with exit 1, not yet turned into real
# diagnostics (see docs/fuzzing.md, "Known"): xDSL's verifier and rewriter raise ValueError.
KNOWN_INTERNAL = ("'block' property of Region class is only available for single-block regions",
                  "Erased SSA value is used by the operation")


def test_a_fixed_slice_of_mutations_ends_in_diagnostics():
    statuses, failures = run_mutations(250, 7, SEEDS, timeout=30.0)
    unknown = [(c.index, c.mutation, c.pipeline, r.status, r.stderr[:200]) for c, r in failures
               if not (r.status == "internal" and any(k in r.stderr for k in KNOWN_INTERNAL))]
    assert not unknown
    assert statuses["diagnostic"] > 100  # the mutations do break the input


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
