"""Calls with keywords, defaults, keyword-only parameters, `*args`/`**kwargs` forwarding and
decorated methods (gpt-fast's `generate`, lucidrains' `eval_decorator`, a Hugging Face
forward ending in `**kwargs`) compile with Python's meaning: every input matches eager on
the reference interpreter (taking both ways of every `if`) and on ONNX Runtime. Binding
errors and spreads DyCL cannot know are refused at the call's line with Python's message."""

from __future__ import annotations

import inspect

import pytest

import dycl
from dycl.frontend import FrontendError, import_module
from tests.frontend import keyword_call_models
from tests.frontend.helpers import BranchCoverage, eager_method as _eager, if_ops, max_abs_error, run, seeded_model as _model, tiered
from tests.frontend.keyword_call_models import CASES, REFUSED


@pytest.mark.parametrize("name", sorted(CASES))
def test_exact_on_every_path(name):
    factory, method, inputs = CASES[name]
    model = _model(factory)
    program = import_module(model, inputs[0], method=method)
    coverage = BranchCoverage()
    for args in inputs:
        assert max_abs_error(_eager(model, method, args), run(program, args, coverage)) <= 1e-5
    branches = if_ops(program)
    assert sum(len(coverage.taken[id(op)]) for op in branches) == 2 * len(branches), "a branch never ran"


def _compiled_exactly(name, backend):
    factory, method, inputs = CASES[name]
    model = _model(factory)
    compiled = dycl.compile(model, inputs[0], backend=backend, method=method, progress=False)
    for args in inputs:
        assert max_abs_error(_eager(model, method, args), compiled(*args)) <= 1e-5


@pytest.mark.parametrize("name", tiered(CASES, {"gpt_fast_generate", "hf_decorated_forward", "star_forwarding"}))
def test_exact_on_onnxruntime(name):
    _compiled_exactly(name, "onnxruntime")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_exact_on_tvm(name):
    _compiled_exactly(name, "tvm")


def test_entry_defaults_and_example_names():
    """`generate(idx)` given one example: `max_new_tokens` takes its default, `**kwargs` is
    empty, and the input is named as the signature Python shows names it (through the
    grad-mode decorator)."""
    factory, method, inputs = CASES["gpt_fast_generate"]
    program = import_module(_model(factory), inputs[0], method=method)
    names = [n.data for n in program.function.attributes["dycl.input_names"].data]
    assert names == ["idx"]


def _marked_line(marker: str) -> int:
    lines = inspect.getsource(keyword_call_models).splitlines()
    return next(k for k, line in enumerate(lines, start=1) if f"line marker: {marker}" in line)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_at_the_call(name):
    factory, method, example, marker, words = REFUSED[name]
    with pytest.raises(FrontendError) as info:
        import_module(_model(factory), example, method=method)
    error = info.value
    assert (error.file, error.line) == (keyword_call_models.__file__, _marked_line(marker)), str(error)
    assert words in str(error), str(error)
