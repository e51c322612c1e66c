"""`assert` compiles with eager's meaning (before: every `assert` was refused, "`assert` on a
runtime value"): where the test holds the result is eager's, where it fails the compiled
model raises eager's AssertionError, its message formatted from the run's values; a test
proven when the model is imported costs no op; one that fails on the example inputs where
every call reaches it is a FrontendError at the assert, the AssertionError its cause."""

from __future__ import annotations

import pytest
import torch

import dycl
from dycl.frontend import FrontendError, import_module
from tests.frontend import assert_models as M
from tests.frontend.helpers import eager, max_abs_error, run

CASES = {
    "greedy_gpt": (M.GreedyGPT, M.greedy_inputs, M.greedy_failing_inputs),
    "greedy_mingpt": (M.GreedyMinGPT, M.greedy_inputs, M.greedy_failing_inputs),
    "helper_methods": (M.HeadSplitter, M.head_inputs, M.head_failing_inputs),
    "runtime_int": (M.StepCounter, M.step_inputs, M.step_failing_inputs),
    "tensor_values": (M.ValueChecks, M.value_inputs, M.value_failing_inputs),
    "unreachable_branch": (
        M.UnreachableBranch,
        lambda: [(torch.linspace(-1, 1, 5), 0), (torch.linspace(-1, 1, 5), 1)],
        lambda: [(torch.linspace(-1, 1, 5), 2), (torch.linspace(-1, 1, 5), -1)],
    ),
}


def _model(factory):
    torch.manual_seed(0)
    return factory().eval()


def _eager_error(model, args) -> AssertionError:
    with pytest.raises(AssertionError) as raised:
        eager(model, args)
    return raised.value


def _raises_as_eager(model, call, args) -> None:
    expected = _eager_error(model, args)
    with pytest.raises(AssertionError) as raised:
        call(args)
    assert raised.value.args == expected.args, (raised.value.args, expected.args)


@pytest.mark.parametrize("name", sorted(CASES))
def test_asserts_are_exact_on_the_interpreter(name):
    factory, passing, failing = CASES[name]
    model = _model(factory)
    program = import_module(model, passing()[0])
    for args in passing():
        assert max_abs_error(eager(model, args), run(program, args)) <= 1e-5
    for args in failing():
        _raises_as_eager(model, lambda a: run(program, a), args)


@pytest.mark.parametrize("backend, name", [
    ("onnxruntime", "tensor_values"),
    *(pytest.param("onnxruntime", name, marks=pytest.mark.slow) for name in ["greedy_gpt", "greedy_mingpt", "helper_methods", "runtime_int"]),
    *(pytest.param("tvm", name, marks=pytest.mark.slow) for name in ["greedy_gpt", "tensor_values"]),
])
def test_asserts_compile_exactly(backend, name):
    factory, passing, failing = CASES[name]
    model = _model(factory)
    compiled = dycl.compile(model, passing()[0], backend=backend, progress=False)
    for args in passing():
        assert max_abs_error(eager(model, args), compiled(*args)) <= 1e-5
    for args in failing():
        _raises_as_eager(model, lambda a: compiled(*a), args)


@pytest.mark.parametrize("inputs", [0, 1], ids=["idx", "idx_targets"])
def test_nanogpt_forward_with_its_length_check(inputs):
    """nanoGPT's `assert t <= block_size` of a static length: proven, no op; the result is eager's."""
    model = _model(M.TinyGPT)
    args = M.gpt_inputs()[inputs]
    program = import_module(model, args)
    assert max_abs_error(eager(model, args), run(program, args)) <= 1e-5
    assert not [op for op in program.module.walk() if op.name == "dycl.error"]


def test_nanogpt_forward_past_the_block_size_is_the_users_assertion():
    model = _model(M.TinyGPT)
    args = (torch.randint(0, 11, (1, 9)),)
    expected = _eager_error(model, args)
    with pytest.raises(FrontendError) as raised:
        import_module(model, args)
    error = raised.value
    assert error.line == _line_of(M.TinyGPT.forward, "assert t <=") and error.file == M.__file__
    assert "fails on the example inputs: AssertionError: Cannot forward sequence of length 9, block size is only 8" in str(error)
    assert isinstance(error.__cause__, AssertionError) and error.__cause__.args == expected.args


def test_proven_asserts_add_no_op():
    model, twin = _model(M.ProvenChecks), _model(M.Unchecked)
    x = torch.randn(1, 8)
    program, unchecked = import_module(model, (x,)), import_module(twin, (x,))
    names = [op.name for op in program.module.walk()]
    assert names == [op.name for op in unchecked.module.walk()]
    assert "dycl.error" not in names and "scf.if" not in names
    assert max_abs_error(eager(model, (x,)), run(program, (x,))) <= 1e-5


def test_an_assert_the_configuration_fails_is_a_located_error():
    model = _model(M.ConfigFails)
    x = torch.randn(2, 3)
    expected = _eager_error(model, (x,))
    with pytest.raises(FrontendError) as raised:
        import_module(model, (x,))
    assert raised.value.line == _line_of(M.ConfigFails.forward, "assert self.n_embd")
    assert "n_embd 10 is not divisible by n_head 4" in str(raised.value)
    assert raised.value.__cause__.args == expected.args


def test_an_assert_the_example_fails_is_a_located_error():
    """A runtime test the example inputs fail at the top level: eager raises on them."""
    model = _model(M.StepCounter)
    args = (torch.randn(3, 4), 7)
    expected = _eager_error(model, args)
    with pytest.raises(FrontendError) as raised:
        import_module(model, args)
    assert raised.value.line == _line_of(M.StepCounter.forward, "assert steps <=")
    assert "`assert steps <= self.max_steps, 'steps={:d} exceeds max_steps={}'.format(steps, self.max_steps)`" in str(raised.value)
    assert raised.value.__cause__.args == expected.args == ("steps=7 exceeds max_steps=5",)


def test_a_tensor_in_the_message_is_refused_at_the_assert():
    model = _model(M.TensorMessage)
    with pytest.raises(FrontendError) as raised:
        import_module(model, (torch.rand(3) + 0.5,))
    assert raised.value.line == _line_of(M.TensorMessage.forward, "assert (x > 0)")
    assert "the message part `x`" in str(raised.value) and "assert (x > 0).all()" in str(raised.value)


def _line_of(function, text: str) -> int:
    import inspect

    lines, first = inspect.getsourcelines(function)
    return first + next(k for k, line in enumerate(lines) if text in line)
