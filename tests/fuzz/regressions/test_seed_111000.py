"""Found by `python -m dycl.fuzz --count 150 --seed 111000` (TVM every 50th; reduced by
hand), seed 111000: `sum([c < 0.0 for c in scores])` adds bool tensors to the int 0
(`aten.add.Scalar` of a bool tensor, an int64 result in PyTorch), which TVM's Relax frontend
rejected ("Check failed: (t.MatchesCode(DLDataTypeCode::kDLFloat)) is false"). A bool operand
of arithmetic is now cast to the result's dtype first, as PyTorch promotes it."""

import os
import tempfile

import torch
from torch import nn

from tests.frontend.helpers import assert_compiled_exactly

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))

INPUTS = [(torch.randn(1, 4, generator=torch.Generator().manual_seed(k)) * s,) for k in range(3) for s in (1.0, -1.0)]


class CountNegativeScores(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

    def forward(self, x):
        scores = [torch.sigmoid(head(x)).mean() - 0.5 for head in self.heads]
        if sum([c < 0.0 for c in scores]) >= 2:
            x = torch.relu(x)
        return x, (x.mean() < 0) + 0, (x > 0) * 1.5


def test_bool_arithmetic_compiles_for_tvm():
    assert_compiled_exactly(CountNegativeScores, INPUTS, "tvm")


def test_bool_arithmetic_compiles_for_onnxruntime():
    assert_compiled_exactly(CountNegativeScores, INPUTS, "onnxruntime")
