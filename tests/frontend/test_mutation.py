"""Tensor mutation is functionalized exactly, or refused at its statement (never dropped)."""

from __future__ import annotations

import inspect

import pytest
import torch

from dycl.frontend import FrontendError, import_module
from dycl.ir import print_module
from tests.frontend import mutation_models
from tests.frontend.helpers import assert_compiled_exactly, assert_imported_exactly, tiered
from tests.frontend.mutation_models import CASES, REFUSED


def _no_in_place_ops(model, program) -> None:
    text = print_module(program.module)
    in_place = sorted({w for w in text.split('"') if w.startswith("torch.aten.") and w.endswith("_")})
    assert not in_place, f"in-place ops left in the host IR: {in_place}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_mutation_is_functionalized_exactly(name):
    assert_imported_exactly(*CASES[name], check_program=_no_in_place_ops)


# The costliest compiles (5-16 s each) in the slow tier; every kind of change stays here.
@pytest.mark.parametrize("name", tiered(CASES, set(CASES) - {
    "stepwise_store", "store_at_runtime_index", "base_changed_view_read", "transposed_view_store",
    "masked_fill_gate", "view_store_across_blocks", "inplace_relu_block", "helper_mutates"}))
def test_mutation_on_onnxruntime(name):
    assert_compiled_exactly(*CASES[name], backend="onnxruntime")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_mutation_on_tvm(name):
    assert_compiled_exactly(*CASES[name], backend="tvm")


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
    # the message quotes the user's statement at that line (fuzz seed 330204)
    statement = inspect.getsource(mutation_models).splitlines()[error.line - 1].split("#")[0].strip()
    assert f"`{statement}`" in str(error), str(error)
    # the attempt changed neither the model nor the caller's inputs
    for key, value in model.state_dict().items():
        assert torch.equal(value, before[key]), key
    assert getattr(model, "saved_actions", []) == [] and getattr(model, "hidden", None) is None
    for a, b in zip(given, args):
        assert a == b if not isinstance(a, torch.Tensor) else torch.equal(a, b)
