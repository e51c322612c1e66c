"""Complex tensors compile as their real views (dycl/frontend/complex_values.py): Meta
Llama's rotary embeddings (`torch.polar`, `view_as_complex`, a complex multiply,
`view_as_real`) with `freqs_cis` a plain attribute or a buffer sliced at a runtime
`start_pos`, in a decode loop, exact against eager on the reference interpreter and on
ONNX Runtime (before: the compile died on `complex64`). A complex model input or output,
and an op on complex values DyCL does not lower, are refused at the user's line."""

from __future__ import annotations

import inspect

import pytest
import torch

import dycl
from dycl.frontend import FrontendError, import_module
from tests.frontend import complex_models as M
from tests.frontend.helpers import eager, max_abs_error, run

CASES = {
    "attribute": (M.RotaryBlock, M.block_inputs),
    "buffer": (M.RotaryBufferBlock, M.block_inputs),
    "decode_loop": (M.RotaryDecoder, M.decoder_inputs),
    "arithmetic": (M.ComplexArithmetic, M.arithmetic_inputs),
}


def _errors(factory, inputs, compiled):
    torch.manual_seed(0)
    model = factory().eval()
    inputs = inputs()
    program = compiled(model, inputs[0])
    return [max_abs_error(eager(model, args), program(*args)) for args in inputs]


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_values_are_exact_on_the_interpreter(name):
    factory, inputs = CASES[name]

    def imported(model, example):
        program = import_module(model, example)
        assert not any("complex" in str(t) for op in program.module.walk() for t in op.result_types)
        return lambda *args: run(program, args)

    errors = _errors(factory, inputs, imported)
    assert max(errors) <= 1e-5, errors


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_values_compile_exactly_on_onnxruntime(name):
    factory, inputs = CASES[name]
    errors = _errors(factory, inputs, lambda model, example: dycl.compile(model, example, backend="onnxruntime", progress=False))
    assert max(errors) <= 1e-5, errors


@pytest.mark.slow
@pytest.mark.parametrize("name", ["attribute", "decode_loop"])
def test_complex_values_compile_exactly_on_tvm(name):
    factory, inputs = CASES[name]
    errors = _errors(factory, inputs, lambda model, example: dycl.compile(model, example, backend="tvm", progress=False))
    assert max(errors) <= 1e-5, errors


def test_a_start_past_the_table_raises_as_eager_does():
    """`freqs_cis[start_pos : start_pos + seqlen]` is shorter than the prompt past the
    table's end: eager's `view` raises, and so does the compiled model, at the call."""
    torch.manual_seed(0)
    model = M.RotaryBlock().eval()
    compiled = dycl.compile(model, M.block_inputs()[0], backend="onnxruntime", progress=False)
    x = torch.randn(1, 3, M.DIM)
    with pytest.raises(Exception):
        eager(model, (x, 62))
    with pytest.raises(RuntimeError, match="freqs_cis"):
        compiled(x, 62)


def _line_of(cls, text: str) -> int:
    lines, first = inspect.getsourcelines(cls)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pytest.mark.parametrize("model, example, construct, line", [
    (M.ComplexOut, (torch.randn(2, 4),), "returns a complex tensor", "return torch.view_as_complex"),
    (M.ComplexIn, (torch.randn(2, 4, dtype=torch.complex64),), "input `z` is a complex tensor", "def forward"),
    (M.ComplexExp, (torch.randn(3, 8),), "torch.ops.aten.exp.default` on complex values", "z = torch.exp"),
])
def test_complex_values_dycl_does_not_lower_are_refused_at_their_line(model, example, construct, line):
    with pytest.raises(FrontendError) as caught:
        dycl.compile(model().eval(), example, backend="onnxruntime", progress=False)
    assert construct in str(caught.value)
    assert caught.value.file.endswith("complex_models.py")
    assert caught.value.line == _line_of(model, line)
