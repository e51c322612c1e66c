"""Found by `python -m dycl.fuzz --count 2000 --seed 84000 --backend interpreter` (the
snapshot of 5d6b94f; reduced by hand). Refusals of programs that should compile:

- seeds 84087, 84088, 84142, 84171, 84236, 84253: a `for head in self.heads:` loop inside a
  runtime loop was refused ("`head` holds a Linear that depends on a runtime condition"):
  liveness counted the body's reads of `head` as reads of a value from before the loop, so
  the runtime loop carried `head`. A `for` binds its target before each run of its body.
- seed 84102: a straight-line helper with a `with torch.no_grad():` block ran inside a
  captured block, where torch.export cannot take the block (NotImplementedError);
- seed 84191: the same with a store through `.data` (`x.data[:, 0] = -1.0`). DyCL now
  compiles such helpers itself (inlined), with its own desugaring of both.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from dycl.frontend import import_module
from tests.frontend.helpers import max_abs_error, run


class HeadsInWhile(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(4, 4) for _ in range(2)])

    def forward(self, x):
        step = 0
        while step < 3 and x.sum() > 0:
            for head in self.heads:
                x = x - torch.sigmoid(head(x))
            step += 1
        return x


class NoGradHelper(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def helper(self, x):
        x = x + F.silu(self.fc(x))
        with torch.no_grad():
            x = x + F.hardtanh(self.fc(x))
        return x

    def forward(self, x):
        x = self.helper(x)
        if x.sum() > 0:
            x = x * 2
        return x


class DataStoreHelper(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def helper(self, x):
        x[:, :2].copy_(x[:, 2:4])
        x = F.elu(self.fc(x))
        x.data[:, 0] = -1.0
        return x

    def forward(self, x):
        x = x.clone()
        x = self.helper(x)
        if x.abs().mean() > 0.5:
            x = x - 1
        return x


@pytest.mark.parametrize("factory", [HeadsInWhile, NoGradHelper, DataStoreHelper])
def test_compiles_exactly(factory):
    torch.manual_seed(0)
    model = factory().eval()
    inputs = [torch.randn(1, 4) * s for s in (0.1, 1.0, 3.0, 10.0)] + [torch.rand(1, 4) * 3, -torch.rand(1, 4) * 3]
    program = import_module(model, (inputs[0].clone(),))
    for x in inputs:
        assert max_abs_error(model(x.clone()), run(program, (x.clone(),))) <= 1e-5
