"""A `None` the forward returns (`return logits, None`) comes back as None: the output tree
marks it (`{"none": []}`); it was read as "the one result" and returned a tensor."""

import pytest
import torch
from torch import nn

import dycl
from dycl.frontend import import_module
from tests.frontend.helpers import eager, run


class NoneBesideATensor(nn.Module):
    def forward(self, x):
        return x * 2, None


class NoneOnEveryPath(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2, None, 3
        return x, None, 4


class OnlyNone(nn.Module):
    def forward(self, x):
        return None


INPUTS = [(torch.ones(1, 3),), (-torch.ones(1, 3),)]


def _same(expected, actual) -> bool:
    if isinstance(expected, tuple):
        return isinstance(actual, tuple) and len(expected) == len(actual) and all(map(_same, expected, actual))
    if isinstance(expected, torch.Tensor):
        return isinstance(actual, torch.Tensor) and torch.equal(expected, actual)
    return expected == actual and type(expected) is type(actual)


@pytest.mark.parametrize("model", [NoneBesideATensor, NoneOnEveryPath, OnlyNone], ids=lambda m: m.__name__)
def test_a_returned_none_stays_none(model):
    m = model().eval()
    program = import_module(m, INPUTS[0])
    # check=False: the compiled model itself must be right, not only dycl.compile's self-check
    compiled = dycl.compile(m, INPUTS[0], progress=False, check=False)
    for args in INPUTS:
        expected = eager(m, args)
        assert _same(expected, run(program, args)), (expected, run(program, args))
        assert _same(expected, compiled(*args)), (expected, compiled(*args))
