"""A variable that is None on some paths and a tensor or Python number on others
(`values.Maybe`: a runtime bool and the value): returned as None where it is None, tested
with `is None` (each branch knows which it is), refused where code computes with it."""

import inspect

import pytest
import torch

import dycl
from dycl.frontend import FrontendError, import_module
from tests.frontend import optional_models as M
from tests.frontend.helpers import eager, run
from tests.frontend.test_desugar_support import scaled_inputs

INPUTS = scaled_inputs(1, 4, scales=(-3.0, -1.0, -0.3, 0.3, 1.0, 3.0), seeds=(0, 1, 2))
EXACT = [M.AuxOnSomePaths, M.TestedBeforeUse, M.EarlierProbabilities, M.CountOrNone, M.TestedInAConditionalExpression]


def _same(expected, actual) -> bool:
    if isinstance(expected, (tuple, list)):
        return type(expected) is type(actual) and len(expected) == len(actual) and all(map(_same, expected, actual))
    if isinstance(expected, torch.Tensor):
        return isinstance(actual, torch.Tensor) and expected.shape == actual.shape and torch.allclose(expected, actual, atol=1e-5)
    return type(expected) is type(actual) and expected == actual


def _none_where(value):
    """Where `value` holds None (and its bools: `memory is None`)."""
    if isinstance(value, (tuple, list)):
        return tuple(map(_none_where, value))
    return value if isinstance(value, bool) else value is None


@pytest.mark.parametrize("model", [m for m in EXACT if m is not M.TestedInAConditionalExpression], ids=lambda m: m.__name__)
def test_inputs_give_none_and_a_value(model):
    torch.manual_seed(0)
    m = model().eval()
    assert len({_none_where(eager(m, args)) for args in INPUTS}) >= 2


@pytest.mark.parametrize("backend", ["interpreter", "onnxruntime", pytest.param("tvm", marks=pytest.mark.slow)])
@pytest.mark.parametrize("model", EXACT, ids=lambda m: m.__name__)
def test_values_none_on_some_paths_are_exact(model, backend):
    torch.manual_seed(0)
    m = model().eval()
    if backend == "interpreter":
        program = import_module(m, INPUTS[0])
        call = lambda *args: run(program, args)  # noqa: E731
    else:  # check=False: the compiled model itself must be right
        call = dycl.compile(m, INPUTS[0], backend=backend, progress=False, check=False)
    for args in INPUTS:
        expected, actual = eager(m, args), call(*args)
        assert _same(expected, actual), (args, expected, actual)


def _marked_line(marker: str) -> int:
    lines = inspect.getsource(M).splitlines()
    return next(k for k, line in enumerate(lines, start=1) if f"line marker: {marker}" in line)


@pytest.mark.parametrize("model, marker, words", [
    (M.UsedWithoutTest, "used-without-test", "`p` is None on some paths"),
    (M.CarriedByRuntimeLoop, "carried", "`p` changes structure in a runtime loop"),
    (M.StackedWithoutTest, "stacked", "`aux` is None on some paths"),
], ids=["used-without-test", "carried", "stacked"])
def test_computing_with_a_value_none_on_some_paths_is_refused_at_its_line(model, marker, words):
    with pytest.raises(FrontendError) as caught:
        import_module(model().eval(), (torch.ones(1, 4),))
    assert caught.value.file == M.__file__ and caught.value.line == _marked_line(marker), str(caught.value)
    assert words in str(caught.value)
