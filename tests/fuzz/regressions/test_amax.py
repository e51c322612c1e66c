"""Found by `python -m dycl.fuzz --seed 20000` (seeds 20010-20013, shrunk by hand): a full
reduction `x.amax()` (aten.amax with dim=[]) inside a sub-DNN fails the ONNX Runtime
backend: "op torch.aten.amax is not supported: ONNX export failed ... aten_amax". Seed 40300
found the same op missing from TVM's Relax torch frontend ("Unsupported function types
['amax.default']")."""

import os
import tempfile

import pytest

from dycl.fuzz.program import Cond, If, Line, Program

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))

PROGRAM = Program(
    seed=20011,
    input_shape=(1, 4, 4, 4),
    modules={},
    helpers={},
    prologue=[],
    body=[
        If([(Cond("x.amax()", 0), [Line("x = x * 2.0 + 0.1")])], [Line("x = torch.relu(x)")]),
        Line("x = x.mean((2, 3))"),
    ],
    epilogue=["return x"],
)


def test_amax_program_is_exact_in_the_interpreter():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(PROGRAM, None)
    assert outcome.status == "ok", outcome.detail


def test_amax_program_compiles_for_onnxruntime():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(PROGRAM, "onnxruntime")
    assert outcome.status == "ok", outcome.detail


def test_amax_program_compiles_for_tvm():
    from dycl.fuzz.oracle import check_program

    outcome = check_program(PROGRAM, "tvm")
    assert outcome.status == "ok", outcome.detail


@pytest.mark.slow  # a 14-sub-DNN program through TVM: ~40 s
def test_seed_40300_compiles_for_tvm():
    from dycl.fuzz.generate import generate
    from dycl.fuzz.oracle import check_program

    outcome = check_program(generate(40300), "tvm")
    assert outcome.status == "ok", outcome.detail
