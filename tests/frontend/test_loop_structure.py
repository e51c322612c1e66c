"""Variables that start as None, and loop carries that change structure between iterations
(an RNN's `states`: None, then a tuple): constant-trip loops are unrolled, the rest refused."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import dycl
from dycl.frontend import FrontendError, import_module
from tests.frontend.helpers import max_abs_error, run


class LSTMDecoder(nn.Module):
    """A caption-decoder loop: the LSTM gets `states=None` first, then the tuple it returned."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 4, batch_first=True)
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        states = None
        inputs = x
        outputs = []
        for i in range(3):
            hiddens, states = self.lstm(inputs, states)
            inputs = self.fc(hiddens)
            outputs.append(inputs)
            if inputs.sum() > 1.0:
                break
        return torch.cat(outputs, 1), states


class LastLogits(nn.Module):
    """`logits = None` before a loop that assigns it and may break (index unused)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        logits = None
        h = x
        for _ in range(4):
            h = torch.tanh(self.fc(h))
            logits = h * 2
            if h.sum() > 0.5:
                break
        return logits


class BoundedWhileLogits(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        logits = None
        h = x
        step = 0
        while step < 4:
            h = torch.tanh(self.fc(h))
            logits = h * 2
            step += 1
            if h.sum() > 0.5:
                break
        return logits


class WhileStates(nn.Module):
    """A runtime `while` cannot be unrolled: a tuple that starts as None is refused."""

    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(4, 4)

    def forward(self, x):
        state = None
        step = 0
        while step < 5 and x.sum() > -100:
            state = self.cell(x, state)  # loop-structure
            step += 1
        return state


def _inputs(model):
    shape = (1, 1, 4) if isinstance(model, LSTMDecoder) else (1, 4)
    return [(torch.randn(*shape) * scale,) for scale in (0.1, 1.0, 3.0, -3.0)]


@pytest.mark.parametrize("factory", [LSTMDecoder, LastLogits, BoundedWhileLogits])
def test_none_then_value_compiles_exactly(factory):
    torch.manual_seed(0)
    model = factory().eval()
    inputs = _inputs(model)
    program = import_module(model, inputs[0])
    compiled = dycl.compile(model, inputs[0], progress=False)
    for args in inputs:
        with torch.no_grad():
            expected = model(*args)
        assert max_abs_error(expected, run(program, args)) <= 1e-5
        assert max_abs_error(expected, compiled(*args)) <= 1e-5


def test_structure_change_in_a_runtime_while_is_refused_at_the_loop():
    with pytest.raises(FrontendError) as info:
        import_module(WhileStates().eval(), (torch.randn(1, 4),))
    error = info.value
    assert error.file == __file__
    assert "`state` changes structure in a runtime loop" in str(error)
    source = open(__file__).read().splitlines()
    assert "while step < 5" in source[error.line - 1]
