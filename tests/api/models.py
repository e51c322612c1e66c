"""Small dynamic networks, one per kind of control flow DyCL must compile, with inputs
that together take every path."""

from __future__ import annotations

import torch
from torch import nn


class EarlyExit(nn.Module):
    """Exits after the first stage when confident; returns the logits and the exit index."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.head1 = nn.Linear(8, 10)
        self.block = nn.Conv2d(8, 8, 3, padding=1)
        self.head2 = nn.Linear(8, 10)

    def forward(self, x):
        h = torch.relu(self.stem(x))
        p = self.head1(h.mean(dim=(2, 3)))
        if torch.softmax(p, -1).max() > 0.3:
            return p, 0
        h = torch.relu(self.block(h))
        return self.head2(h.mean(dim=(2, 3))), 1


class SkipGate(nn.Module):
    """Residual blocks, each run or skipped by a gate on the current features."""

    def __init__(self, depth: int = 2, width: int = 8):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.gates = nn.ModuleList(nn.Linear(width, 1) for _ in range(depth))

    def forward(self, x):
        for block, gate in zip(self.blocks, self.gates):
            if gate(x).sum() > 0:
                x = x + torch.relu(block(x))
        return x


class GreedyDecoder(nn.Module):
    """Greedy decoding with an end token: a data-dependent number of steps."""

    def __init__(self, vocab: int = 12, hidden: int = 16, max_len: int = 6, eos: int = 0):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.cell = nn.GRUCell(hidden, hidden)
        self.out = nn.Linear(hidden, vocab)
        self.max_len = max_len
        self.eos = eos

    def forward(self, h, token):
        tokens = []
        for _ in range(self.max_len):
            h = self.cell(self.embed(token), h)
            token = self.out(h).argmax(dim=-1)
            if token.item() == self.eos:
                break
            tokens.append(token)
        return h, tokens


def seeded(cls, seed: int = 0, **kwargs) -> nn.Module:
    torch.manual_seed(seed)
    return cls(**kwargs).eval()


def skip_gate() -> nn.Module:
    """A factory for dycl-compile: the same weights as the tests' SkipGate."""
    return seeded(SkipGate)


def early_exit_inputs():
    gen = torch.Generator().manual_seed(1)
    return [(torch.randn(1, 3, 8, 8, generator=gen) * s,) for s in (0.01, 1.0, 10.0, 100.0)]


def skip_gate_inputs():
    gen = torch.Generator().manual_seed(2)
    return [(torch.randn(1, 8, generator=gen) * s,) for s in (0.1, 1.0, 3.0, 10.0, -10.0, 30.0)]


def decoder_inputs():
    """Seven inputs whose decodes stop after 6, 2, 1, 0, 3, 5 and 4 tokens (for seeded(GreedyDecoder))."""
    gen = torch.Generator().manual_seed(3)
    chosen = {0, 5, 7, 13, 18, 155, 258}
    picked = []
    for i in range(259):
        h = torch.randn(1, 16, generator=gen) * (0.1, 1.0, 3.0, 10.0)[i % 4]
        if i in chosen:
            picked.append((h, torch.tensor([i % 12])))
    return picked


class ScalarInputs(nn.Module):
    """Python int and float inputs: a host condition on the int, the float fed to a sub-DNN."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x, n: int, scale: float):
        y = self.fc(x)
        if n > 2:
            y = torch.relu(y) * scale
        return y, n + 1
