"""Models for test_python_forms.py: the small Python forms of issue 34 (items 5 and 9) on
runtime values, written as published code writes them."""

from __future__ import annotations

import torch
from torch import nn


class ConfidenceGate(nn.Module):
    """An early-exit classifier reading its per-row confidences as Python floats
    (`.tolist()` of a float tensor), then gating on the first."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(6, 4)

    def forward(self, x):
        confidences = self.head(x).softmax(-1).max(-1).values.tolist()
        if confidences[0] > 0.4:
            return x * confidences[1]
        return x - sum(confidences)


def gate_inputs():
    torch.manual_seed(3)
    return [(torch.randn(3, 6) * scale,) for scale in (0.1, 5.0, 1.0, 8.0)]
