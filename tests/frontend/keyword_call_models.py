"""Calls written as LLM and Hugging Face code writes them: keyword arguments, defaults,
keyword-only parameters, `*args`/`**kwargs` forwarding, `*xs`/`**d` at the call, and
decorators that wrap `generate`, `forward` or a helper (`@torch.no_grad()`, an
`eval_decorator`, `functools.wraps` wrappers).

CASES: name -> (factory, method, inputs); each input runs the method eagerly and compiled.
REFUSED: name -> (factory, method, example, line marker, words of the message)."""

from __future__ import annotations

import functools
from typing import Optional

import torch
import torch.nn as nn

from dycl.zoo.gpt_decode import logits_to_probs  # gpt-fast's (generate.py)

CASES: dict = {}
REFUSED: dict = {}


# ----- gpt-fast: generate(idx, max_new_tokens, *, temperature, top_k, **sampling_kwargs) --


def sample(logits, temperature: float = 1.0, top_k: Optional[int] = None):
    probs = logits_to_probs(logits[:, -1], temperature, top_k=top_k)
    idx_next = torch.argmax(probs, dim=-1, keepdim=True)  # (greedy: the same token eager and compiled)
    return idx_next, probs


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, mask=None, *, use_cache=False, scale=1.0):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        s = q @ k.transpose(-1, -2) * scale
        if mask is not None:
            s = s.masked_fill(~mask, -1e9)
        out = s.softmax(-1) @ v
        if use_cache:
            out = out + 0.5
        return out


class TinyLM(nn.Module):
    def __init__(self, vocab=16, dim=8, eos=7):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.attn = Attention(dim)
        self.head = nn.Linear(dim, vocab)
        self.eos = eos

    def forward(self, idx, mask=None):
        h = self.emb(idx)
        h = self.attn(h, mask=mask, use_cache=True, scale=0.5)
        return self.head(h)

    def decode_one_token(self, x, **sampling_kwargs):
        logits = self(x)
        return sample(logits, **sampling_kwargs)

    def decode_n_tokens(self, cur_token, num_new_tokens: int, **sampling_kwargs):
        new_tokens = [cur_token]
        for i in range(num_new_tokens):
            next_token, next_prob = self.decode_one_token(cur_token, **sampling_kwargs)
            new_tokens.append(next_token.clone())
            cur_token = torch.cat([cur_token, next_token], dim=1)
            if (next_token == self.eos).all():
                break
        return new_tokens

    @torch.no_grad()
    def generate(self, idx, max_new_tokens: int = 3, *, temperature=1.0, top_k=None, **sampling_kwargs):
        tokens = self.decode_n_tokens(idx, max_new_tokens, temperature=temperature, top_k=4, **sampling_kwargs)
        return torch.cat(tokens, dim=1)


def _tokens(*rows):
    return [(torch.tensor([row]),) for row in rows]


CASES["gpt_fast_generate"] = (TinyLM, "generate", _tokens([1, 2], [5, 7], [0, 9], [3, 3], [12, 4], [8, 1], [6, 10]))


# ----- lucidrains: @eval_decorator, a submodule forwarding *args/**kwargs ------------------


def eval_decorator(fn):
    def inner(self, *args, **kwargs):
        was_training = self.training
        self.eval()
        out = fn(self, *args, **kwargs)
        self.train(was_training)
        return out

    return inner


