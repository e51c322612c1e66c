"""Tensor mutation is functionalized exactly, or refused at its statement (never dropped)."""

from __future__ import annotations

import inspect

import pytest
import torch

import dycl
from dycl.frontend import FrontendError, import_module
from dycl.ir import print_module
from tests.frontend import mutation_models
from tests.frontend.helpers import BranchCoverage, if_ops, max_abs_error, run
from tests.frontend.mutation_models import CASES, REFUSED


def _eager(model, args):
    with torch.no_grad():
        return model(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])


@pytest.mark.parametrize("name", sorted(CASES))
def test_mutation_is_functionalized_exactly(name):
    factory, inputs = CASES[name]
    torch.manual_seed(0)
    model = factory().eval()
    program = import_module(model, inputs[0])
    text = print_module(program.module)
    in_place = sorted({w for w in text.split('"') if w.startswith("torch.aten.") and w.endswith("_")})
    assert not in_place, f"in-place ops left in the host IR: {in_place}"
    coverage = BranchCoverage()
    for args in inputs:
        assert max_abs_error(_eager(model, args), run(program, args, coverage)) <= 1e-5
    branches = if_ops(program)
    assert sum(len(coverage.taken[id(op)]) for op in branches) == 2 * len(branches), "a branch never ran"


@pytest.mark.parametrize("name", sorted(CASES))
def test_mutation_on_onnxruntime(name):
    factory, inputs = CASES[name]
    torch.manual_seed(0)
    model = factory().eval()
    compiled = dycl.compile(model, inputs[0], progress=False)
    for args in inputs:
        assert max_abs_error(_eager(model, args), compiled(*args)) <= 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_mutation_on_tvm(name):
    factory, inputs = CASES[name]
    torch.manual_seed(0)
    model = factory().eval()
    compiled = dycl.compile(model, inputs[0], backend="tvm", progress=False)
    for args in inputs:
        assert max_abs_error(_eager(model, args), compiled(*args)) <= 1e-5


def _marked_line(marker: str) -> int:
    lines = inspect.getsource(mutation_models).splitlines()
    return next(k for k, line in enumerate(lines, start=1) if f"line marker: {marker}" in line)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_mutation_beyond_the_model_is_refused_at_its_line(name):
    factory, args, marker, words = REFUSED[name]
    model = factory().eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    given = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
    with pytest.raises(FrontendError) as info:
        import_module(model, given)
    error = info.value
    assert error.file == mutation_models.__file__
    assert error.line == _marked_line(marker), str(error)
    assert words in str(error), str(error)
    # the attempt changed neither the model nor the caller's inputs
    for key, value in model.state_dict().items():
        assert torch.equal(value, before[key]), key
    assert getattr(model, "saved_actions", []) == [] and getattr(model, "hidden", None) is None
    for a, b in zip(given, args):
        assert a == b if not isinstance(a, torch.Tensor) else torch.equal(a, b)
