"""Found by the TVM tier of the packed-sequence tests: `i.clamp(max=2)` of an int tensor
failed to compile on TVM ("Cannot convert infinity to BigInt"): Relax's converter makes a
missing bound infinite. DyCL's converter bounds it by the dtype's own limit."""

import os
import tempfile

import torch
from torch import nn

from tests.frontend.helpers import assert_compiled_exactly

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))

INPUTS = [(torch.randn(2, 5, generator=torch.Generator().manual_seed(k)) * s,) for k in range(2) for s in (0.5, 3.0)]


class ClampOneBound(nn.Module):
    def forward(self, x):
        i = (x * 3).long()
        return i.clamp(max=2) + i.clamp(min=-1), torch.clamp(i, None, 1), x.clamp(max=0.5)


def test_an_int_clamp_with_one_bound_compiles_for_tvm():
    assert_compiled_exactly(ClampOneBound, INPUTS, "tvm")


def test_an_int_clamp_with_one_bound_compiles_for_onnxruntime():
    assert_compiled_exactly(ClampOneBound, INPUTS, "onnxruntime")
