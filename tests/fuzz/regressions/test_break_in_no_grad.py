"""Found by the generator of the module-attribute forms (seed 50, interpreter level,
hcfg-mismatch, max abs error 0.98; reduced by hand): a `break` inside a `with
torch.no_grad():` block of a `while` body was not seen as the loop's own (`loops.py`
looked for breaks through `if` arms only), so the loop kept running and the program
returned wrong values on the inputs that break:

    def forward(self, x):
        steps = 0
        while steps < 1 and x.std() > 0.5:
            with torch.no_grad():
                x = x - 1.0
                if x.abs().mean() < 2.0:
                    break
            steps += 1
        return x
"""

import pytest
import torch
from torch import nn

from dycl.frontend import import_module
from tests.frontend.helpers import BranchCoverage, if_ops, run


class BreakInNoGrad(nn.Module):
    def forward(self, x):
        x = x.clone()
        if x.sum() < 0:
            x = torch.tanh(x) * 3
            steps = 0
            while steps < 2 and x.std() > 0.5:
                with torch.no_grad():
                    x[:, steps] += -1.0
                    if x.abs().mean() < 2.0:
                        break
                steps += 1
        return x


class ContinueInNoGrad(nn.Module):
    def forward(self, x):
        total = x * 0
        for k in range(3):
            with torch.no_grad():
                if x[0, k] > 0:
                    continue
                total = total + x[0, k]
        return total


@pytest.mark.parametrize("factory", [BreakInNoGrad, ContinueInNoGrad])
def test_a_jump_inside_a_no_grad_block_leaves_the_loop(factory):
    model = factory().eval()
    torch.manual_seed(0)
    inputs = [torch.randn(1, 6) * s for s in (0.1, 1.0, 3.0, 10.0)] + [-torch.rand(1, 6) * s for s in (1.0, 3.0, 10.0)]
    program = import_module(model, (inputs[0],))
    coverage = BranchCoverage()
    for x in inputs:
        assert torch.allclose(model(x.clone()), run(program, (x.clone(),), coverage), atol=1e-5)
    assert all(len(coverage.taken[id(op)]) == 2 for op in if_ops(program)), "a branch never ran"
