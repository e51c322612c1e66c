"""Loops over numpy arrays and tensors computed at run time, as inference scripts write them."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class RouterStableOrder(nn.Module):
    """Experts run in the order of their gate (`np.argsort(-scores, kind='stable')`) until
    the gate mass passes a threshold."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(4, 3)
        self.experts = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        gate = F.softmax(self.gate(x), dim=1)
        scores = gate.detach().cpu().numpy()[0]
        order = np.argsort(-scores, kind="stable")
        total = 0.0
        out = 0
        for k in order:
            out = out + self.experts[k](x) * gate[0, k]
            total += scores[k]
            if total > 0.7:
                break
        return out, float(total), torch.from_numpy(order)


class CutAtEnd(nn.Module):
    """sample.py post-processing: iterate the numpy ids, stop at the end token."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 6)

    def forward(self, x):
        ids = (self.fc(x) * 2).round().clamp(0, 3).long()[0]
        words = []
        for word_id in ids.cpu().numpy():
            words.append(int(word_id))
            if word_id == 1:
                break
        rows = 0.0
        for row in torch.tanh(self.fc(x).reshape(2, 3)):
            rows = rows + float(row.sum())
        return words, rows


class DefaultSortOrder(nn.Module):
    """`np.argsort` with numpy's default sort on values with ties (rounded): numpy's own order
    of equal items, which the host gets by running numpy itself."""

    def forward(self, x):
        keys = (x * 2).round().detach().numpy()[0]
        order = np.argsort(keys)
        return x * 2, torch.from_numpy(order), x[0, order[0]] + x[0, order[-1]]


class ChangeRowsInPlace(nn.Module):
    def forward(self, x):
        y = x * 2
        for row in y:
            row.mul_(0.5)  # REFUSED
        return y


class WhereFirstHit(nn.Module):
    """`hits = np.where(confs > t)[0]`, then the first hit or the last exit."""

    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList([nn.Linear(4, 3) for _ in range(3)])

    def forward(self, x):
        outs = [head(x) for head in self.heads]
        confs = np.array([F.softmax(o, 1).max().detach() for o in outs])
        hits = np.where(confs > 0.6)[0]
        k = hits[0] if len(hits) > 0 else len(outs) - 1
        return outs[k], int(k), len(hits)


class WhereLayerList(nn.Module):
    """A policy lists the layers to run (`keep, = np.where(probs > 0.5)`), then a loop."""

    def __init__(self):
        super().__init__()
        self.policy = nn.Linear(4, 3)
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        probs = torch.sigmoid(self.policy(x)).detach().numpy()[0]
        keep, = np.where(probs > 0.5)
        for i in keep:
            x = x + torch.tanh(self.blocks[i](x))
        return x, [int(i) for i in keep]


class WhereArithmetic(nn.Module):
    def forward(self, x):
        hits = np.where(x.detach().numpy()[0] > 0)[0]
        return x, len(hits + 1)  # REFUSED


class WhereTruth(nn.Module):
    def forward(self, x):
        hits = np.where(x.detach().numpy()[0] > 0)[0]
        if hits:  # REFUSED
            x = x * 2
        return x
