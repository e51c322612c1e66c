"""Early exits from runtime loops nested in runtime loops (regression: fuzz seed 20000).

A `return` inside a loop nested in a runtime loop must become the enclosing loop's return
flag and value (carried by the enclosing scf.while, tested by its condition); a `break`
must leave the inner loop only. Each model is checked against eager on inputs that take
every exit (each nesting depth and inner iteration, and the normal exit).
"""

from __future__ import annotations

import pytest
import torch

from dycl.frontend import import_module
from tests.frontend.dynamic_models import NESTED_EXIT_CASES
from tests.frontend.helpers import BranchCoverage, if_ops, max_abs_error, run


def _tag(output) -> tuple:
    tensor, *ints = output
    return (tensor.shape[-1], *ints)


@pytest.mark.parametrize("name", sorted(NESTED_EXIT_CASES))
def test_nested_early_exit_matches_eager_on_every_exit(name):
    factory, inputs, paths = NESTED_EXIT_CASES[name]
    torch.manual_seed(0)
    model = factory().eval()
    program = import_module(model, inputs[0])

    coverage = BranchCoverage()
    taken_paths = set()
    for args in inputs:
        with torch.no_grad():
            expected = model(*args)
        actual = run(program, args, coverage)
        assert _tag(actual) == _tag(expected), args
        assert max_abs_error(expected, actual) <= 1e-5
        taken_paths.add(_tag(expected))

    assert paths <= taken_paths, f"exits never taken: {sorted(paths - taken_paths)}"
    branches = if_ops(program)
    taken = sum(len(coverage.taken[id(op)]) for op in branches)
    assert taken == 2 * len(branches), f"{2 * len(branches) - taken} branch(es) never ran"
