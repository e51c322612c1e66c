"""A module or function picked by a runtime index (`self.experts[k](x)`), written the way
mixture-of-experts and RL policy code writes it."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class _Experts(nn.Module):
    def __init__(self, n=3):
        super().__init__()
        self.gate = nn.Linear(4, n)
        self.experts = nn.ModuleList([nn.Linear(4, 4) for _ in range(n)])

    def probs(self, x):
        return F.softmax(self.gate(x), dim=1)


class ExpertByArgmax(_Experts):
    def forward(self, x):
        probs = self.probs(x)
        k = int(probs.argmax(1))
        return self.experts[k](x) * probs[0, k], k


class PickFromTheEnd(_Experts):
    """A negative index picks from the end, as in Python."""

    def forward(self, x):
        k = int(self.probs(x).argmax(1)) - 3
        y = self.experts[k](x)
        return torch.tanh(y)


class SameExpertTwice(_Experts):
    def forward(self, x):
        k = int(self.probs(x).argmax(1))
        return self.experts[k](x) + self.experts[k](torch.tanh(x))


class NumpyAction(_Experts):
    """`np.argmax(probs.data.numpy())` as the index (a numpy integer)."""

    def forward(self, x):
        action = np.argmax(self.probs(x).data.numpy())
        out = self.experts[action](x)
        return out, int(action)


class ActivationTable(nn.Module):
    """A list of functions on the module, and a list of thresholds read at the same index."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(4, 3)
        self.fc = nn.Linear(4, 4)
        self.activations = [torch.tanh, torch.sigmoid, F.relu]
        self.thresholds = [0.0, 0.5, 1.0]

    def forward(self, x):
        k = int(self.gate(x).argmax(1))
        h = self.activations[k](self.fc(x))
        if h.sum() > self.thresholds[k]:
            h = h * 2
        return h


class IndexPastTheEnd(_Experts):
    """`k` reaches 3 with three experts: Python raises IndexError, so must the compiled model."""

    def forward(self, x):
        k = int(self.probs(x).argmax(1)) + 1
        return self.experts[k](x)
