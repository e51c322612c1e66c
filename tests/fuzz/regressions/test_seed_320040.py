"""Found by `python -m dycl.fuzz --count 150 --seed 320000 --backend onnxruntime --tvm-every 10`,
seed 320040 (on TVM): the sub-DNN of the `tensor_predicate` condition
`if torch.count_nonzero(x.amax() < t) > 0:` failed to compile ("LLVM module verification
failed: Invalid operand types for FCmp instruction"): `count_nonzero` decomposes to
`sum(mask != 0)`, and TVM compares a bool tensor with a number as a float compare of `i1`.
Seed 320140: `(x.max() < 0.0).eq(torch.tensor(True)).all()`, two bool tensors, the same.
The bools are cast to the number's kind first (`tvm._compare_bools_as_numbers`)."""

import os
import tempfile

import torch
from torch import nn

from tests.frontend.helpers import assert_compiled_exactly

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))

INPUTS = [(torch.randn(2, 8, generator=torch.Generator().manual_seed(k)) * s + b,)
          for k in range(2) for s, b in ((0.1, 0.0), (1.0, 5.0), (1.0, 0.0))]


class CountThenBranch(nn.Module):
    def forward(self, x):
        mask = x > 0.2
        if torch.count_nonzero(x.amax() < 0.5) > 0:
            return x + 1, torch.count_nonzero(mask), (mask == 0).float(), (mask != 0.5).float(), mask.eq(torch.tensor(True)).all()
        return x - 1, torch.count_nonzero(mask, dim=1), (mask != 1).float(), (mask == 1.0).float(), mask.ne(x > 1.0).any()


def test_a_bool_tensor_compared_with_a_number_compiles_for_tvm():
    assert_compiled_exactly(CountThenBranch, INPUTS, "tvm")


def test_a_bool_tensor_compared_with_a_number_on_onnxruntime():
    assert_compiled_exactly(CountThenBranch, INPUTS, "onnxruntime")
