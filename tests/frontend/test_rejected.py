"""Constructs the frontend cannot compile raise FrontendError at the offending line."""

from __future__ import annotations

import inspect

import pytest
import torch

from dycl.frontend import FrontendError, import_module
from tests.frontend import rejected_models
from tests.frontend.rejected_models import REJECTED


def _marked_line(model_class) -> int:
    lines, first = inspect.getsourcelines(model_class)
    for offset, line in enumerate(lines):
        if "# REJECT" in line:
            return first + offset
    raise AssertionError("no # REJECT marker")


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_rejected_construct_names_file_line_and_construct(name):
    model_class, construct = REJECTED[name]
    with pytest.raises(FrontendError) as caught:
        import_module(model_class(), (torch.randn(1, 4),))
    error = caught.value
    assert error.file == rejected_models.__file__
    assert error.line == _marked_line(model_class)
    assert construct in error.construct
    assert f"rejected_models.py:{error.line}:" in str(error)


