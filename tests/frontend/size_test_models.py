"""Tests of sizes that change from one iteration to the next, as published code writes them:
a context cropped to a window (minGPT / nanoGPT `generate`), a queue that drops its oldest
entry, a branch on the parity of a growing length, a `while` on a length and a test of the
final one, a window read from a sequence that shrinks. Each size test is a runtime
decision; folded from the example (at compile time, in export, or in shape inference) it is
a silent wrong answer once the loop count crosses the bound."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class CharGPT(nn.Module):
    """minGPT's `generate`: the context is cropped to `block_size` once it grows past it, and
    an embedding reads the cropped positions (past the bound, an uncropped context reads
    positions the table does not have)."""

    def __init__(self, vocab_size=11, block_size=4, n_embd=8):
        super(CharGPT, self).__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Parameter(torch.randn(1, block_size, n_embd))
        self.head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx):
        b, t = idx.size()
        x = self.tok_emb(idx) + self.pos_emb[:, :t, :]
        return self.head(torch.tanh(x))

    @torch.no_grad()
    def generate(self, idx, max_new_tokens: int):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.block_size else idx[:, -self.block_size:]
            logits = self(idx_cond)
            logits = logits[:, -1, :]
            idx_next = torch.argmax(logits, dim=-1, keepdim=True)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


class SlidingQueue(nn.Module):
    """A queue of recent states that drops its oldest entry once it holds more than
    `max_len` (a streaming memory)."""

    def __init__(self, max_len=3):
        super().__init__()
        self.max_len = max_len
        self.update = nn.Linear(4, 4)

    def forward(self, x, steps: int):
        memory = x.unsqueeze(1)
        for _ in range(steps):
            new = torch.tanh(self.update(memory[:, -1]))
            memory = torch.cat([memory, new.unsqueeze(1)], dim=1)
            if memory.shape[1] > self.max_len:
                memory = memory[:, 1:]
        return memory.mean(1), memory.shape[1]


class ParityMixer(nn.Module):
    """A branch on the parity of a growing length (`x.shape[1] % 2`)."""

    def forward(self, x, steps: int):
        h = Variable(x)
        for _ in range(steps):
            if h.shape[1] % 2 == 0:
                h = torch.cat((h, h[:, :1] * 2), 1)
            else:
                h = torch.cat((h, -h.data[:, -1:]), 1)
        return h


class GrowToLimit(nn.Module):
    """`while x.size(1) < limit`, then a test of the final size."""

    def forward(self, x, limit: int):
        while x.size(1) < limit:
            x = torch.cat((x, F.relu(x[:, -1:]) + 1), 1)
        if x.size(1) > 5:
            return x[:, :5]
        return x


class ShrinkingWindow(nn.Module):
    """A window of the last four columns of a sequence that loses a column per step: from a
    wide example, export takes `h[:, -4:]` for 4 columns always."""

    def forward(self, x, steps: int):
        h = x
        total = x[:, :1] * 0
        for _ in range(steps):
            window = h[:, -4:]
            total = total + window.sum(1, keepdim=True) * window.size(1)
            h = h[:, 1:]
        return total, h


class NegativeRemainder(nn.Module):
    """Python's `%` of ints below 0 (`(n - 5) % 3` is 1 for n = 1; C's fmod gives -1)."""

    def forward(self, x, steps: int):
        for _ in range(steps):
            x = torch.cat((x, x[:, -1:] + 1), 1)
        phase = (x.size(1) - 5) % 3
        if phase == 1:
            return x * 2
        return x


class LastColumns(nn.Module):
    """The last 4 columns of a sequence that starts 4 wide and grows: 4 wide on every call,
    but a backend tracing the sub-DNN at 3 columns found 3 (its export failed)."""

    def forward(self, x, steps: int):
        seq = x
        for _ in range(steps):
            seq = torch.cat((seq, torch.tanh(seq[:, -1:] + 0.5)), 1)
        return x + 0.1 * seq[:, -4:]


class LastTokenLogits(nn.Module):
    """nanoGPT's `self.lm_head(x[:, [-1], :])` in a greedy loop: a list index from the end of
    a length that grows (TVM's gather read index -1 of a runtime dim out of bounds)."""

    def __init__(self, vocab_size=9, n_embd=8):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx, max_new_tokens: int):
        for _ in range(max_new_tokens):
            x = self.wte(idx)
            logits = self.lm_head(x[:, [-1], :])
            idx = torch.cat((idx, logits[:, -1, :].argmax(dim=-1, keepdim=True)), dim=1)
        return idx


def crop_inputs():
    idx = torch.tensor([[1, 2]])
    return [(idx, n) for n in (1, 0, 2, 3, 4, 5, 7)]


def row_inputs(width: int, counts):
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(1, width, generator=generator), n) for n in counts]


def queue_inputs():
    generator = torch.Generator().manual_seed(2)
    return [(torch.randn(2, 4, generator=generator), n) for n in (1, 0, 2, 3, 4, 6)]
