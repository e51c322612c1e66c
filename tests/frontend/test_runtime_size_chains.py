"""Random chains of tensor ops on `x[:k]` (k = 0..4, the count a runtime int): each chain is
compiled and interpreted for every k, and must equal eager or be refused at its line. This is
how a wrong answer older than runtime sizes was found: `y.dim()` of a tensor whose rank
depends on the path returned the example path's rank. Slow tier: about 2 s per chain."""

from __future__ import annotations

import copy
import random

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from dycl.frontend import FrontendError, import_module
from tests.frontend.helpers import eager, max_abs_error, run

SLICES = ["y = x[:k]", "y = x[k:]", "y = x[1:k + 1]", "y = x[:k].clone()"]
OPS = [
    "y = torch.relu(y)", "y = y * 2 + 1", "y = torch.softmax(y, -1)", "y = y.sum(0, keepdim=True)",
    "y = y.mean(-1, keepdim=True) * y", "y = self.fc(y)", "y = torch.cat([y, y], 0)", "y = y.t().t()",
    "y = y.reshape(-1, 4)", "y = y.unsqueeze(0).squeeze(0)", "y = y @ self.w", "y = F.layer_norm(y, (4,))",
    "y = y - y.mean(0, keepdim=True)", "y = torch.cumsum(y, 0)", "y = y.flip(0)", "y = torch.where(y > 0, y, y * 0.1)",
    "y = y + x[:k][:y.shape[0]]", "y = y * x[:1]", "y = torch.stack([y, y]).sum(0)",
    "y = y.squeeze(0) if y.dim() > 1 else y", "y = y.expand(y.shape[0], 4) + 0",
]


def chain(rng: random.Random, tmp_path, index: int):
    lines = [rng.choice(SLICES)] + [rng.choice(OPS) for _ in range(rng.randint(1, 4))]
    body = "\n".join("        " + line for line in lines)
    source = f"""
class Chain(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.w = nn.Parameter(torch.randn(4, 4))

    def forward(self, x, lengths):
        k = sum([l > 2 for l in lengths])
{body}
        return y, y.shape[0]
"""
    path = tmp_path / f"chain_{index}.py"
    path.write_text(source)
    namespace = {"nn": nn, "torch": torch, "F": F}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace["Chain"], source


@pytest.mark.slow
@pytest.mark.parametrize("seed", [2, 3])
def test_random_chains_on_a_runtime_slice_are_exact_or_refused(seed, tmp_path):
    rng = random.Random(seed)
    compiled = 0
    for index in range(30):
        factory, source = chain(rng, tmp_path, index)
        torch.manual_seed(index)
        model = factory().eval()
        inputs = [(torch.randn(4, 4), [5] * n + [1] * (4 - n)) for n in (2, 0, 1, 3, 4)]
        try:
            expected = [eager(model, copy.deepcopy(args)) for args in inputs]
        except Exception:
            continue  # (not a valid program for every k)
        try:
            program = import_module(model, copy.deepcopy(inputs[0]))
        except FrontendError as error:
            assert error.file == str(tmp_path / f"chain_{index}.py") and error.line > 0, error
            continue
        for args, want in zip(inputs, expected):
            assert max_abs_error(want, run(program, copy.deepcopy(args))) <= 1e-5, (args[1], source)
        compiled += 1
    assert compiled >= 20
