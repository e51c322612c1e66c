"""The ResNet-56-sized early-exit network of the zoo: imports, and every exit interprets exactly."""

from __future__ import annotations

import pytest
import torch

from dycl.frontend import import_module
from tests.frontend.helpers import BranchCoverage, if_ops, max_abs_error, run


@pytest.mark.slow
def test_sdn_resnet_imports_and_every_exit_matches_eager():
    from dycl.zoo import REGISTRY

    entry = REGISTRY["sdn_resnet"]
    model = entry.build(0)
    program = import_module(model, entry.example_inputs())

    assert [op.name for op in program.module.walk()].count("func.func") == 1
    coverage = BranchCoverage()
    exits = set()
    for args in entry.path_inputs():
        with torch.no_grad():
            expected = model(*args)
        actual = run(program, args, coverage)
        assert max_abs_error(expected, actual) <= 1e-5
        exits.add(actual[1])
    assert exits == set(range(7))
    branches = if_ops(program)
    assert len(branches) == 6
    assert all(coverage.taken[id(op)] == {True, False} for op in branches)
