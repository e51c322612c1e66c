"""Found by `python -m dycl.fuzz --count 1000 --seed 109000 --backend interpreter` (snapshot
344dbbc; reduced by hand), seed 109565: an over-refusal, with an internal name in its message
("`__helper02_aux1` changes structure in a runtime loop"). An inlined helper left `aux`, None
on some paths, in the environment; a `while` loop that changed `x` in place rebuilt every
value that might alias `x`, `aux`'s optional value too, and the rebuilt one counted as changed
by the loop, so the loop carried it. An optional value is now the same value when its parts
are, and an in-place change keeps it when its value is not an alias. Error messages show an
inlined helper's locals by their own names."""

import pytest
import torch
from torch import nn

from dycl.frontend import FrontendError, import_module
from tests.frontend.helpers import max_abs_error, run


class OptionalThenInPlaceLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def helper(self, x):
        x = x + torch.relu(self.fc(x))
        aux = None
        if x.max() < 0.5:
            aux = x * 0.5
        if aux is None:
            x = x * 0.9
        else:
            x = x - 0.1 * aux
        return x

    def forward(self, x):
        x = torch.tanh(self.helper(x))
        steps = 0
        while steps < 2 and x.min() > -3.0:
            x[:, steps] += 2.0
            x = torch.sigmoid(x)
            steps += 1
        return x


class CarriedOptionalInHelper(nn.Module):
    def helper(self, x):
        aux = None
        steps = 0
        while steps < 3 and x.sum() > 0:
            if aux is not None:
                x = x + aux
            aux = x * 0.5
            steps += 1
        return x

    def forward(self, x):
        if x.mean() > 0:
            x = x * 2
        return self.helper(x)


def test_an_optional_the_loop_does_not_change_is_not_carried():
    torch.manual_seed(0)
    model = OptionalThenInPlaceLoop().eval()
    inputs = [torch.randn(1, 8) * s for s in (1.0, 0.1, -1.0, 3.0)]
    program = import_module(model, (inputs[0],))
    for x in inputs:
        assert max_abs_error(model(x.clone()), run(program, (x.clone(),))) <= 1e-5


def test_a_refusal_names_an_inlined_helpers_local_as_written():
    with pytest.raises(FrontendError) as caught:
        import_module(CarriedOptionalInHelper().eval(), (torch.randn(1, 4),))
    assert "`aux` changes structure in a runtime loop" in str(caught.value)
    assert "__" not in str(caught.value)
