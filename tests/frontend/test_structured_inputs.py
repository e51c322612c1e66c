"""Lists and tuples as forward arguments: a fixed structure whose items are runtime values
(`lengths: list[int]` of a caption batch, a `(h, c)` state pair)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import dycl
from dycl.frontend import import_module
from tests.frontend.helpers import max_abs_error, run


class CaptionLengths(nn.Module):
    """Per-caption work driven by a list of lengths: enumerate, comparisons, len, arithmetic."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, feats, lengths):
        outs = []
        for i, l in enumerate(lengths):
            h = self.fc(feats[i : i + 1]) * l
            if l > 2:
                h = torch.relu(h)
            outs.append(h)
        total = 0
        for l in lengths[1:]:
            total = total + l
        return torch.cat(outs), len(lengths), lengths[0] + total


class StatePair(nn.Module):
    """An LSTM cell called with the (h, c) tuple the caller passes, and a float."""

    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(3, 3)

    def forward(self, x, state, scale: float):
        h, c = self.cell(x, state)
        if h.sum() > c.sum():
            return (h * scale, c), True
        return (h, c * scale), False


def _caption_inputs():
    torch.manual_seed(1)
    return [(torch.randn(3, 4), [5, 1, 3]), (torch.randn(3, 4), [1, 4, 2]), (torch.randn(3, 4), [0, 0, 7])]


def _state_inputs():
    torch.manual_seed(2)
    return [(torch.randn(1, 3) * s, (torch.randn(1, 3), torch.randn(1, 3)), 2.0) for s in (0.1, 1.0, 3.0, -3.0)]


@pytest.mark.parametrize("factory, inputs", [(CaptionLengths, _caption_inputs), (StatePair, _state_inputs)])
def test_list_and_tuple_arguments_compile_exactly(factory, inputs, tmp_path):
    torch.manual_seed(0)
    model = factory().eval()
    inputs = inputs()
    program = import_module(model, inputs[0])
    compiled = dycl.compile(model, inputs[0], progress=False)
    for args in inputs:
        with torch.no_grad():
            expected = model(*args)
        assert max_abs_error(expected, run(program, args)) <= 1e-5
        assert max_abs_error(expected, compiled(*args)) <= 1e-5
    saved = dycl.load(compiled.save(tmp_path / "artifact"))
    assert max_abs_error(model(*inputs[-1]), saved(*inputs[-1])) <= 1e-5


def test_a_list_of_another_length_is_an_input_error():
    model = CaptionLengths().eval()
    compiled = dycl.compile(model, _caption_inputs()[0], progress=False)
    with pytest.raises(dycl.InputError, match=r"input 1: expected a list of 3 items .* got a list of 2"):
        compiled(torch.randn(3, 4), [1, 2])
    with pytest.raises(dycl.InputError, match=r"input 1: expected a list of 3 items"):
        compiled(torch.randn(3, 4), (1, 2, 3))


class SizeFromListArgument(nn.Module):
    """A tensor sized by the values of a list argument, only filled and returned: the host
    makes it (numpy), no sub-network sees its size."""

    def forward(self, x, lengths):
        out = torch.zeros(len(lengths), max(lengths))
        ones = torch.ones(max(lengths))
        return out, ones, x * 2


def test_a_tensor_sized_by_a_list_argument_is_made_by_the_host(tmp_path):
    model = SizeFromListArgument().eval()
    compiled = dycl.compile(model, (torch.randn(2, 3, 4), [3, 2]), progress=False, cache_dir=tmp_path)
    for lengths in ([3, 2], [5, 1], [1, 1]):
        x = torch.randn(2, 3, 4)
        assert max_abs_error(model(x, lengths), compiled(x, lengths)) == 0.0
