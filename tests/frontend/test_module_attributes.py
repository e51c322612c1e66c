"""Module attributes that forward assigns are variables of the call: compiled exactly, or
refused at their line when they would carry state from one call to the next."""

from __future__ import annotations

import copy
import inspect

import pytest
import torch

import dycl
from dycl.frontend import FrontendError, import_module
from tests.frontend import attribute_models
from tests.frontend.attribute_models import CASES, REFUSED
from tests.frontend.helpers import BranchCoverage, if_ops, max_abs_error, run


def _eager(model, args):
    with torch.no_grad():
        return copy.deepcopy(model)(*[a.clone() for a in args])


def _state(model) -> dict:
    return {(prefix, key): value for prefix, module in model.named_modules() for key, value in vars(module).items()
            if not key.startswith("_")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_attribute_variables_are_exact_on_every_path(name):
    factory, inputs = CASES[name]
    torch.manual_seed(0)
    model = factory().eval()
    before = _state(model)
    program = import_module(model, inputs[0])
    after = _state(model)
    assert after.keys() == before.keys() and all(after[k] is before[k] for k in before), "import changed the model"
    coverage = BranchCoverage()
    for args in inputs:
        assert max_abs_error(_eager(model, args), run(program, args, coverage)) <= 1e-5
    branches = if_ops(program)
    assert sum(len(coverage.taken[id(op)]) for op in branches) == 2 * len(branches), "a branch never ran"


@pytest.mark.parametrize("name", sorted(CASES))
def test_attribute_variables_on_onnxruntime(name):
    factory, inputs = CASES[name]
    torch.manual_seed(0)
    model = factory().eval()
    compiled = dycl.compile(model, inputs[0], progress=False)
    for args in inputs:
        assert max_abs_error(_eager(model, args), compiled(*args)) <= 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_attribute_variables_on_tvm(name):
    factory, inputs = CASES[name]
    torch.manual_seed(0)
    model = factory().eval()
    compiled = dycl.compile(model, inputs[0], backend="tvm", progress=False)
    for args in inputs:
        assert max_abs_error(_eager(model, args), compiled(*args)) <= 1e-5


def _marked_line(marker: str) -> int:
    lines = inspect.getsource(attribute_models).splitlines()
    return next(k for k, line in enumerate(lines, start=1) if f"line marker: {marker}" in line)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_state_across_calls_is_refused_at_its_line(name):
    factory, args, marker, words = REFUSED[name]
    model = factory().eval()
    before = _state(model)
    with pytest.raises(FrontendError) as info:
        import_module(model, args)
    error = info.value
    assert (error.file, error.line) == (attribute_models.__file__, _marked_line(marker)), str(error)
    assert words in str(error), str(error)
    assert "__attr" not in str(error), str(error)  # the user's names, not the frontend's
    after = _state(model)
    assert after.keys() == before.keys() and all(after[k] is before[k] for k in before), "import changed the model"
