"""Found by `python -m dycl.fuzz --count 300 --seed 107000 --backend interpreter` (snapshot
9c48204; reduced by hand), seed 107281: a runtime `while` inside an unrolled `for` that sets
`aux = None` at the top of its body, then a tensor on one path, was refused ("`aux` changes
structure in a runtime loop"). Liveness took the next unrolled iteration's copy of the loop
for everything it reads, so `aux` looked live across the first copy's back edge. A loop not
expanded yet now gets its header's least fixed point through the body's own kills (with
`break`, `continue`, `return` and `with` modelled); a name the body really reads before it
assigns it is still carried, and still refused when its structure changes."""

import pytest
import torch
from torch import nn

from dycl.frontend import FrontendError, import_module
from tests.frontend.helpers import max_abs_error, run


class AuxResetInWhile(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        for j in range(2):
            steps = 0
            while steps < 3 and x.max() > 0.2:
                aux = None
                if x.mean() < 0.0:
                    aux = torch.tanh(x)
                with torch.no_grad():
                    steps += 1
                if aux is not None:
                    x = x + 0.5 * aux
                    continue
                x = torch.tanh(self.fc(x)) - 0.1 * j
        return x


class AuxCarried(nn.Module):
    def forward(self, x):
        for j in range(2):
            aux = None
            steps = 0
            while steps < 3 and x.max() > 0.2:
                if aux is not None:  # the previous iteration's value: carried, None then a tensor
                    x = x + aux
                aux = torch.tanh(x) * 0.5
                x = x - 0.3
                steps += 1
        return x


def test_a_name_the_body_sets_first_is_not_carried():
    torch.manual_seed(0)
    model = AuxResetInWhile().eval()
    inputs = [torch.randn(1, 8) * s for s in (1.0, 3.0, -1.0, 0.1)] + [torch.full((1, 8), 0.5), torch.full((1, 8), -0.5)]
    program = import_module(model, (inputs[0],))
    for x in inputs:
        assert max_abs_error(model(x), run(program, (x,))) <= 1e-5


def test_a_name_the_body_reads_first_is_still_carried_and_refused():
    with pytest.raises(FrontendError, match="`aux` changes structure in a runtime loop"):
        import_module(AuxCarried().eval(), (torch.randn(1, 8),))
