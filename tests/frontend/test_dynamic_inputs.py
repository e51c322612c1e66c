"""Inputs of any length: a dim of an example input marked dynamic (`torch._dynamo.mark_dynamic`,
as for torch.compile) is a runtime dim from the entry on, so one compiled model takes prompts
of every length; `torch.tensor([T])` of runtime ints (gpt-fast's `input_pos`) compiles."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import dycl
from dycl.frontend import import_module
from tests.frontend.helpers import max_abs_error, run


class Positions(nn.Module):
    """gpt-fast's prefill bookkeeping on a prompt of any length, and a size test on it."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(32, 4)
        self.proj = nn.Linear(4, 4)

    def forward(self, prompt: torch.Tensor, budget: int):
        T = prompt.size(0)
        input_pos = torch.arange(0, T)
        h = self.proj(self.embed(prompt.view(1, -1))) * input_pos[None, :, None]
        last = torch.tensor([T], dtype=torch.int)
        both = torch.tensor([[T, budget], [budget, 2]])
        if T > 3:
            h = h.flip(1)
        return h.sum(1), last + 1, both


def _prompt(length: int) -> torch.Tensor:
    return torch.arange(length) % 32


def _marked(length: int) -> torch.Tensor:
    prompt = _prompt(length)
    torch._dynamo.mark_dynamic(prompt, 0)
    return prompt


def _eager(model, *args):
    with torch.no_grad():
        return model(*args)


def test_a_marked_dim_takes_any_size_on_the_interpreter():
    torch.manual_seed(0)
    model = Positions().eval()
    program = import_module(model, (_marked(5), 3))
    (argument, *_), = [op.body.blocks[0].args for op in program.module.walk() if op.name == "func.func"][:1]
    assert "?" in str(argument.type)  # (`!torch.vtensor<[?],si64>`)
    for length in (1, 2, 3, 4, 5, 9):
        args = (_prompt(length), 7)
        result = run(program, args)
        assert max_abs_error(_eager(model, *args), result) <= 1e-6
        assert result[1].dtype == torch.int32 and result[2].dtype == torch.int64


def test_compiled_model_takes_prompts_it_never_saw_and_refuses_an_unmarked_size():
    torch.manual_seed(0)
    model = Positions().eval()
    compiled = dycl.compile(model, (_marked(5), 3), progress=False)
    for length in (1, 2, 6, 11):
        assert max_abs_error(_eager(model, _prompt(length), 4), compiled(_prompt(length), 4)) <= 1e-5
    fixed = dycl.compile(model, (_prompt(5), 3), progress=False)
    with pytest.raises(dycl.InputError, match=r"shape \[5\]"):
        fixed(_prompt(6), 3)


class PicksFromValues(nn.Module):
    """`torch.tensor` of a list of runtime Python ints built in forward (it was refused, with
    the list quoted by its name): stacked in the run that computes them."""

    def forward(self, x):
        picks = [int(x[0, i] > 0) for i in range(4)]
        return x * torch.tensor(picks)


def test_tensor_of_a_comprehension_of_runtime_ints_is_exact():
    model = PicksFromValues()
    compiled = dycl.compile(model, (torch.randn(2, 4),), progress=False)
    for seed in range(6):  # signs of row 0 differ: every pick is 0 on some input and 1 on another
        x = torch.randn(2, 4, generator=torch.Generator().manual_seed(seed))
        assert max_abs_error(_eager(model, x), compiled(x)) == 0.0
