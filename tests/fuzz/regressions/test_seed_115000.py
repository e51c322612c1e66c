"""Found by `python -m dycl.fuzz --count 40 --seed 115000 --backend tvm` (seeds 115000,
115016, 115019, 115021): stores with fewer index tensors than dims (`x[0, idx] = 2.0` on a
4-d `x`, `x.index_put_((i, j), v, accumulate=True)`, `x[:, idx] = ...`) failed TVM's Relax import ("IndexPut
requires the number of index tensors (2) to match the data tensor dimensions (4)"). DyCL
now gives the trailing dims `arange` indices and expands the indices and values to the
indexed shape before the import: the same store."""

import os
import tempfile

import torch
from torch import nn

from tests.frontend.helpers import assert_compiled_exactly

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))

INPUTS = [(torch.randn(1, 6, 3, 3, generator=torch.Generator().manual_seed(k)) * s,) for k in range(2) for s in (1.0, -1.0)]


class PartialIndexStores(nn.Module):
    def forward(self, x):
        x = x * 1.0
        if x.mean() > 0:
            x[0, torch.arange(0, 6, 2)] = 2.0
        x.index_put_((torch.tensor([0]), torch.tensor([1])), torch.tensor(1.0), accumulate=True)
        x[:, torch.tensor([0, 1])] = x[:, torch.tensor([1, 0])]
        y = x.mean((2, 3))
        y[0, torch.tensor([1, 3])] = torch.tensor([5.0, -5.0])
        return x + 1, y


def test_partial_index_stores_compile_for_tvm():
    assert_compiled_exactly(PartialIndexStores, INPUTS, "tvm")


def test_partial_index_stores_compile_for_onnxruntime():
    assert_compiled_exactly(PartialIndexStores, INPUTS, "onnxruntime")
