"""`raise`, `try`/`except`/`else`/`finally` and nested functions compile with eager's
meaning (before: `raise` and `try` were refused, "`raise` statement", "`try` statement", and
a nested `def` ended in `NameError: name 'decode' is not defined`):

- DeeBERT's `HighwayException`, raised in the encoder's layer loop and caught two modules
  up, leaves at the layer eager leaves at, with eager's logits and exit layer;
- a `raise ValueError(f"...")` on a runtime path is raised by the compiled model, eager's
  type and message; one on a configuration path costs nothing where it is not taken, and is
  a located FrontendError where every call takes it;
- a `try` whose body cannot raise what is caught, `else:` and `finally:` run as in eager;
- a nested `def decode(...)` (a closure over locals and `self`) called in a decoding loop,
  and a lambda bound to a name;
- refused at the line, with the reason: a handler of an error the tensor code raises
  (`except IndexError`), an exception of the model's own that forward does not catch, a
  `return` inside a `try` with a `finally`.
"""

from __future__ import annotations

import inspect

import pytest
import torch

import dycl
from dycl.frontend import FrontendError, import_module
from tests.frontend import exception_models as M
from tests.frontend.helpers import compiled_error, eager, max_abs_error, run, seeded_model, tiered

CASES = {
    "deebert_highway_exit": (M.DeeBertForSequenceClassification, M.deebert_inputs),
    "raise_on_runtime_path": (M.CheckedHead, M.checked_inputs),
    "try_else_finally": (M.TryElseFinally, M.try_inputs),
    "nested_decode": (M.NestedDecode, M.nested_inputs),
}


def _every_path(name: str, args_list) -> None:
    """The inputs take each path of the construct (else the test would not test it)."""
    if name == "deebert_highway_exit":
        model = seeded_model(M.DeeBertForSequenceClassification)
        assert {eager(model, a)[1] for a in args_list} == {1, 2, 3, 4}
    elif name == "try_else_finally":
        model = seeded_model(M.TryElseFinally)
        assert {eager(model, a)[1] for a in args_list} == {0, 1, 2}
    elif name == "nested_decode":
        model = seeded_model(M.NestedDecode)
        assert {len(eager(model, a)[0]) for a in args_list} == {1, 3, 4}


@pytest.mark.parametrize("name", sorted(CASES))
def test_exceptions_are_exact_on_the_interpreter(name):
    factory, inputs = CASES[name]
    model = seeded_model(factory)
    args_list = inputs()
    _every_path(name, args_list)
    program = import_module(model, args_list[0])
    for args in args_list:
        assert max_abs_error(eager(model, args), run(program, args)) <= 1e-5


