"""`assert` statements written as published code writes them: nanoGPT's sequence-length
check in `forward(self, idx, targets=None)` (run in a greedy decoding loop, where the length
is a runtime size), shape checks in helper methods, checks of a Python int argument and of
a tensor's values, `isinstance` checks, and checks of the configuration."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class GPTConfig:
    block_size: int = 8
    vocab_size: int = 11
    n_layer: int = 1
    n_head: int = 2
    n_embd: int = 8


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)
        self.n_head = config.n_head
        self.n_embd = config.n_embd

    def forward(self, x):
        B, T, C = x.size()  # batch size, sequence length, embedding dimensionality (n_embd)
        assert C == self.n_embd, f"expected {self.n_embd} channels, got {C}"
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.ones(T, T).tril().view(1, 1, T, T)
        att = att.masked_fill(mask == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = nn.Sequential(nn.Linear(config.n_embd, 4 * config.n_embd), nn.GELU(), nn.Linear(4 * config.n_embd, config.n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class TinyGPT(nn.Module):
    """nanoGPT's `GPT.forward`: the length check on `idx.size()`, then the embeddings."""

    def __init__(self, config=None):
        super().__init__()
        config = config or GPTConfig()
        assert config.vocab_size is not None
        assert config.block_size is not None
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=nn.LayerNorm(config.n_embd),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.config.block_size, f"Cannot forward sequence of length {t}, block size is only {self.config.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=device)  # shape (t)
        tok_emb = self.transformer.wte(idx)  # token embeddings of shape (b, t, n_embd)
        pos_emb = self.transformer.wpe(pos)  # position embeddings of shape (t, n_embd)
        x = tok_emb + pos_emb
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        else:
            logits = self.lm_head(x[:, [-1], :])  # only the last position
            loss = None
        return logits, loss


class GreedyGPT(nn.Module):
    """Greedy decoding without nanoGPT's crop to the block size: the sequence grows by one
    token a step, so `t` is a runtime size, and a decode longer than the block size fails
    the model's own assert, as in eager."""

    def __init__(self):
        super().__init__()
        self.gpt = TinyGPT()

    def forward(self, idx, max_new_tokens: int):
        for _ in range(max_new_tokens):
            logits, _ = self.gpt(idx)
            idx_next = logits[:, -1, :].argmax(dim=-1, keepdim=True)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


