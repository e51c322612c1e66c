"""dycl-opt and dycl-run from the command line: outputs, flags, and diagnostics on bad input."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.foundation import samples

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(*args, input=None):
    return subprocess.run(list(args), capture_output=True, text=True, input=input, timeout=120)


def test_help_lists_dycl_and_xdsl_passes():
    out = "".join(run("dycl-opt", "--help").stdout.split())  # argparse wraps at hyphens
    for name in ("dycl-const-prop", "dycl-unroll-loops", "canonicalize", "cse"):
        assert name in out


def test_output_file_and_round_trip(tmp_path):
    out = tmp_path / "out.mlir"
    first = run("dycl-opt", str(EXAMPLES / "early_exit.mlir"), "-p", "dycl-const-prop", "-o", str(out))
    assert first.returncode == 0, first.stderr
    again = run("dycl-opt", str(out))
    assert again.returncode == 0 and again.stdout == out.read_text()


def test_split_input_file(tmp_path):
    source = tmp_path / "two.mlir"
    source.write_text(samples.EARLY_EXIT + "\n// -----\n" + samples.BOUNDED_WHILE)
    result = run("dycl-opt", str(source), "--split-input-file", "-p", "dycl-const-prop")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count('"builtin.module"') == 2 and "// -----" in result.stdout


def test_verify_diagnostics_prints_the_verifier_error(tmp_path):
    source = tmp_path / "bad_type.mlir"
    source.write_text(
        '"builtin.module"() ({\n  %0 = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.float\n}) : () -> ()\n'
    )
    result = run("dycl-opt", str(source), "--verify-diagnostics")
    assert result.returncode == 0
    assert "torch.int" in result.stdout and "Traceback" not in result.stdout + result.stderr
    plain = run("dycl-opt", str(source))
    assert plain.returncode == 1 and "error:" in plain.stderr and "Traceback" not in plain.stderr


@pytest.mark.parametrize(
    "mutation",
    [
        lambda s: s[: len(s) // 2],  # truncated
        lambda s: s.replace("!torch.vtensor<[1,4],f32>", "!torch.vtensor<[1,4]f32>", 1),
        lambda s: s.replace('"scf.yield"', '"scf.yeld"', 1).replace("%h1", "%h1x", 1),
        lambda s: s.replace("<{value = 0 : i64}>", "<{value = }>", 1),
    ],
    ids=["truncated", "bad-type", "undefined-value", "bad-attribute"],
)
def test_malformed_ir_gets_a_located_error(tmp_path, mutation):
    source = tmp_path / "broken.mlir"
    source.write_text(mutation(samples.EARLY_EXIT))
    result = run("dycl-opt", str(source))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{source}:" in result.stderr and "error:" in result.stderr


def test_dycl_run_random_inputs_are_reproducible():
    args = ["dycl-run", str(EXAMPLES / "early_exit.mlir"), "--random", "--seed", "3",
            "--weights", str(EXAMPLES / "early_exit.weights.npz")]
    first, second = run(*args), run(*args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout and first.stdout.startswith("result 0: tensor[1, 4]")


def test_dycl_run_reports_missing_weights_without_traceback():
    result = run("dycl-run", str(EXAMPLES / "early_exit.mlir"), "--random")
    assert result.returncode == 1
    assert "no weight named 'fc.weight'" in result.stderr and "Traceback" not in result.stderr