@pytest.mark.parametrize("backend", ["onnxruntime", pytest.param("tvm", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", tiered(CASES, {"deebert_highway_exit", "raise_on_runtime_path"}))
def test_exceptions_compile_exactly(backend, name):
    factory, inputs = CASES[name]
    model = seeded_model(factory)
    error = compiled_error(model, inputs(), backend)
    print(f"{name} on {backend}: max abs error {error:.3g}")
    assert error <= 1e-4  # (try_else_finally sums values up to ~80: ORT's float32 order gives 1.5e-5)


def _eager_error(model, args) -> Exception:
    with pytest.raises(Exception) as raised:
        eager(model, args)
    return raised.value


def test_a_runtime_raise_is_eagers_exception_on_the_interpreter():
    model = seeded_model(M.CheckedHead)
    program = import_module(model, M.checked_inputs()[0])
    for args in M.checked_failing_inputs():
        expected = _eager_error(model, args)
        with pytest.raises(type(expected)) as raised:
            run(program, args)
        assert type(raised.value) is ValueError and raised.value.args == expected.args


def test_a_runtime_raise_is_eagers_exception_in_the_host_program():
    model = seeded_model(M.CheckedHead)
    compiled = dycl.compile(model, M.checked_inputs()[0], backend="onnxruntime", progress=False)
    messages = []
    for args in M.checked_failing_inputs():
        expected = _eager_error(model, args)
        with pytest.raises(ValueError) as raised:
            compiled(*args)
        assert raised.value.args == expected.args
        messages.append(str(raised.value))
    assert messages == ["top_k=7 is larger than the 3 classes", "NaN in the input"]


def test_a_raise_on_an_untaken_configuration_path_costs_nothing():
    """`pool` raises NotImplementedError for a pooling the model lacks: with "mean" it is
    never compiled, and the only `dycl.error`s are the two runtime checks."""
    program = import_module(seeded_model(M.CheckedHead), M.checked_inputs()[0])
    errors = [op for op in program.module.walk() if op.name == "dycl.error"]
    assert sorted(op.attributes["kind"].data for op in errors) == ["ValueError", "ValueError"]


def test_a_raise_every_call_takes_is_a_located_error():
    model = seeded_model(M.UnknownPooling)
    args = M.checked_inputs()[0]
    expected = _eager_error(model, args)
    with pytest.raises(FrontendError) as raised:
        import_module(model, args)
    error = raised.value
    assert (error.file, error.line) == (M.__file__, _line_of(M.CheckedHead.pool, "raise NotImplementedError"))
    assert "NotImplementedError: pooling attention is not implemented" in str(error)
    assert type(error.__cause__) is NotImplementedError and error.__cause__.args == expected.args


def test_a_raise_in_a_runtime_loop_and_after_early_returns():
    loop = seeded_model(M.DivergenceCheck)
    program = import_module(loop, (torch.randn(1, 4) * 0.1, 2))
    raised = 0
    for seed in range(6):
        torch.manual_seed(seed)
        for args in [(torch.randn(1, 4) * 0.1, 3), (torch.randn(1, 4) * 0.1 + 1.0, 4), (torch.randn(1, 4), 0)]:
            try:
                expected = eager(loop, args)
            except RuntimeError as error:
                with pytest.raises(RuntimeError) as compiled_error:
                    run(program, args)
                assert compiled_error.value.args == error.args
                raised += 1
                continue
            assert max_abs_error(expected, run(program, args)) <= 1e-6
    assert 0 < raised < 18
    model = M.ReturnsOrRaises()
    program = import_module(model, (torch.ones(1, 4),))
    for value in (1.0, -1.0):
        args = (torch.full((1, 4), value),)
        assert max_abs_error(eager(model, args), run(program, args)) == 0.0
    with pytest.raises(ValueError) as error:
        run(program, (torch.full((1, 4), -0.1),))
    # (the interpreter adds the module's text to the op's error)
    assert str(error.value).startswith("the sum is between -1 and 0")


def test_a_raise_the_inner_try_does_not_catch_goes_to_the_outer():
    model = M.NestedTry()
    program = import_module(model, (torch.ones(1, 4),))
    for value in (1.0, -1.0):
        args = (torch.full((1, 4), value),)
        assert max_abs_error(eager(model, args), run(program, args)) == 0.0


def test_a_try_whose_body_cannot_raise_is_its_straight_line_code():
    """No `raise` reaches the handler: it is not compiled, and `else:`/`finally:` run in line."""
    x = torch.randn(1, 4)
    program, written = import_module(M.NeverRaises(), (x,)), import_module(M.NeverRaisesWritten(), (x,))
    assert [op.name for op in program.module.walk()] == [op.name for op in written.module.walk()]
    assert max_abs_error(eager(M.NeverRaises(), (x,)), run(program, (x,))) == 0.0


REFUSED = {
    "except_index_error": (M.CatchesIndexError, (torch.randn(3, 2), 1), "except IndexError:",
                           "`except IndexError` catches IndexError, which eager raises from inside the computation"),
    "uncaught_own_exception": (M.UncaughtOwnException, (torch.randn(3),), "raise StopDecoding()",
                               "`StopDecoding` is a class of the model's own, and the host program raises Python's builtin exceptions only"),
    "return_inside_finally": (M.ReturnInsideFinally, (torch.randn(3),), "return x + 1",
                              "`return` inside a `try` that has a `finally`"),
    "always_raises": (M.AlwaysRaises, (torch.randn(3),), "raise ValueError",
                      "runs on every call: ValueError: this model is not for inference"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_at_the_line_with_the_reason(name):
    factory, args, line_text, message = REFUSED[name]
    with pytest.raises(FrontendError) as raised:
        import_module(factory().eval(), args)
    assert raised.value.file == M.__file__ and raised.value.line == _line_of(factory.forward, line_text)
    assert message in str(raised.value)


def _line_of(function, text: str) -> int:
    lines, first = inspect.getsourcelines(function)
    return first + next(k for k, line in enumerate(lines) if text in line)
