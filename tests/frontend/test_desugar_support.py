"""Support for the desugaring tests (no tests here): import once, interpret on inputs that take every
path, compare with eager (or with an eager reference where eager cannot run here, e.g. `.cuda()`)."""

from __future__ import annotations

import copy

import pytest
import torch

from dycl.frontend import FrontendError, import_module
from tests.frontend.helpers import BranchCoverage, if_ops, max_abs_error, run


def scaled_inputs(*shape, scales=(-10.0, -1.0, -0.1, 0.0, 0.1, 1.0, 10.0), seeds=(0, 1)):
    inputs = []
    for seed in seeds:
        base = torch.randn(*shape, generator=torch.Generator().manual_seed(seed))
        inputs.extend((base * s,) for s in scales)
    return inputs


def check_paths(model, inputs, reference=None, *, all_branches=True, tolerance=1e-5):
    """Import `model` on inputs[0]; on every input the interpreted program must match
    `reference` (default: the model itself, eager) and, with all_branches, every scf.if must
    go both ways over the inputs. Returns the imported program."""
    torch.manual_seed(0)
    model = model.eval()
    reference = model if reference is None else reference
    program = import_module(model, copy.deepcopy(inputs[0]))
    coverage = BranchCoverage()
    for args in inputs:
        with torch.no_grad():
            expected = _python_scalars(reference(*copy.deepcopy(args)))
        actual = run(program, copy.deepcopy(args), coverage)
        assert max_abs_error(expected, actual) <= tolerance, (args, expected, actual)
    if all_branches:
        branches = if_ops(program)
        taken = sum(len(coverage.taken[id(op)]) for op in branches)
        assert taken == 2 * len(branches), f"{2 * len(branches) - taken} branch(es) never ran"
    return program


def _python_scalars(value):
    """numpy scalars an eager forward returns (`np.argmax(...)`) as the Python numbers they are."""
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)):
        return type(value)(_python_scalars(v) for v in value)
    return value


def refused(model, inputs, construct: str, line: int | None = None, hint: str | None = None) -> FrontendError:
    """The import must raise a FrontendError naming `construct` at the model's own file."""
    with pytest.raises(FrontendError) as caught:
        import_module(model.eval(), inputs)
    error = caught.value
    assert construct in error.construct, error
    assert error.file == __import__("inspect").getsourcefile(type(model)), error
    assert error.line > 0, error
    if line is not None:
        assert error.line == line, error
    if hint is not None:
        assert hint in error.hint, error
    return error


def marked_line(cls, marker: str = "# REFUSED") -> int:
    import inspect

    lines, first = inspect.getsourcelines(cls)
    for offset, text in enumerate(lines):
        if marker in text:
            return first + offset
    raise AssertionError(f"no {marker} in {cls.__name__}")


@pytest.fixture(autouse=True)
def seeded():
    """Every test builds its models from the same random state, whatever ran before it
    (the inputs that take every path are chosen for these weights). Modules that import
    this fixture get it for each of their tests."""
    torch.manual_seed(0)
    yield
