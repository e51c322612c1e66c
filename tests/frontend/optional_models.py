"""Variables that are None on some paths and a tensor or number on others, the way research
code has them: an auxiliary output computed only on some paths (`return logits, aux`), a
halting probability reported only after the first step, a cache tested with `is None`."""

import torch
import torch.nn as nn


class AuxOnSomePaths(nn.Module):
    """`aux = None`, assigned by one branch, returned: None where the branch did not run."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        aux = None
        h = torch.tanh(self.fc(x))
        if h.sum() > 0:
            aux = h * 2
        return h, aux


class TestedBeforeUse(nn.Module):
    """`if memory is not None:` reads it; `is None` is returned as a bool."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        memory = None
        if x.mean() > 0:
            memory = torch.sigmoid(self.fc(x))
        if memory is not None:
            x = x + memory
        else:
            x = x * 0.5
        return x, memory is None


class EarlierProbabilities(nn.Module):
    """PonderNet: the halting probabilities before the last step, None after one step."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.halt = nn.Linear(4, 1)

    def forward(self, x):
        ps = []
        h = x
        for _ in range(3):
            h = torch.tanh(self.fc(h))
            ps.append(torch.sigmoid(self.halt(h)).squeeze())
            if ps[-1] > 0.5:
                break
        earlier = torch.stack(ps[:-1]) if len(ps) > 1 else None
        return h, (earlier, len(ps))


class CountOrNone(nn.Module):
    """A Python int on one path, None on the other, in a tuple."""

    def forward(self, x):
        k = None
        if x.sum() > 0:
            k = int(x.argmax())
        return x * 2, (k,)


class TestedInAConditionalExpression(nn.Module):
    """`aux.sum() if aux is not None else x.sum()`: each branch knows which it is."""

    def forward(self, x):
        aux = None
        if x.sum() > 0:
            aux = x * 2
        return aux.sum() if aux is not None else x.sum()


class StackedWithoutTest(nn.Module):
    def forward(self, x):
        aux = None
        if x.sum() > 0:
            aux = x * 2
        return torch.stack([aux, x])  # line marker: stacked


class UsedWithoutTest(nn.Module):
    def forward(self, x):
        p = None
        if x.sum() > 0:
            p = x * 2
        return x + p  # line marker: used-without-test


class CarriedByRuntimeLoop(nn.Module):
    def forward(self, x):
        p = None
        if x.sum() > 0:
            p = x * 2
        while x.abs().sum() > 1:  # line marker: carried
            x = x * 0.5
            p = x
        return x, p
