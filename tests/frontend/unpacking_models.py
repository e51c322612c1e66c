"""Starred unpacking and module structure the way published code writes them: a
Transformer's `enc_output, *_ = self.encoder(src, mask)`, `first, *rest = xs`, `*init, last
= xs`, a call of `f(*args)`; nanoGPT's weight tying (`self.transformer.wte.weight =
self.lm_head.weight`) and submodules that are None (`self.add_module('scene', None)`,
`self.proj = None` tested in forward)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, src, mask):
        h = torch.tanh(self.fc(src)) * mask.unsqueeze(-1)
        return h, h.sum(-1), [h.mean()]


class StarredEncoderOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.out = nn.Linear(8, 3)

    def forward(self, src, mask):
        enc_output, *_ = self.encoder(src, mask)
        if enc_output.mean() > 0:
            enc_output = enc_output * 2
        return self.out(enc_output)


class HeadAndTail(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(2, 2)

    def forward(self, x):
        xs = x.chunk(4, dim=1)
        first, *rest = xs
        *init, last = xs
        a, *middle, b = [self.fc(t) for t in xs]
        if first.sum() > last.sum():
            first = first * 2
        return first + last, torch.cat(rest, 1), torch.stack(init).sum(0), a - b, len(middle), middle[0]


def combine(a, b, scale):
    return a * scale + b


class StarredCall(nn.Module):
    def forward(self, x):
        args = (x, x + 1, 2.0)
        y = combine(*args)
        if y.sum() > 0:
            y = y - 1
        return y, max(*x.shape)


class TiedWeights(nn.Module):
    """nanoGPT: one matrix embeds the tokens and maps the last state to logits."""

    def __init__(self, vocab=12, width=8):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(vocab, width), ln_f=nn.LayerNorm(width)))
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # https://paperswithcode.com/method/weight-tying

    def forward(self, idx):
        tok_emb = self.transformer.wte(idx)
        x = self.transformer.ln_f(tok_emb)
        if tok_emb.mean() > 0:  # (not x.sum(): a layer norm's rows sum to 0 up to rounding)
            x = x * 0.5
        return self.lm_head(x[:, [-1], :])


class NoneSubmodules(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.add_module('scene', None)
        self.proj = None

    def forward(self, x):
        h = F.relu(self.fc(x))
        if self.proj is not None:
            h = self.proj(h)
        if self.scene is not None:
            h = self.scene(h)
        if h.sum() > 1:
            h = h / 2
        return h


def inputs_8():
    torch.manual_seed(2)
    return [(torch.randn(2, 8),), (torch.randn(2, 8) * 3,), (-torch.rand(2, 8),)]


def encoder_inputs():
    torch.manual_seed(3)
    return [(torch.randn(2, 8), torch.ones(2)), (-torch.rand(2, 8), torch.tensor([1.0, 0.0]))]


def token_inputs():
    return [(torch.tensor([[1, 5, 3]]),), (torch.tensor([[0, 11, 2]]),), (torch.tensor([[7, 7, 7]]),)]


class ComplexPhase(nn.Module):
    """A complex64 tensor kept from call to call (a rotating phase): no host IR type."""

    def __init__(self):
        super().__init__()
        self.phase = torch.ones(4, dtype=torch.complex64)

    def forward(self, x):
        self.phase = self.phase * 1j  # line marker: complex-phase
        return x * self.phase.real


class ComplexPhaseInPlace(ComplexPhase):
    def forward(self, x):
        self.phase.mul_(1j)  # line marker: complex-phase-in-place
        return x * self.phase.real
