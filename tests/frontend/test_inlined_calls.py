"""Calls compiled by what Python runs: a block's `forward` set on the instance (inlined or
captured whole), an inlined helper that first binds module tensors, and refusals inside an
inlined call's arguments that quote the user's statement."""

from __future__ import annotations

import inspect

import pytest

from dycl.frontend import FrontendError, import_module
from tests.frontend import inlined_call_models
from tests.frontend.inlined_call_models import CASES, REFUSED
from tests.frontend.helpers import assert_compiled_exactly, assert_imported_exactly, tiered


@pytest.mark.parametrize("name", sorted(CASES))
def test_exact_on_every_path(name):
    assert_imported_exactly(*CASES[name])


@pytest.mark.parametrize("name", tiered(CASES, set(CASES) - {"sdn_captured_blocks_early_exit", "sdn_inlined_blocks_all_outputs", "universal_transformer_act"}))
def test_exact_on_onnxruntime(name):
    assert_compiled_exactly(*CASES[name], backend="onnxruntime")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_exact_on_tvm(name):
    assert_compiled_exactly(*CASES[name], backend="tvm")


def _marked_line(marker: str) -> tuple[int, str]:
    lines = inspect.getsource(inlined_call_models).splitlines()
    return next((k, line.split("#")[0].strip()) for k, line in enumerate(lines, start=1) if f"line marker: {marker}" in line)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusal_quotes_the_statement_at_its_line(name):
    factory, args, marker, words = REFUSED[name]
    with pytest.raises(FrontendError) as info:
        import_module(factory().eval(), args)
    error = info.value
    line, text = _marked_line(marker)
    assert (error.file, error.line) == (inlined_call_models.__file__, line), str(error)
    assert words in str(error), str(error)
    assert f"`{text}`" in str(error), str(error)
