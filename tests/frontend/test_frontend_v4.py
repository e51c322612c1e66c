"""Constructs of published code that were refused or crashed (issue "Frontend v4"), each
compared with eager on the reference interpreter and on ONNX Runtime.

- optional forward inputs (nanoGPT's `top_k: Optional[int] = None`, `mask=None` tested with
  `is not None`): one compiled model takes None and a value; an optional tensor compiled
  from None refuses a tensor at call time, saying how to compile for it (optional.py);
- starred unpacking and `f(*args)` (unpacking.py);
- tied weights (`KeyError: 'lm_head.weight'` before) and None submodules (`vars(None)` in the
  export cache before)."""

from __future__ import annotations

import pytest
import torch

import dycl
from dycl.frontend import FrontendError, import_module
from tests.frontend import optional_input_models as O
from tests.frontend import unpacking_models as U
from tests.frontend.helpers import eager, max_abs_error, run, tiered

CASES = {
    # name: (model, inputs, the example's index)
    "top_k_given": (O.TopKSampling, O.sampling_inputs, 1),
    "top_k_none": (O.TopKSampling, O.sampling_inputs, 0),
    "top_k_unannotated_given": (O.UnannotatedTopK, O.sampling_inputs, 1),
    "mask_given": (O.MaskedAttention, O.attention_inputs, 0),
    "starred_encoder_output": (U.StarredEncoderOutput, U.encoder_inputs, 0),
    "head_and_tail": (U.HeadAndTail, U.inputs_8, 0),
    "starred_call": (U.StarredCall, U.inputs_8, 0),
    "tied_weights": (U.TiedWeights, U.token_inputs, 0),
    "none_submodules": (U.NoneSubmodules, U.inputs_8, 0),
}


def _model(factory):
    torch.manual_seed(0)
    return factory().eval()


@pytest.mark.parametrize("name", sorted(CASES))
def test_exact_on_the_interpreter(name):
    factory, inputs, example = CASES[name]
    model, calls = _model(factory), inputs()
    program = import_module(model, calls[example])
    errors = [max_abs_error(eager(model, args), run(program, args)) for args in calls]
    assert max(errors) <= 1e-5, errors


@pytest.mark.parametrize("name", tiered(CASES, {"mask_given", "starred_encoder_output", "tied_weights", "none_submodules"}))
def test_exact_on_onnxruntime(name):
    factory, inputs, example = CASES[name]
    model, calls = _model(factory), inputs()
    compiled = dycl.compile(model, calls[example], backend="onnxruntime", progress=False)
    errors = [max_abs_error(eager(model, args), compiled(*args)) for args in calls]
    assert max(errors) <= 1e-5, errors


def test_optional_inputs_take_both_kinds():
    """The example gives one kind; the compiled model takes None and a value."""
    model = _model(O.TopKSampling)
    program = import_module(model, O.sampling_inputs()[0])
    assert program.function.attributes["dycl.input_tree"].data.count('"optional"') == 1
    kinds = {args[2] is None for args in O.sampling_inputs()}
    assert kinds == {True, False}


@pytest.mark.parametrize("factory, inputs, position, name", [
    (O.MaskedAttention, O.attention_inputs, 1, "mask"),
    (O.UnannotatedTopK, O.sampling_inputs, 0, "top_k"),
])
def test_unseen_kind_is_an_input_error_saying_how_to_compile(factory, inputs, position, name):
    """An optional tensor (or an unannotated optional) whose example is None: its value's
    type is unknown, so the model is compiled for None, and a value is refused, never dropped."""
    model, calls = _model(factory), inputs()
    example = next(args for args in calls if args[-1] is None)
    given = next(args for args in calls if args[-1] is not None)
    compiled = dycl.compile(model, example, backend="onnxruntime", progress=False)
    assert max_abs_error(eager(model, example), compiled(*example)) <= 1e-5
    with pytest.raises(dycl.InputError, match=f"`{name}`.*compiled for None only.*compile with"):
        compiled(*given)
    with pytest.raises(ValueError, match="compiled for None only"):  # (the interpreter too)
        run(import_module(model, example), given)


