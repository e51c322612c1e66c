"""A runtime list that is empty on the example path: code after the join still compiles,
because a join takes a runtime list's example from the side that has items."""

from __future__ import annotations

import torch
from torch import nn

from dycl.frontend import import_module
from tests.frontend.helpers import max_abs_error, run


class StopsAtOnce(nn.Module):
    """A greedy decoder whose example input hits the end token at the first step."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(4, 4)
        self.out = nn.Linear(4, 3)

    def forward(self, x):
        h = torch.zeros(1, 4)
        tokens = []
        for _ in range(4):
            h = self.cell(x, h)
            word = self.out(h + x).argmax(1)
            x = x.roll(1, 1)
            if word.item() == 0:
                break
            tokens.append(word)
        if tokens and tokens[-1].item() == 2:
            del tokens[-1]
        caption = torch.cat(tokens) if tokens else torch.zeros(0, dtype=torch.long)
        return caption, len(tokens)


def test_code_after_a_list_join_runs_on_an_example_with_items():
    torch.manual_seed(0)
    model = StopsAtOnce().eval()
    inputs = [torch.randn(1, 4) * s for s in (0.1, 1.0, 3.0, 10.0, 30.0)] + [torch.randn(1, 4) * 3 for _ in range(20)]
    lengths = {model(x)[1] for x in inputs}
    assert 0 in lengths and len(lengths) >= 3, lengths
    example = next(x for x in inputs if model(x)[1] == 0)
    program = import_module(model, (example,))
    for x in inputs:
        assert max_abs_error(model(x), run(program, (x,))) == 0.0
