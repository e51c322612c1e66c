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


class BeamPick(nn.Module):
    """A beam search step keeping the best beam: `scores.index(max(scores))` of the beams'
    float scores (`.tolist()`), then the beam at that index."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(5, 5)

    def forward(self, beams):
        scores = self.proj(beams).log_softmax(-1).max(-1).values.tolist()
        best = scores.index(max(scores))
        return beams[best] * scores[best]


def beam_inputs():
    torch.manual_seed(4)
    return [(torch.randn(4, 5) * 3,) for _ in range(6)] + [(torch.zeros(4, 5),)]


class EosPosition(nn.Module):
    """A decoder's output cut at its end token: `ids.index(eos)` of the greedy token ids
    (`.tolist()` of an int tensor); eager's ValueError where no token is the end token."""

    eos = 2

    def forward(self, logits):
        ids = logits.argmax(-1).tolist()
        end = ids.index(self.eos)
        return logits[end]


def eos_inputs():
    def row(token):
        return torch.nn.functional.one_hot(torch.tensor(token), 4).float()
    return [(torch.stack([row(t) for t in tokens]),) for tokens in ([1, 2, 3], [2, 0, 2], [3, 3, 2], [0, 2, 1])]
