"""Issue 34's campaign (seed 199 with the `one_path_alias` branch kinds): the ONNX export of a
sub-DNN failed on a float32 tensor times a 0-d float64 one inside a kept `If` ("torch.export
failed: When merging two branches' output in torch.cond, expected same dtype but got
torch.float64 and torch.float32", a BackendError: a stage after the frontend failing on what
the user wrote). Reduced: the 0-d float64 operand is a weight, a registered buffer such as
`torch.tensor(np.log(1 / 0.07))` (numpy's float64 makes a float64 tensor). The backends'
rebuild of the sub-DNN made each weight a tensor with `np.ascontiguousarray`, which turns a
0-d array into a 1-d one, and a (1,) float64 tensor promotes a float32 operand to float64
where a 0-d one does not (torch's rule: a 0-d tensor does not promote a dimensioned one of
the same category). Outside a kept `If` the result was float64 (the self-check's
CompileMismatch); inside one, the arms' dtypes differed. Fixed in `fx_rebuild._as_tensor`.

Eager's dtypes are kept for a 0-d float64 weight, a 0-d float64 tensor computed in the graph
and a float64 literal, in `*`, `+`, `-`, `/` and `where`, inside a kept `If` and outside.
"""

import os
import tempfile

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from dycl.fuzz.oracle import check_program
from dycl.fuzz.program import Cond, If, Line, Program
from tests.frontend.helpers import compiled_error, seeded_model, tiered

os.environ.setdefault("DYCL_CACHE_DIR", tempfile.mkdtemp(prefix="dycl-test-cache-"))

INPUTS = [(torch.randn(2, 4, generator=torch.Generator().manual_seed(k)) + shift,) for k in range(2) for shift in (-2.0, 2.0)]


def _scaled_gate(op: str) -> Program:
    """As the generator writes it: a gate on a statistic of `x`, whose arm computes with a
    0-d float64 buffer (`op` with `@` for it)."""
    return Program(
        seed=199, input_shape=(1, 4), modules={"m0": "nn.Linear(4, 4)"}, helpers={}, prologue=[],
        body=[Line("x = self.m0(x)"),
              If([(Cond("x.sum()", 0), [Line(f"x = {op.replace('@', 'self.fz_scale')}")])], [Line("x = torch.tanh(x)")])],
        epilogue=["return x * 2.0, x.sum()"],
        init=['self.register_buffer("fz_scale", torch.tensor(0.5, dtype=torch.float64))'],
    )


@pytest.mark.parametrize("op", ["x * @", "x + @", "@ - x", "x / (@ + 3.0)", "torch.where(x > 0, x, @)"])
def test_a_float64_scalar_weight_in_a_kept_if_keeps_eager_dtypes(op):
    outcome = check_program(_scaled_gate(op), "onnxruntime")
    assert outcome.status == "ok" and outcome.inputs >= 2, outcome.detail


class ContrastiveExit(nn.Module):
    """A CLIP-style temperature kept as a buffer made from numpy (`torch.tensor(np.log(1 /
    0.07))` is float64), applied to cosine logits in an early exit and after the last block;
    a float64 margin computed in the graph, and a float64 literal, outside the exit."""

    def __init__(self):
        super().__init__()
        self.block1 = nn.Linear(4, 4)
        self.block2 = nn.Linear(4, 4)
        self.prototypes = nn.Parameter(torch.randn(3, 4))
        self.register_buffer("logit_scale", torch.tensor(np.log(1 / 0.07)))

    def logits(self, h):
        return self.logit_scale.exp() * F.normalize(h, dim=-1) @ F.normalize(self.prototypes, dim=-1).t()

    def forward(self, x):
        h = torch.relu(self.block1(x))
        if h.mean() > 0.5:
            return self.logits(h) - self.logit_scale, 1
        h = self.block2(h) + h.mean().double() * torch.tensor(0.5, dtype=torch.float64)
        return torch.where(h > 0, h, self.logit_scale), 2


@pytest.mark.parametrize("backend", tiered(["onnxruntime", "tvm"], ["onnxruntime"]))
def test_a_float64_temperature_buffer_matches_eager(backend):
    model = seeded_model(ContrastiveExit)
    exits = {model(*args)[1] for args in INPUTS}
    assert exits == {1, 2}  # (both exits taken)
    error = compiled_error(model, INPUTS, backend)
    print(f"max abs error {error:.3g} ({backend})")
    assert error <= 1e-5
