"""Found by `python -m dycl.fuzz --count 2000 --seed 86000 --backend interpreter` (snapshot
of 048a2b8), seed 86972, hcfg-mismatch (max abs error 0.23; reduced by hand): an in-place
change of a variable that aliases a list item (and another variable) on some paths only was
compiled wrongly. The first `if` marked `x` as sharing memory on one path (`Dyn.may_share`),
but a second `if` (the next copy of an unrolled loop) built its joined value without the
mark, so the later `x.div_(2.0)` was not refused and `outs[0]`/`keep` kept their old values.
Joins and loop carries now inherit the mark; the change is refused at its line."""

import torch
from torch import nn

import pytest

from dycl.frontend import FrontendError, import_module


class AliasOnSomePaths(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, lengths):
        outs = [x]
        keep = x
        for length in lengths:
            if length > 3:
                x = torch.tanh(self.fc(x))
        if bool(x.std() > 0.5):
            x.div_(2.0)  # line marker
        x = x + keep
        outs.append(x)
        return x, torch.stack(outs)


def test_an_in_place_change_of_a_path_dependent_alias_is_refused():
    model = AliasOnSomePaths().eval()
    with pytest.raises(FrontendError) as info:
        import_module(model, (torch.randn(1, 4), [1, 2]))
    lines = open(__file__).read().splitlines()
    assert info.value.line == next(k for k, l in enumerate(lines, 1) if "x.div_(2.0)  # line marker" in l)
    assert "on some paths only" in str(info.value)
