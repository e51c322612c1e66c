"""Found by `python -m dycl.fuzz --count 2000 --seed 86000 --backend interpreter` (snapshot
of 048a2b8; reduced by hand), seed 86131: a variable whose rank already differed between
paths (an unranked tensor type after one join) was refused at a second join with a ranked
tensor of the same dtype, with IR types in the message ("`!torch.vtensor<[1,8],f32>` on one
path and `!torch.vtensor<*,f32>` on another"). The joins compile now: such a value can be
returned. Tensor math on it (`y.sum()`) was let through the frontend then, and failed later
in the pipeline with an IR message and no line ("tensor of shape * inside a would-be
sub-DNN"): a sub-network's tensors have known ranks. It is refused at its line now, in Python terms.
A join that really mixes kinds says so in Python terms too. (Seed 86032, a masked read-modify-write in a helper, is
`helper_masked_update` in tests/frontend/mutation_models.py.)"""

import pytest
import torch
from torch import nn

from dycl.frontend import FrontendError, import_module
from tests.frontend.helpers import max_abs_error, run


class RankTwiceJoined(nn.Module):
    def forward(self, x):  # x: (1, 8, 4, 4)
        if x.sum() > 0:
            y = x.mean((2, 3))
        else:
            y = x
        if x.mean() > 0.1:
            y = x.amax((2, 3)) * 2
        return y


class RankTwiceJoinedThenSummed(nn.Module):
    def forward(self, x):
        y = RankTwiceJoined.forward(self, x)
        return y.sum()  # computed with


class KindsMixed(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            y = x.mean()
        else:
            y = 3
        return y


def test_a_rank_that_differs_between_paths_joins_again():
    torch.manual_seed(0)
    model = RankTwiceJoined().eval()
    inputs = [torch.randn(1, 8, 4, 4) * s for s in (0.1, 1.0)] + [-torch.rand(1, 8, 4, 4), torch.rand(1, 8, 4, 4)]
    program = import_module(model, (inputs[0],))
    for x in inputs:
        assert max_abs_error(model(x), run(program, (x,))) <= 1e-5


def test_tensor_math_on_a_value_whose_rank_depends_on_the_path_is_refused_at_its_line():
    import inspect

    with pytest.raises(FrontendError) as info:
        import_module(RankTwiceJoinedThenSummed().eval(), (torch.randn(1, 8, 4, 4),))
    lines, first = inspect.getsourcelines(RankTwiceJoinedThenSummed)
    assert info.value.line == first + next(k for k, text in enumerate(lines) if "# computed with" in text)
    assert "computes with `y`, a float32 tensor whose rank depends on the path" in str(info.value)
    assert "`return y.sum()` computes with `y`" in str(info.value)
    assert "!torch" not in str(info.value)


def test_a_join_of_a_tensor_and_an_int_is_refused_in_python_terms():
    with pytest.raises(FrontendError) as info:
        import_module(KindsMixed().eval(), (torch.ones(1, 3),))
    assert "a float32 tensor of shape [] on one path and a Python int on another" in str(info.value)
    assert "!torch" not in str(info.value)
