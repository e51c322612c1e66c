"""Sizes known only at run time used as numbers in tensor math, written as published code
writes them: a mean over the decode steps taken (`h.sum(1) / h.size(1)`), pooling over
the rows a mask kept scaled by their count (`x[idx].mean(0) * idx.numel()`), a size in the
statement that computes with it. Export hands such a size to the op as a SymInt; it enters
the sub-DNN as a 0-d tensor (export_rewrites.sizes_as_tensors)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class MeanOverDecodeSteps(nn.Module):
    """A decoder run for `max(lengths)` steps whose states are averaged over the steps taken."""

    def __init__(self):
        super(MeanOverDecodeSteps, self).__init__()
        self.cell = nn.GRUCell(3, 4)
        self.out = nn.Linear(4, 2)

    def init_hidden(self, batch_size):
        return Variable(torch.zeros(batch_size, 4))

    def forward(self, x, lengths):
        h = self.init_hidden(x.size(0))
        states = []
        for t in range(max(lengths)):
            h = self.cell(x, h)
            states.append(h.unsqueeze(1))
        if len(states) == 0:
            return self.out(h)
        hs = torch.cat(states, 1)
        pooled = hs.sum(1) / hs.size(1)  # the mean over the steps taken
        return self.out(pooled) * (1.0 / len(lengths))


class ScaledByKeptCount(nn.Module):
    """Rows whose score passes a threshold are pooled; the pooled row is scaled by how many
    were kept, and the input by the count of kept values."""

    def __init__(self):
        super(ScaledByKeptCount, self).__init__()
        self.score = nn.Linear(5, 1)

    def forward(self, x):
        keep = (self.score(x).squeeze(1) > 0).data
        idx = keep.nonzero().squeeze(1)
        pooled = x[idx].sum(0) * idx.numel()
        kept = x[x > 0]
        y = x * kept.size(0) / 4.0 + pooled
        return y, idx.size(0)


class IntegerCounts(nn.Module):
    """Integer math with a size: an int32 tensor times a count stays int32, a bool tensor
    times it is int64 (Python's promotion of a number)."""

    def forward(self, x):
        positive = x > 0
        kept = x[positive]
        counts = positive.int() * kept.size(0)
        flags = positive * kept.numel()
        return counts, flags, counts.sum(dtype=torch.int32) - kept.size(0)


class ClampBySize(nn.Module):
    """A size bound to a name, then divided (a float on the host), and a size made a tensor
    where the op takes a number: both compile."""

    def forward(self, x):
        kept = x[x > 0]
        n = kept.size(0)
        y = x.clamp(max=n / 4)
        z = torch.clamp(x, min=torch.tensor(-kept.size(0) / 8, dtype=x.dtype))
        return y + z + np.float32(0.5) * F.relu(x)


def decode_inputs() -> list:
    generator = torch.Generator().manual_seed(3)
    return [(torch.randn(2, 3, generator=generator), lengths) for lengths in ([3, 2], [1, 1], [5, 2], [0, 0], [2, 1])]


def kept_inputs() -> list:
    """No value kept, one, some, all (the example keeps some)."""
    generator = torch.Generator().manual_seed(4)
    some = torch.randn(6, 5, generator=generator)
    one = -torch.ones(6, 5)
    one[2, 3] = 0.7
    return [(some,), (-torch.ones(6, 5),), (one,), (torch.ones(6, 5),), (torch.randn(6, 5, generator=generator),)]


class CountUnlessClose(nn.Module):
    """How many values a mask keeps, as a tensor, when two inputs differ (a 0-d tensor plus
    a size: `add.Tensor` of a SymInt, which stayed in the host before)."""

    def forward(self, x, y):
        if torch.allclose(x, y, atol=1e-3):
            out = x.sum()
        else:
            vals = torch.masked_select(x, x > 0)
            out = vals.sum() * 0 + vals.numel()
        return out


def pair_inputs() -> list:
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(2, 5, generator=generator)
    return [(x, torch.randn(2, 5, generator=generator)), (x, x + 1e-4), (-torch.ones(2, 5), torch.ones(2, 5)),
            (torch.ones(2, 5), -torch.ones(2, 5))]
