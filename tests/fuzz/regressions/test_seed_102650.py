"""Found by `python -m dycl.fuzz --count 1000 --seed 102000` (seed 102650, shrunk): a loop
over a constant range whose body calls `torch.relu_(x)` failed with an internal
`KeyError: 'torch'`. Syntax counts the first argument's root *and* `torch` as changed in
place, so `torch` was among the loop's carried names, and the lengths of the lists the loop
grows were looked up for it too (loops._length_after_for)."""

import torch
from torch import nn

from dycl.frontend import import_module
from tests.frontend.helpers import eager, max_abs_error, run


class ReluInPlaceInALoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        x = x.clone()
        outs = []
        for _ in range(2):
            x = self.fc(x)
            torch.relu_(x)
            outs.append(x)
        return torch.stack(outs).sum(0)


def test_an_in_place_torch_function_in_a_constant_range_loop():
    torch.manual_seed(0)
    model = ReluInPlaceInALoop().eval()
    inputs = [(torch.randn(1, 4),), (-torch.randn(1, 4),)]
    program = import_module(model, inputs[0])
    for args in inputs:
        assert max_abs_error(eager(model, args), run(program, args)) <= 1e-6
