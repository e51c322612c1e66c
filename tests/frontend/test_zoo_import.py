"""Every zoo network imports, and interprets exactly on the inputs that drive all its paths."""

from __future__ import annotations

import pytest
import torch

from dycl.frontend import import_module
from tests.frontend.helpers import BranchCoverage, if_ops, max_abs_error, run


def _zoo_names():
    from dycl.zoo import EVALUATION  # (gpt_decode: tests/api/test_decode.py)

    return sorted(EVALUATION)


@pytest.mark.slow
@pytest.mark.parametrize("name", _zoo_names())
def test_zoo_network_imports_and_every_path_matches_eager(name):
    from dycl.zoo import REGISTRY

    entry = REGISTRY[name]
    model = entry.build(0)
    program = import_module(model, entry.example_inputs())

    assert [op.name for op in program.module.walk()].count("func.func") == 1
    coverage = BranchCoverage()
    for args in entry.path_inputs():
        with torch.no_grad():
            expected = model(*args)
        assert max_abs_error(expected, run(program, args, coverage)) <= 1e-5
    branches = if_ops(program)
    assert branches, "a dynamic network imports with at least one scf.if"
    assert all(coverage.taken[id(op)] == {True, False} for op in branches)
