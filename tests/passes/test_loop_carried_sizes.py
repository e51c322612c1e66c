"""A size of a loop-carried tensor that grows each iteration is read on the host exactly
(before: dycl-shape-infer folded `x.size(1)` to the entry's size while the loop's carried
types were still being joined, so every iteration read the first one's size)."""

from __future__ import annotations

import torch

import dycl
from tests.frontend.helpers import eager, max_abs_error


class GrowAndMeasure(torch.nn.Module):
    def forward(self, x, n: int):
        total = 0
        for _ in range(n):
            total += x.size(1)  # the carried tensor's width, on the host
            x = torch.cat((x, x[:, -1:] * 2), 1)
        return x, total


def test_sizes_of_a_grown_carry_are_not_folded_to_the_entrys():
    model = GrowAndMeasure().eval()
    inputs = [(torch.randn(1, 4), n) for n in (3, 0, 1, 5)]
    compiled = dycl.compile(model, inputs[0], backend="onnxruntime", progress=False)
    for args in inputs:
        expected, actual = eager(model, args), compiled(*args)
        assert actual[1] == expected[1]
        assert max_abs_error(expected, actual) <= 1e-5
