"""Found by `python -m dycl.fuzz --count 1000 --seed 109000 --backend interpreter` (snapshot
344dbbc; reduced by hand), seed 109146: a WRONG ANSWER. A helper DyCL runs as one captured
block did `x.detach().clamp_(min=-1.0)`, which changes `x` (a detached tensor shares its
memory). The capture turned every `detach` into a copy before functionalization, so the clamp
changed a copy and was dropped. `detach` is now an alias (a view functionalization follows)
until the graph has value semantics. `.detach()` written in forward itself was already the
tensor (`runs.DetachIsIdentity`); this is the code export sees: helpers and submodules."""

import torch
from torch import nn

from dycl.frontend import import_module
from tests.frontend.helpers import max_abs_error, run


class ClampThroughDetach(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def helper(self, x):
        x = self.fc(x)
        x.detach().clamp_(min=-1.0)
        return x

    def forward(self, x):
        x = self.helper(x)
        if x.std() < 0.5:
            x = x * 3
        return x


class DataThenLaterChange(nn.Module):
    """`.data` and `.detach()` see a later in-place change of the tensor they came from."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def helper(self, x):
        h = self.fc(x)
        kept, snapshot = h.data, h.detach()
        h.mul_(2)
        kept.add_(1)
        return h, snapshot

    def forward(self, x):
        h, snapshot = self.helper(x)
        if h.sum() > 0:
            h = h - snapshot
        return h, snapshot


def test_an_in_place_change_through_detach_changes_the_tensor():
    torch.manual_seed(0)
    for cls in (ClampThroughDetach, DataThenLaterChange):
        model = cls().eval()
        inputs = [torch.randn(1, 6) * s for s in (1.0, -1.0, 3.0, 0.1)]
        program = import_module(model, (inputs[0],))
        for x in inputs:
            assert max_abs_error(model(x), run(program, (x,))) <= 1e-5, cls.__name__
