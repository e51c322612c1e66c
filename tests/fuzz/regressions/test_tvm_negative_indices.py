"""Found by the TVM tier of the packed-sequence tests (a wrong answer, older than them):
`h[-1] * 1.0` inside a sub-DNN gave garbage on TVM (max abs error 3e+34). Relax's
converters gather with `take` in its fast mode, which reads out of bounds at a negative
index: `select` with a negative int, and `y[idx]` / `y[idx] = v` with an index tensor holding
negative values (PyTorch counts them from the end). DyCL's TVM import counts from the end
itself. ONNX Runtime was right throughout."""

import os
import tempfile

import pytest
import torch
from torch import nn

from tests.frontend.helpers import assert_compiled_exactly

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))

INPUTS = [(torch.randn(3, 4, generator=torch.Generator().manual_seed(k)),) for k in range(3)]


class NegativeIndices(nn.Module):
    def forward(self, x):
        y = torch.tanh(torch.stack([x, x * 2, x * 3]))
        by_data = (x[0] > 0).long() - 1  # -1 or 0, from the values
        z = x.clone()
        z[torch.tensor([-1, 0])] = 0.5
        return (y[-1] * 1.0, y[-2, :, -1] + 1.0, y.select(2, -3) * 2.0, x[torch.tensor([-1, 0])] * 1.0,
                x[:, by_data] * 1.0, z * 1.0)


@pytest.mark.parametrize("backend", ["tvm", "onnxruntime"])
def test_negative_indices_count_from_the_end(backend):
    assert_compiled_exactly(NegativeIndices, INPUTS, backend)