def test_optional_input_used_without_test_takes_the_example_kind():
    """`mask` handed on untested: compiled for a tensor only, None is an InputError."""
    model, calls = _model(O.MaskHandedOn), O.attention_inputs()
    compiled = dycl.compile(model, calls[0], backend="onnxruntime", progress=False)
    assert max_abs_error(eager(model, calls[2]), compiled(*calls[2])) <= 1e-5
    with pytest.raises(dycl.InputError, match="mask"):
        compiled(*calls[1])


def test_an_is_none_test_of_an_optional_compiled_for_its_example_kind_only_is_known():
    model = _model(O.TestedAndReadUntested)
    x = torch.randn(2, 3)
    compiled = dycl.compile(model, (x, 3), backend="onnxruntime", progress=False)
    for k in (3, 5, 1):
        assert max_abs_error(eager(model, (x, k)), compiled(x, k)) <= 1e-6
    with pytest.raises(dycl.InputError, match="top_k"):
        compiled(x, None)


def test_unpacking_too_few_items_is_refused_at_its_line():
    import textwrap

    source = textwrap.dedent('''
        import torch
        class TooFew(torch.nn.Module):
            def forward(self, x):
                a, b, *rest = [x]
                return a
    ''')
    # (a module of its own: DyCL reads the source)
    import importlib.util
    import pathlib
    import tempfile

    path = pathlib.Path(tempfile.mkdtemp()) / "too_few.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("too_few", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(FrontendError) as caught:
        import_module(module.TooFew().eval(), (torch.ones(2),))
    assert caught.value.line == 5 and "unpacks 1 items into at least 2 names" in str(caught.value)


def test_tied_weight_is_stored_once():
    program = import_module(_model(U.TiedWeights), U.token_inputs()[0])
    # (one array, under the name named_parameters() keeps; both modules' ops name it)
    assert sorted(program.weights) == ["transformer.ln_f.bias", "transformer.ln_f.weight", "transformer.wte.weight"]


@pytest.mark.parametrize("factory, marker", [
    (U.ComplexPhase, "complex-phase"), (U.ComplexPhaseInPlace, "complex-phase-in-place"),
])
def test_complex_state_is_refused_at_its_statement(factory, marker):
    """Was a bare `ValueError: unsupported dtype complex64` from state.py; a complex number
    times complex state is an op complex_values.py does not lower, refused where it is written."""
    import inspect

    line = next(k for k, text in enumerate(inspect.getsource(U).splitlines(), start=1) if f"line marker: {marker}" in text)
    with pytest.raises(FrontendError) as caught:
        import_module(factory().eval(), (torch.ones(4),))
    assert caught.value.file == U.__file__ and caught.value.line == line, str(caught.value)
    assert "self.phase" in str(caught.value) and "complex" in str(caught.value)


class RingRead(torch.nn.Module):
    """A ring buffer read at the slot a 0-d tensor holds (`self.cache[(self.steps + 3) % 4]`)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.tensor(0))
        self.register_buffer("cache", torch.randn(4, 4))

    def forward(self, x):
        prev = self.cache[(self.steps + 3) % 4]  # line marker: ring read
        return x + prev


class RingReadAtInt(RingRead):
    """The same read at a Python int made from the tensor: a runtime int, which compiles."""

    def forward(self, x):
        prev = self.cache[int((self.steps + 3) % 4)]
        return x + prev


def test_a_read_at_a_0d_tensor_position_is_refused_naming_the_position():
    """Export reads such a position with `.item()` (`aten.select.int`): before, the refusal
    spoke of "a size computed from tensor values", which is not what the line does."""
    import inspect

    lines, first = inspect.getsourcelines(RingRead.forward)
    line = first + next(k for k, text in enumerate(lines) if "line marker: ring read" in text)
    with pytest.raises(dycl.FrontendError) as refused:
        dycl.compile(_model(RingRead), (torch.randn(1, 4),), backend="onnxruntime", progress=False)
    assert refused.value.file == __file__ and refused.value.line == line, str(refused.value)
    assert "a position that a 0-d tensor holds" in str(refused.value) and "t[int(i)]" in str(refused.value)
    model = _model(RingReadAtInt)
    compiled = dycl.compile(model, (torch.randn(1, 4),), backend="onnxruntime", progress=False)
    for seed in range(3):
        x = torch.randn(1, 4, generator=torch.Generator().manual_seed(seed))
        assert max_abs_error(eager(model, (x,)), compiled(x)) <= 1e-6
