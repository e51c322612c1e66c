"""Masks combined with tensor ops that have no bool kernel in ONNX: `pos + neg` of two bool
masks (ONNX has no bool `Add`), `torch.where(c, a, b)` and `m.masked_fill(c, False)` of bool
masks (ONNX Runtime has no bool `Where`). The sub-DNN computes them on uint8 and casts back: exact, where the export
used to fail in the backend (a later stage failing on user code)."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from dycl.backends.onnxruntime import OnnxRuntimeBackend
from tests.backends.test_fx_rebuild import as_subdnn
from tests.frontend.helpers import assert_compiled_exactly
from tests.support.static_import import import_static


class HardNegatives(nn.Module):
    """SSD's hard negative mining, as `multibox_loss.py` writes it: the positives and the
    hardest negatives by a sort of a sort, kept where `(pos_idx + neg_idx).gt(0)`."""

    def __init__(self, negpos_ratio=3):
        super(HardNegatives, self).__init__()
        self.negpos_ratio = negpos_ratio
        self.head = nn.Linear(4, 3)

    def forward(self, feats, labels):
        conf = self.head(feats)
        loss_c = torch.logsumexp(conf, 2) - conf.gather(2, labels.unsqueeze(2)).squeeze(2)
        pos = labels > 0
        loss_c[pos] = 0
        _, loss_idx = loss_c.sort(1, descending=True)
        _, idx_rank = loss_idx.sort(1)
        num_pos = pos.long().sum(1, keepdim=True)
        num_neg = torch.clamp(self.negpos_ratio * num_pos, max=pos.size(1) - 1)
        neg = idx_rank < num_neg.expand_as(idx_rank)
        pos_idx = pos.unsqueeze(2).expand_as(conf)
        neg_idx = neg.unsqueeze(2).expand_as(conf)
        keep = (pos_idx + neg_idx).gt(0)
        either = torch.where(num_pos > 0, pos, neg)  # (bool operands)
        return conf * keep.float(), either, pos + True


class MaskUnion(nn.Module):
    """Rows kept by either of two masks, `.byte()` masks added as older code adds them."""

    def forward(self, x, y):
        keep = (x > 0) + (y > 0)
        picked = torch.where(x.sum(1, keepdim=True) > 0, x > 0, y > 0)
        blocked = keep.masked_fill(y < -1, False)
        return x * keep.float(), picked, (x > 0).byte() + (y > 0).byte(), blocked


def hard_negative_inputs():
    """No positive, one, two, and all of them."""
    generator = torch.Generator().manual_seed(0)
    inputs = []
    for count in (2, 0, 1, 12):
        labels = torch.zeros(2, 6, dtype=torch.long)
        labels.view(-1)[:count] = torch.tensor([1, 2] * 6)[:count]
        inputs.append((torch.randn(2, 6, 4, generator=generator), labels))
    return inputs


def test_a_union_of_masks_is_one_onnx_model_that_runs():
    """The sub-DNN alone through the ONNX Runtime backend (it used to be rejected: `Add` of
    bool tensors), run by ONNX Runtime on inputs where the masks agree and differ."""
    import onnxruntime

    generator = torch.Generator().manual_seed(1)
    x, y = torch.randn(3, 4, generator=generator), torch.randn(3, 4, generator=generator)
    model = MaskUnion().eval()
    module, weights = import_static(model, x, y, func_name="subdnn_0")
    compiled = OnnxRuntimeBackend().compile(as_subdnn(module), weights)
    session = onnxruntime.InferenceSession(compiled.files[compiled.meta["file"]])
    for x, y in ((x, y), (-x, y), (x, x)):
        actual = session.run(None, dict(zip(compiled.meta["input_names"], (x.numpy(), y.numpy()))))
        for expected, value in zip(model(x, y), actual):
            assert torch.equal(expected, torch.from_numpy(value))


@pytest.mark.slow
def test_a_union_of_masks_compiles_exactly_on_onnxruntime():
    generator = torch.Generator().manual_seed(1)
    inputs = [tuple(torch.randn(3, 4, generator=generator) for _ in range(2)) for _ in range(3)]
    assert_compiled_exactly(MaskUnion, inputs, "onnxruntime")


@pytest.mark.slow
def test_bool_mask_sums_and_selects_compile_exactly_on_onnxruntime():
    assert_compiled_exactly(HardNegatives, hard_negative_inputs(), "onnxruntime")


@pytest.mark.slow
def test_bool_mask_sums_and_selects_compile_exactly_on_tvm():
    assert_compiled_exactly(HardNegatives, hard_negative_inputs(), "tvm")


def _loss_of_no_samples(reduction: int):
    text = f'''"builtin.module"() ({{
  "func.func"() <{{sym_name = "subdnn_14", function_type = (!torch.vtensor<[0,3],f32>, !torch.vtensor<[0],si64>) -> !torch.vtensor<[],f32>, sym_visibility = "private"}}> ({{
  ^bb0(%0: !torch.vtensor<[0,3],f32>, %1: !torch.vtensor<[0],si64>):
    %2 = "torch.constant.none"() : () -> !torch.none
    %3 = "torch.constant.int"() <{{value = {reduction} : i64}}> : () -> !torch.int
    %4 = "torch.constant.int"() <{{value = -100 : i64}}> : () -> !torch.int
    %5 = "torch.constant.float"() <{{value = 0.000000e+00 : f64}}> : () -> !torch.float
    %6 = "torch.aten.cross_entropy_loss"(%0, %1, %2, %3, %4, %5) : (!torch.vtensor<[0,3],f32>, !torch.vtensor<[0],si64>, !torch.none, !torch.int, !torch.int, !torch.float) -> !torch.vtensor<[],f32>
    "func.return"(%6) : (!torch.vtensor<[],f32>) -> ()
  }}) {{dycl.subdnn}} : () -> ()
}}) : () -> ()'''
    from dycl.backends import subdnns_of
    from dycl.ir import parse_module

    (subdnn,) = subdnns_of(parse_module(text))
    return subdnn


@pytest.mark.parametrize("reduction", [1, 2], ids=["mean", "sum"])
def test_a_loss_of_no_samples_is_what_pytorch_gives(reduction):
    """The size-0 arm of `F.cross_entropy(conf[pos_idx + neg_idx].view(-1, 3), ...)` (SSD's
    loss of the kept priors; the arm runs when none is kept, or never, behind `if
    conf_p.numel() > 0`): ONNX Runtime rejected the exporter's model (a Reshape of no
    elements), failing the whole compile. It is PyTorch's value of no samples: nan averaged,
    0 summed."""
    import onnxruntime

    compiled = OnnxRuntimeBackend().compile(_loss_of_no_samples(reduction), {})
    session = onnxruntime.InferenceSession(compiled.files[compiled.meta["file"]])
    feeds = dict(zip(compiled.meta["input_names"], (torch.zeros(0, 3).numpy(), torch.zeros(0, dtype=torch.long).numpy())))
    (loss,) = session.run(None, {name: value for name, value in feeds.items() if name in {i.name for i in session.get_inputs()}})
    expected = F.cross_entropy(torch.zeros(0, 3), torch.zeros(0, dtype=torch.long), reduction=["none", "mean", "sum"][reduction])
    assert torch.equal(torch.from_numpy(loss), expected) or (expected.isnan() and torch.from_numpy(loss).isnan())