class MinGPT(nn.Module):
    """minGPT's `GPT.forward`: a learned position table sliced to the length, after the
    length check."""

    def __init__(self, config=None):
        super().__init__()
        config = config or GPTConfig()
        self.tok_emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.pos_emb = nn.Parameter(0.02 * torch.randn(1, config.block_size, config.n_embd))
        self.blocks = nn.Sequential(*[Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.block_size = config.block_size

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.block_size, "Cannot forward, model block size is exhausted."
        token_embeddings = self.tok_emb(idx)  # each index maps to a (learnable) vector
        position_embeddings = self.pos_emb[:, :t, :]  # each position maps to a (learnable) vector
        x = token_embeddings + position_embeddings
        x = self.blocks(x)
        x = self.ln_f(x)
        logits = self.head(x)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


class GreedyMinGPT(GreedyGPT):
    def __init__(self):
        super().__init__()
        self.gpt = MinGPT()


def gpt_inputs():
    """(idx, targets): the sequence within the block size."""
    torch.manual_seed(1)
    idx = torch.randint(0, 11, (2, 6))
    return [(idx,), (idx, torch.randint(0, 11, (2, 6)))]


def greedy_inputs():
    """Decodes that stay within the block size (4 + 4 tokens: the last step sees 7) ..."""
    torch.manual_seed(2)
    return [(torch.randint(0, 11, (1, 4)), n) for n in (2, 0, 4)]


def greedy_failing_inputs():
    """... and ones that pass it (the step at length 9 fails)."""
    torch.manual_seed(2)
    return [(torch.randint(0, 11, (1, 4)), n) for n in (6, 9)]


class HeadSplitter(nn.Module):
    """Asserts in helper methods: a shape check, and divisibility by a runtime number of heads."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(12, 12)

    def _check_input(self, x):
        assert x.dim() == 3, f"expected (batch, time, channels), got {x.dim()} dims"
        assert isinstance(x, torch.Tensor)
        return x

    def split_heads(self, x, n_head):
        B, T, C = x.size()
        assert C % n_head == 0, f"{C} channels do not split into {n_head} heads"
        return x.view(B, T, n_head, C // n_head).transpose(1, 2)

    def forward(self, x, n_head: int):
        x = self._check_input(x)
        y = self.proj(x)
        heads = self.split_heads(y, n_head)
        return heads.sum(1)


def head_inputs():
    torch.manual_seed(3)
    x = torch.randn(2, 5, 12)
    return [(x, n) for n in (3, 4, 6, 2)]


def head_failing_inputs():
    torch.manual_seed(3)
    return [(torch.randn(2, 5, 12), n) for n in (5, 7)]


class StepCounter(nn.Module):
    """Asserts on a runtime Python int: a positive count within a bound, a message with a
    format spec, and one with no message."""

    def __init__(self, max_steps=5):
        super().__init__()
        self.max_steps = max_steps
        self.cell = nn.GRUCell(4, 4)

    def forward(self, x, steps: int):
        assert steps > 0
        assert steps <= self.max_steps, "steps={:d} exceeds max_steps={}".format(steps, self.max_steps)
        h = torch.zeros(x.size(0), 4)
        for _ in range(steps):
            h = self.cell(x, h)
        scale = steps / self.max_steps
        assert 0.0 < scale <= 1.0, f"scale {scale:.3f} out of range"
        return h * scale


def step_inputs():
    torch.manual_seed(4)
    x = torch.randn(3, 4)
    return [(x, n) for n in (1, 3, 5)]


def step_failing_inputs():
    torch.manual_seed(4)
    x = torch.randn(3, 4)
    return [(x, 0), (x, 6), (x, -2)]


class ValueChecks(nn.Module):
    """Asserts on tensor values: probabilities in range, no NaN, a message formatting a
    value computed from the tensor (only when the check fails, as eager)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, probs, x):
        assert (probs >= 0).all(), "probabilities must be non-negative"
        assert torch.all(probs <= 1), f"probabilities must be at most 1, got max {probs.max().item():.4f}"
        logits = self.fc(x)
        assert not torch.isnan(logits).any(), "NaN logits"
        return logits.softmax(-1) * probs


def value_inputs():
    torch.manual_seed(5)
    return [(torch.rand(2, 3), torch.randn(2, 6)) for _ in range(3)]


def value_failing_inputs():
    torch.manual_seed(5)
    negative = torch.rand(2, 3)
    negative[1, 2] = -0.5
    large = torch.rand(2, 3)
    large[0, 1] = 1.25
    nan = torch.randn(2, 6)
    nan[0, 0] = float("nan")
    return [(negative, torch.randn(2, 6)), (large, torch.randn(2, 6)), (torch.rand(2, 3), nan)]


class ProvenChecks(nn.Module):
    """Asserts that hold for every input of the compiled shapes: a fixed size, the
    configuration, `isinstance`, the dtype."""

    def __init__(self):
        super().__init__()
        self.n_embd = 8
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        assert x.size(0) == 1
        assert x.shape[-1] == self.n_embd, "wrong width"
        assert isinstance(x, torch.Tensor) and x.dtype == torch.float32
        assert self.n_embd % 2 == 0, f"n_embd={self.n_embd} must be even"
        y = self.fc(x)
        assert y.dim() == 2
        return y.relu()


class Unchecked(ProvenChecks):
    """ProvenChecks without its asserts."""

    def forward(self, x):
        y = self.fc(x)
        return y.relu()


class ConfigFails(nn.Module):
    """An assert that fails on every call: the configuration contradicts it."""

    def __init__(self):
        super().__init__()
        self.n_embd, self.n_head = 10, 4

    def forward(self, x):
        assert self.n_embd % self.n_head == 0, f"n_embd {self.n_embd} is not divisible by n_head {self.n_head}"
        return x * 2


class UnreachableBranch(nn.Module):
    """`assert False, ...` as the `raise` of a branch: fails where a runtime `if` goes."""

    def forward(self, x, mode: int):
        if mode == 0:
            y = x.relu()
        elif mode == 1:
            y = x.sigmoid()
        else:
            assert False, f"unknown mode {mode}"
        return y


class TensorMessage(nn.Module):
    """A message part that is a tensor: its text is torch's repr (refused)."""

    def forward(self, x):
        assert (x > 0).all(), f"not positive: {x}"
        return x.log()
