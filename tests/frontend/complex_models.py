"""Complex tensors as published code computes with them: the rotary embeddings of Meta's
reference Llama (`llama/model.py`: `precompute_freqs_cis`, `reshape_for_broadcast`,
`apply_rotary_emb`, an attention module taking `start_pos` and `freqs_cis`, the
Transformer's `self.freqs_cis[start_pos : start_pos + seqlen]`), small enough to test.
DyCL computes a complex tensor as its real view (dycl/frontend/complex_values.py)."""

from __future__ import annotations

import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)  # type: ignore
    freqs = torch.outer(t, freqs).float()  # type: ignore
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)  # complex64
    return freqs_cis


def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor):
    ndim = x.ndim
    assert 0 <= 1 < ndim
    assert freqs_cis.shape == (x.shape[1], x.shape[-1])
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq: torch.Tensor, xk: torch.Tensor, freqs_cis: torch.Tensor):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


DIM, HEADS, MAX_SEQ_LEN = 16, 2, 32


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.n_heads = HEADS
        self.head_dim = DIM // HEADS
        self.wq = nn.Linear(DIM, HEADS * self.head_dim, bias=False)
        self.wk = nn.Linear(DIM, HEADS * self.head_dim, bias=False)
        self.wv = nn.Linear(DIM, HEADS * self.head_dim, bias=False)
        self.wo = nn.Linear(HEADS * self.head_dim, DIM, bias=False)

    def forward(self, x: torch.Tensor, start_pos: int, freqs_cis: torch.Tensor, mask: Optional[torch.Tensor]):
        bsz, seqlen, _ = x.shape
        xq, xk, xv = self.wq(x), self.wk(x), self.wv(x)
        xq = xq.view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = xk.view(bsz, seqlen, self.n_heads, self.head_dim)
        xv = xv.view(bsz, seqlen, self.n_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
        xq, keys, values = xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        if mask is not None:
            scores = scores + mask  # (bs, n_local_heads, seqlen, cache_len + seqlen)
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        output = torch.matmul(scores, values)  # (bs, n_local_heads, seqlen, head_dim)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)


class RotaryBlock(nn.Module):
    """The Transformer's part of Llama: `self.freqs_cis` a plain attribute, sliced at the
    runtime `start_pos`, and a causal mask for a prompt of more than one token."""

    def __init__(self):
        super().__init__()
        self.attention = Attention()
        self.freqs_cis = precompute_freqs_cis(DIM // HEADS, MAX_SEQ_LEN * 2)

    def forward(self, h: torch.Tensor, start_pos: int):
        _bsz, seqlen, _ = h.shape
        freqs_cis = self.freqs_cis[start_pos : start_pos + seqlen]
        mask = None
        if seqlen > 1:
            mask = torch.full((seqlen, seqlen), float("-inf"), device=h.device)
            mask = torch.triu(mask, diagonal=1).type_as(h)
        return h + self.attention(h, start_pos, freqs_cis, mask)


class RotaryBufferBlock(RotaryBlock):
    """The same with `freqs_cis` a registered (non-persistent) buffer."""

    def __init__(self):
        super().__init__()
        del self.freqs_cis
        self.register_buffer("freqs_cis", precompute_freqs_cis(DIM // HEADS, MAX_SEQ_LEN * 2), persistent=False)


class RotaryDecoder(nn.Module):
    """A decode loop: one token a step, `start_pos` advancing, for a runtime number of steps."""

    def __init__(self):
        super().__init__()
        self.block = RotaryBlock()
        self.head = nn.Linear(DIM, DIM)

    def forward(self, h: torch.Tensor, start_pos: int, steps: int):
        tok = h[:, -1:, :]
        outputs = []
        for i in range(steps):
            tok = torch.tanh(self.head(self.block(tok, start_pos + i)))
            outputs.append(tok)
        return torch.cat(outputs, dim=1)


def block_inputs():
    torch.manual_seed(1)
    return [(torch.randn(1, 3, DIM), start) for start in (2, 0, 5, 13, 61)]


def decoder_inputs():
    torch.manual_seed(2)
    return [(torch.randn(2, 1, DIM), start, steps) for start, steps in ((3, 4), (0, 2), (9, 5), (20, 1), (30, 3))]


class ComplexOut(nn.Module):
    """Returns a complex tensor (refused: a model output is real)."""

    def forward(self, x):
        return torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2)) * 2


class ComplexIn(nn.Module):
    """Takes a complex tensor (refused: a model input is real)."""

    def forward(self, z):
        return torch.view_as_real(z * z)


class ComplexExp(nn.Module):
    """`torch.exp` of a complex tensor, which DyCL does not lower."""

    def __init__(self):
        super().__init__()
        self.freqs_cis = precompute_freqs_cis(8, 8)

    def forward(self, x):
        y = x * 2
        z = torch.exp(torch.view_as_complex(y.reshape(*y.shape[:-1], -1, 2)) * self.freqs_cis[:3])
        return torch.view_as_real(z).flatten(-2)


class ComplexArithmetic(nn.Module):
    """Complex +, -, /, conj, abs, real, imag and polar beside real tensors and numbers."""

    def __init__(self):
        super().__init__()
        self.freqs_cis = precompute_freqs_cis(8, 8)

    def forward(self, x, k: int):
        z = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
        w = self.freqs_cis[k]
        a = (z + w) * z.conj() - 0.5 * w
        b = a / (w + 2) + x[..., :4] - 1
        m = torch.polar(b.abs(), torch.angle(b) + 0.25)
        return torch.cat([m.real, m.imag, torch.view_as_real(b / 3).flatten(-2)], dim=-1)


def arithmetic_inputs():
    torch.manual_seed(3)
    return [(torch.randn(2, 8), k) for k in (1, 0, 4, 6)]
