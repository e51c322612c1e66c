"""Found by `python -m dycl.fuzz --count 40 --seed 121000 --backend tvm`, seed 121034: the
sub-DNN of `while (x.abs() > 1.0).any() and n < 40:` failed to compile on TVM ("LLVM module
verification failed: Invalid operand types for FCmp instruction"): DyCL's converter of
`aten.any` compared the bool tensor with `False`, which TVM lowers to a float compare of
`i1`. A bool tensor is now its own test."""

import os
import tempfile

import torch
from torch import nn

from tests.frontend.helpers import assert_compiled_exactly

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))

INPUTS = [(torch.randn(1, 8, generator=torch.Generator().manual_seed(k)) * s,) for k in range(3) for s in (0.3, 4.0)]


class HalveUntilSmall(nn.Module):
    def forward(self, x):
        n = 0
        while (x.abs() > 1.0).any() and n < 40:
            x = x * 0.5
            n += 1
        return x, n, (x > 0.25).any(), (x * 3).any()


def test_any_of_a_bool_tensor_compiles_for_tvm():
    assert_compiled_exactly(HalveUntilSmall, INPUTS, "tvm")


def test_any_of_a_bool_tensor_compiles_for_onnxruntime():
    assert_compiled_exactly(HalveUntilSmall, INPUTS, "onnxruntime")
