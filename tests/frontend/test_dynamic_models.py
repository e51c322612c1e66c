"""Every construct of the frontend, imported once and interpreted on inputs that take every path."""

from __future__ import annotations

import pytest
import torch

from dycl.frontend import import_module
from tests.frontend.dynamic_models import CASES
from tests.frontend.helpers import BranchCoverage, if_ops, max_abs_error, run


@pytest.mark.parametrize("name", sorted(CASES))
def test_interpreted_import_matches_eager_on_every_path(name):
    factory, inputs = CASES[name]
    torch.manual_seed(0)
    model = factory().eval()
    program = import_module(model, inputs[0])

    coverage = BranchCoverage()
    for args in inputs:
        with torch.no_grad():
            expected = model(*args)
        actual = run(program, args, coverage)
        assert max_abs_error(expected, actual) <= 1e-5

    branches = if_ops(program)
    taken = sum(len(coverage.taken[id(op)]) for op in branches)
    assert taken == 2 * len(branches), f"{2 * len(branches) - taken} branch(es) never ran"
