"""Lists a loop over a constant range grows, used after the loop the way decoders and
halting networks use them: `np.array(tokens)`, `torch.stack(outs)`, `torch.cat(ps[:-1])`.
The frontend knows their possible lengths when every iteration appends a fixed number of
items before any `break`, and compiles what needs a static shape once per length."""

import numpy as np
import torch
import torch.nn as nn


class FixedLengthTokens(nn.Module):
    """Decode a constant number of steps, then cut at the first end token in numpy."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(3, 4)
        self.cell = nn.GRUCell(4, 4)
        self.out = nn.Linear(4, 3)

    def forward(self, x):
        h = torch.tanh(x)
        tok = torch.ones(1, dtype=torch.long)
        tokens = []
        for _ in range(4):
            h = self.cell(self.embed(tok), h)
            tok = self.out(h).argmax(1)
            tokens.append(tok.squeeze(0))
        ids = np.array(tokens)
        ends = np.where(ids == 0)[0]
        length = int(ends[0]) + 1 if len(ends) > 0 else len(ids)
        return torch.stack(tokens[:length]), length


class TwoListsUntilHalt(nn.Module):
    """PonderNet-style: outputs and halting probabilities of every step until a halt."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.halt = nn.Linear(4, 1)

    def forward(self, x):
        ys, ps = [], []
        h = x
        for _ in range(3):
            h = torch.tanh(self.fc(h))
            p = torch.sigmoid(self.halt(h)).squeeze()
            ys.append(h)
            ps.append(p)
            if p > 0.5:
                break
        earlier = torch.stack(ps[:-1]).sum() if len(ps) > 1 else torch.zeros(())
        return torch.cat(ys), earlier, len(ys)


class AppendAfterBreak(nn.Module):
    """The append comes after the exit test: the first iteration may append nothing."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        outs = [x]
        h = x
        for _ in range(3):
            h = torch.tanh(self.fc(h))
            if h.mean() > 0.1:
                break
            outs.append(h)
        return torch.stack(outs).mean(0), len(outs)


class ConditionalAppend(AppendAfterBreak):
    """Only some iterations append: the length after the loop is not known."""

    def forward(self, x):
        outs = [x]
        h = x
        for _ in range(3):
            h = torch.tanh(self.fc(h))
            if h.sum() > 0:
                outs.append(h)
        return outs[-1], len(outs)


class ArrayThenStatistics(nn.Module):
    """Statements after `np.array(tokens)` compute on the array (its length is the list's):
    each is compiled with the list's possible lengths too, an `if` and a loop among them."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        tokens = []
        for _ in range(3):
            x = torch.tanh(self.fc(x))
            tokens.append(x.argmax())
            if x.mean() < 0.0:
                break
        ids = np.array(tokens)
        x = x * (1.0 + 0.1 * float(ids.sum()))
        hits = np.where(ids == 0)[0]
        if len(hits) > 0:
            x = x + 1.0
        for h in hits:
            x = x * 0.5 + 0.01 * h
        return x, len(tokens)


class TokensThenLiveRows(nn.Module):
    """A greedy decoder that may stop early, its tokens as a numpy array, then the rows of the
    state that pass a test (`x[mask]`, a size from the data) and an exit test right after
    them: the statements before the `if` are compiled once per token count, the test with
    them."""

    def __init__(self):
        super(TokensThenLiveRows, self).__init__()
        self.step = nn.Linear(4, 4)
        self.threshold = 0.9

    def forward(self, x):
        toks = []
        for _ in range(3):
            x = torch.tanh(self.step(x))
            toks.append(x.argmax())
            if x.max() > self.threshold:
                break
        ids = np.array(toks)
        ends = np.where(ids == 0)[0]
        x = x * (1.0 + 0.1 * len(ends))
        rows = torch.cat([x, x * 0.5, torch.tanh(x)])
        picked = rows[rows.sum(1) > 0]
        x = x + 0.1 * picked.sum(0, keepdim=True)
        if x.sum() > 0.0:
            x = x * 2
        return x, len(toks)
