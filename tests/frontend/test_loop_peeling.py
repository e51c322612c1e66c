"""A constant-range loop too long to unroll whose carry changes structure in its first
iteration only (`h = None`, then a tensor; an empty cache, then a full one): its first
iteration is compiled apart and the others as one runtime loop (loop_compiler._peeled)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import dycl
from dycl.frontend import FrontendError, loops
from tests.frontend.helpers import max_abs_error

TRIPS = loops.MAX_UNROLL + 88


class LongRecurrence(nn.Module):
    """A GRU cell started from `h = None`, stopping early when its state grows."""

    def __init__(self, limit: float):
        super().__init__()
        self.cell = nn.GRUCell(4, 4)
        self.limit = limit

    def forward(self, x):
        h = None
        steps = 0
        for _ in range(TRIPS):
            h = self.cell(x, h)
            steps = steps + 1
            if h.sum() > self.limit:
                break
        return h, steps


class SkipsWithContinue(nn.Module):
    """A `continue` would skip what marks the first iteration as gone on: not peeled."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(4, 4)

    def forward(self, x):
        h = None
        for _ in range(TRIPS):
            h = self.cell(x, h)
            if h.sum() > 0:
                continue
            h = h * 0.5
        return h


@pytest.mark.parametrize("limit", [-100.0, 100.0, 0.0])  # (stops at once, never, on some inputs)
def test_long_loop_whose_carry_starts_as_none_is_peeled(limit):
    torch.manual_seed(0)
    model = LongRecurrence(limit).eval()
    x = torch.randn(2, 4)
    compiled = dycl.compile(model, (x,), backend="onnxruntime", progress=False)
    assert compiled.compile_report["subdnn_count"] < 8  # (not one copy per iteration)
    for inputs in (x, torch.randn(2, 4), -x):
        expected, got = model(inputs), compiled(inputs)
        assert got[1] == expected[1]
        assert max_abs_error(expected[0], got[0]) < 1e-5


def test_continue_in_the_body_is_not_peeled():
    with pytest.raises(FrontendError, match="changes structure in a runtime loop"):
        dycl.compile(SkipsWithContinue().eval(), (torch.randn(2, 4),), backend="onnxruntime", progress=False)