class Gate(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def step(self, x, *, threshold=0.0, scale=1.0):
        h = self.fc(x)
        if h.sum() > threshold:
            return h * scale
        return -h

    def forward(self, *args, **kwargs):
        return self.step(*args, **kwargs)


class EvalDecorated(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.gate = Gate(dim)
        self.out = nn.Linear(dim, dim)

    @torch.no_grad()
    @eval_decorator
    def generate(self, x, steps=2, *, scale=2.0, **kwargs):
        for _ in range(steps):
            x = self.gate(x, threshold=0.5, scale=scale)
        return self.out(x)


def _vectors(*scales):
    base = torch.randn(1, 4, generator=torch.Generator().manual_seed(0))
    return [(base * s,) for s in scales]


CASES["eval_decorator_generate"] = (EvalDecorated, "generate", _vectors(1.0, -1.0, 3.0, -3.0, 0.2))


# ----- Hugging Face: a forward under several decorators, ending in **kwargs ----------------


def add_start_docstrings(*docstr):
    def docstring_decorator(fn):
        fn.__doc__ = "".join(docstr) + (fn.__doc__ or "")
        return fn

    return docstring_decorator


def can_return_tuple(func):
    @functools.wraps(func)
    def wrapper(self, *args, **kwargs):
        return_dict = kwargs.get("return_dict", True)
        output = func(self, *args, **kwargs)
        if not return_dict:
            output = tuple(output.values())
        return output

    return wrapper


class HFStyle(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.gate = Gate(dim)
        self.out = nn.Linear(dim, dim)

    @add_start_docstrings("The model's forward.")
    @can_return_tuple
    def forward(self, x, attention_mask=None, output_hidden_states=False, **kwargs):
        parts = (x,)
        opts = {"scale": 0.5, "threshold": -0.25}
        h = self.gate(*parts, **opts)
        outputs = {"logits": self.out(h)}
        if output_hidden_states:
            outputs["hidden_states"] = h
        return outputs


CASES["hf_decorated_forward"] = (HFStyle, "forward", _vectors(1.0, -1.0, 3.0, -3.0))


# ----- keyword-only parameters, defaults, positional-only, a functools.wraps helper -------


def traced(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)  # line marker: wrapper-call

    return wrapper


def clip(x, /, bound=2.0, *, floor=None):
    if floor is not None:
        x = torch.clamp(x, min=floor)
    if x.abs().max() > bound:
        return x * (bound / x.abs().max())
    return x


class KeywordHelpers(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    @traced
    def mix(self, x, y=None, *, alpha=0.5, beta=1.0):
        if y is None:
            y = torch.zeros_like(x)
        if x.sum() > 0:
            return alpha * x + beta * y
        return beta * x - alpha * y

    def forward(self, x):
        h = self.fc(x)
        a = self.mix(h, beta=2.0)
        b = self.mix(h, y=a, alpha=0.25)
        c = self.mix(beta=0.5, x=b)
        d = clip(c, floor=-1.0)
        e = clip(d, 0.5)
        return a, b, c, d, e


CASES["keyword_only_and_defaults"] = (KeywordHelpers, "forward", _vectors(1.0, -1.0, 30.0, -30.0, 0.1))


# ----- *args forwarding through plain functions, *xs and **d known at import ---------------


def apply_twice(fn, *args, **kwargs):
    first = fn(*args, **kwargs)
    return fn(first, *args[1:], **kwargs)


def gated_sum(x, y, *rest, weight=1.0):
    total = x + y
    for r in rest:
        total = total + r
    if total.mean() > 0:
        return total * weight
    return total


class StarForwarding(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.fc(x)
        pair = [h, x]
        extra = {"weight": 3.0}
        s = gated_sum(*pair, h * 2, **extra)
        t = apply_twice(gated_sum, s, x, weight=0.5)
        return s, t


CASES["star_forwarding"] = (StarForwarding, "forward", _vectors(1.0, -1.0, 5.0, -5.0))


# ----- refused: binding errors and spreads of unknown length --------------------------------


class _Linear(nn.Module):
    def __init__(self, dim=4):
        super().__init__()
        self.fc = nn.Linear(dim, dim)



class UnexpectedKeyword(_Linear):
    def forward(self, x):
        h = self.fc(x)
        return clip(h, gamma=1.0)  # line marker: unexpected


REFUSED["unexpected_keyword"] = (UnexpectedKeyword, "forward", _vectors(1.0)[0], "unexpected",
                                 "call of `clip`: got an unexpected keyword argument 'gamma'")


class UnexpectedKeywordThroughWrapper(KeywordHelpers):
    """`mix` is wrapped (`traced`): as in Python, the wrapper takes any keyword and the call
    it makes fails, at the wrapper's line."""

    def forward(self, x):
        h = self.fc(x)
        return self.mix(h, gamma=1.0)


REFUSED["unexpected_keyword_through_wrapper"] = (UnexpectedKeywordThroughWrapper, "forward", _vectors(1.0)[0],
                                                 "wrapper-call", "call of `mix`: got an unexpected keyword argument 'gamma'")


class MissingArgument(_Linear):
    def forward(self, x):
        h = self.fc(x)
        return clip(bound=1.0)  # line marker: missing


REFUSED["missing_argument"] = (MissingArgument, "forward", _vectors(1.0)[0], "missing",
                               "call of `clip`: missing a required argument: 'x'")


class TwoValues(KeywordHelpers):
    def forward(self, x):
        h = self.fc(x)
        opts = {"alpha": 0.1}
        return self.mix(h, alpha=0.2, **opts)  # line marker: twice


REFUSED["keyword_given_twice"] = (TwoValues, "forward", _vectors(1.0)[0], "twice",
                                  "got multiple values for keyword argument 'alpha'")


class SpreadOfUnknownLength(_Linear):
    def forward(self, x):
        h = self.fc(x)
        return gated_sum(*torch.unbind(h, 1))  # line marker: spread


REFUSED["spread_of_unknown_length"] = (SpreadOfUnknownLength, "forward", _vectors(1.0)[0], "spread",
                                       "whose length it does not know at import time")


class RequiredKeywordOnlyEntry(_Linear):
    def generate(self, x, *, steps):  # line marker: entry
        for _ in range(steps):
            x = self.fc(x)
        return x


REFUSED["entry_keyword_only_without_default"] = (RequiredKeywordOnlyEntry, "generate", _vectors(1.0)[0], "entry",
                                                 "missing a required argument: 'steps'")
