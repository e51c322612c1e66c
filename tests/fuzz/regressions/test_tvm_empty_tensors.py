"""Found by the TVM tier of the packed-sequence tests (older than them): sub-DNNs of tensors
with no elements, as the size-0 variant of a run makes them (`x[:k]` at k = 0).
- `(lengths[:-1] >= lengths[1:]).all()` of a 1-element `lengths` gave False on TVM, by the
  memory's garbage: TVM's reductions never run their init over a loop of no steps, and
  Relax's `any` casts the max of nothing (int8's least value) to True. A silent wrong answer.
- `e.t()` of a [0, 1] tensor failed to compile ("Reshape expects the new shape to be
  convertible from the old shape").
- `e.mean(0)`, the nan its identity is, failed to compile: Relax's `full` rejects a fill
  that is not finite (fuzz 128003).
DyCL's TVM import makes a result of no elements `zeros` and a reduction of none its identity."""

import os
import tempfile

import pytest
import torch
from torch import nn

from tests.frontend.helpers import assert_compiled_exactly

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))


class OfNothing(nn.Module):
    def forward(self, x):
        e = x[:0] * 2  # (0, 4): no elements
        b = e > 0
        lengths = torch.stack([x.long().sum()])
        return (b.any(), b.any(0), b.all(0), (lengths[:-1] >= lengths[1:]).all(), e.sum(0), torch.mm(e.t(), e),
                e.sum(1).unsqueeze(1).t() * 1.0, e.mean(0) + x[0], x + torch.full((1, 4), float("-inf")))


INPUTS = [(torch.randn(3, 4, generator=torch.Generator().manual_seed(k)) * 3,) for k in range(3)]


@pytest.mark.parametrize("backend", ["tvm", "onnxruntime"])
def test_tensors_of_no_elements_compute_what_eager_does(backend):
    for _ in range(3):  # (the garbage was not the same in every process)
        assert_compiled_exactly(OfNothing, INPUTS, backend)
