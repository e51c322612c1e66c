"""Loops whose trip count is known only at run time, written the way research code
writes them: `while <tensor condition>:`, `while True: ... break`, `for i in range(n)` with
a runtime `n`, and `for t in tokens` over a list that grows at run time."""

import numpy as np
import torch
import torch.nn as nn


class Halting(nn.Module):
    """Universal-Transformer style: ponder while any position is still running."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        steps = 0
        while (x.abs() > 0.5).any():
            x = torch.tanh(self.fc(x)) * 0.6
            steps += 1
        return x, steps


class WhileTrueBreak(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        n = 0
        while True:
            x = x * 0.5 + torch.tanh(self.fc(x)) * 0.1
            n += 1
            if x.abs().sum() < 1:
                break
        return x, n


class RangeOfARuntimeInt(nn.Module):
    """`for i in range(k)` with `k` from the data, the index used in tensor code and after
    the loop (Python leaves it at its last value)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        k = int(x.argmax()) + 1
        i = -1
        for i in range(1, k + 1, 2):
            x = torch.tanh(self.fc(x)) + 0.1 * x[:, i % 4].unsqueeze(1)
            if x.sum() > 3:
                break
        return x, i, k


class IterateTokens(nn.Module):
    """A greedy decoder's tokens (a runtime list of ints) read back with `for t in tokens`;
    the second loop appends while iterating, as a list iterator allows (it reads the
    length at every step)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        tokens = []
        for _ in range(4):
            x = torch.tanh(self.fc(x))
            tokens.append(int(x.argmax()))
            if x.sum() > 0.5:
                break
        total = 0
        for t in tokens:
            total += t
            x = x + 0.1 * t
        seen = 0
        for t in tokens:
            seen += 1
            if t == 0 and len(tokens) < 6:
                tokens.append(3)
        return x, total, seen, tokens


class IterateTensors(nn.Module):
    """`for h in hs` over a list of tensors that grows until a `break`."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        hs = []
        for _ in range(3):
            x = torch.tanh(self.fc(x))
            hs.append(x)
            if x.mean() > 0.1:
                break
        acc = torch.zeros_like(x)
        for h in hs:
            acc = acc + h * 0.5
        return acc


class MeanOfExits(nn.Module):
    """SDN-style: the confidences of the exits taken, a list that an unrolled loop with
    `break` leaves 1 to 3 long, reduced with numpy and stacked with torch after the loop;
    the list is read again after the statements compiled once per length."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        confs, outs = [], []
        for block in self.blocks:
            x = torch.tanh(block(x))
            outs.append(x)
            confs.append(x.max().detach().numpy())
            if x.max() > 0.6:
                break
        mean = float(np.mean(confs))
        stacked = torch.stack(outs).mean(0)
        outs.append(stacked)
        return stacked, mean, len(outs), outs[-2]


class DeletePastTheEnd(nn.Module):
    """`del toks[k]` on a runtime list raises IndexError past either end, as in Python (k
    from the data: -2..1, the list 1..4 long)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        toks = []
        for _ in range(4):
            x = torch.tanh(self.fc(x))
            toks.append(int(x.argmax()))
            if x.sum() > 0.5:
                break
        k = int(x.argmin())
        del toks[k - 2]
        return x, toks
