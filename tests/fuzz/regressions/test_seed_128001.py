"""Found by `python -m dycl.fuzz --count 40 --seed 128000 --backend tvm`, seed 128001 (a
wrong answer, older than the campaign): `x * (1.0 + 0.01 * out.batch_sizes.sum())` left
`x` unchanged on TVM. PyTorch computes an int tensor with a float (`0.01 * k`, `k / 4`) in
the float dtype; Relax computed it in int64 (`0.5 * k` gave 0). Such int operands are cast
to the result's dtype first. ONNX Runtime was right."""

import os
import tempfile

import pytest
import torch
from torch import nn

from tests.frontend.helpers import assert_compiled_exactly

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))

INPUTS = [(torch.randn(1, 4, generator=torch.Generator().manual_seed(k)), torch.randn(9, generator=torch.Generator().manual_seed(k + 10)))
          for k in range(3)]


class IntTimesFloat(nn.Module):
    def forward(self, x, n):
        k = (n > 0).long().sum()
        return x * (1.0 + 0.01 * k), 0.5 * k, k * 0.25 + 1, k / 4, (n > 0).long() * 0.5


@pytest.mark.parametrize("backend", ["tvm", "onnxruntime"])
def test_an_int_tensor_with_a_float_computes_in_the_float_dtype(backend):
    assert_compiled_exactly(IntTimesFloat, INPUTS, backend)
