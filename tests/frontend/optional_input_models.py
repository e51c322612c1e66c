"""Forward parameters that may be None, the way published code writes them: nanoGPT's
sampling step (`top_k: Optional[int] = None`, then `if top_k is not None:` crops the logits
to the top k), an attention whose `mask=None` is tested before `masked_fill`, and a mask
handed on to a module without a test."""

import math
from typing import Optional

import torch
import torch.nn as nn
import torch.nn.functional as F


class TopKSampling(nn.Module):
    """nanoGPT's `generate`, one step: the logits of the last position, scaled by the
    temperature, cropped to the top k when `top_k` is given, as probabilities."""

    def __init__(self, vocab: int = 16, width: int = 8):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.lm_head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx, temperature: float = 1.0, top_k: Optional[int] = None):
        logits = self.lm_head(torch.tanh(self.wte(idx)))
        logits = logits[:, -1, :] / temperature
        # optionally crop the logits to only the top k options
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float('Inf')
        probs = F.softmax(logits, dim=-1)
        return probs


class UnannotatedTopK(TopKSampling):
    """The same with `top_k=None` and no annotation (nanoGPT's own signature)."""

    def forward(self, idx, temperature=1.0, top_k=None):
        logits = self.lm_head(torch.tanh(self.wte(idx)))
        logits = logits[:, -1, :] / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float('Inf')
        return F.softmax(logits, dim=-1)


class MaskedAttention(nn.Module):
    """One attention head whose mask is optional (minGPT, "Attention is all you need" code)."""

    def __init__(self, width: int = 8):
        super().__init__()
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x, mask: Optional[torch.Tensor] = None):
        q, k, v = self.qkv(x).split(x.size(-1), dim=-1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if mask is not None:
            att = att.masked_fill(mask == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        return self.proj(att @ v)


class MaskHandedOn(nn.Module):
    """`mask=None` handed to a module untested: compiled for the example's kind only."""

    def __init__(self, width: int = 8):
        super().__init__()
        self.attn = nn.MultiheadAttention(width, 2, batch_first=True)

    def forward(self, x, mask=None):
        out, _ = self.attn(x, x, x, attn_mask=mask, need_weights=False)
        return out


def sampling_inputs():
    idx = torch.tensor([[1, 5, 3, 7], [2, 2, 9, 0]])
    return [(idx, 0.8, None), (idx, 0.8, 3), (idx, 1.0, 1), (idx, 1.5, 40), (idx, 0.8, None)]


def attention_inputs():
    torch.manual_seed(1)
    x = torch.randn(2, 5, 8)
    causal = torch.tril(torch.ones(5, 5))
    return [(x, causal), (x, None), (x * 2, torch.ones(5, 5)), (x * 2, None)]


class TestedAndReadUntested(nn.Module):
    """`top_k` tested with `is not None` and also read untested (`top_k or 1`): compiled for
    the example's kind only, where the test is known (found by the issue-34 fuzz campaign:
    the test was refused as "`is not` between runtime values", hiding the first refusal)."""

    def forward(self, x, top_k: Optional[int] = None):
        if top_k is not None:
            x = x * 2
        return x * (top_k or 1)
