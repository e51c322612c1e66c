"""Module attributes that forward assigns are variables of the call: compiled exactly, or
refused at their line when they would carry state from one call to the next."""

from __future__ import annotations

import inspect

import pytest

from dycl.frontend import FrontendError, import_module
from dycl.frontend.attributes import Poisoned
from tests.frontend import attribute_models
from tests.frontend.attribute_models import CASES, REFUSED
from tests.frontend.helpers import assert_compiled_exactly, assert_imported_exactly, tiered


def _state(model) -> dict:
    return {(prefix, key): value for prefix, module in model.named_modules() for key, value in vars(module).items()
            if not key.startswith("_")}


def _model_unchanged(model, program) -> None:
    after = _state(model)
    assert after.keys() == _state(type(model)().eval()).keys(), "import left attributes on the model"
    assert not any(isinstance(v, Poisoned) for v in after.values()), "import left a stand-in on the model"


@pytest.mark.parametrize("name", sorted(CASES))
def test_attribute_variables_are_exact_on_every_path(name):
    assert_imported_exactly(*CASES[name], check_program=_model_unchanged)


@pytest.mark.parametrize("name", tiered(CASES, set(CASES) - {"skipnet_hidden"}))  # (init_hidden: the corpus's DecoderSelfHidden)
def test_attribute_variables_on_onnxruntime(name):
    assert_compiled_exactly(*CASES[name], backend="onnxruntime")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_attribute_variables_on_tvm(name):
    assert_compiled_exactly(*CASES[name], backend="tvm")


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
