"""A small causal transformer that decodes greedily with a KV cache, written the way gpt-fast
(pytorch-labs/gpt-fast, model.py and generate.py) writes Llama: `KVCache` keeps keys and values
in registered buffers and writes a step's rows through an alias (`k_out = self.k_cache;
k_out[:, :, input_pos] = k_val`); rotary positions and the causal mask are read at
`input_pos`; attention runs over the whole cache, the mask hiding the rows not written yet.

``forward(prompt, max_new_tokens)`` is gpt-fast's `generate`: a prefill of the prompt (1-D
int64, any length), then one-token greedy steps until ``max_new_tokens`` tokens or the end token
(`break`). It returns the new tokens (1-D int64, the end token included when emitted). The cache
outlives the call, as gpt-fast's does; the mask makes every call independent of the rows an
earlier call left. An input's path is ``(prompt length, new tokens, stopped at the end token)``.

4 layers, width 256 (4 heads of 64), vocabulary 512, context 256; seeded weights; the output
layer's gain and the end token's row are calibrated so that seeded prompts stop at different
steps (docs/zoo.md).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from dycl.zoo.calibration import DECISION_MARGIN, CalibrationError, seeded
from dycl.zoo.entry import Inputs, ZooEntry, memoized_build, memoized_inputs


@dataclass
class ModelArgs:
    block_size: int = 256
    vocab_size: int = 512
    n_layer: int = 4
    n_head: int = 4
    dim: int = 256
    intermediate_size: int = 768  # (gpt-fast: find_multiple(int(2 * 4 * dim / 3), 256))
    norm_eps: float = 1e-5
    rope_base: float = 10000

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_head


EOS_ID = 2
MAX_NEW_TOKENS = 24  # the path inputs' budget of new tokens
PROMPT_LENGTHS = (3, 7, 12, 21, 40)  # the candidates' prompt lengths (none is the example's)
EXAMPLE_PROMPT_LENGTH = 5


# --- gpt-fast's model (model.py) --------------------------------------------------------------


class KVCache(nn.Module):
    def __init__(self, max_batch_size, max_seq_length, n_heads, head_dim, dtype=torch.float32):
        super().__init__()
        cache_shape = (max_batch_size, n_heads, max_seq_length, head_dim)
        self.register_buffer("k_cache", torch.zeros(cache_shape, dtype=dtype))
        self.register_buffer("v_cache", torch.zeros(cache_shape, dtype=dtype))

    def update(self, input_pos, k_val, v_val):
        # input_pos: [S], k_val: [B, H, S, D]
        assert input_pos.shape[0] == k_val.shape[2]

        k_out = self.k_cache
        v_out = self.v_cache
        k_out[:, :, input_pos] = k_val
        v_out[:, :, input_pos] = v_val

        return k_out, v_out


class Transformer(nn.Module):
    def __init__(self, config: ModelArgs) -> None:
        super().__init__()
        self.config = config
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.dim)
        self.layers = nn.ModuleList(TransformerBlock(config) for _ in range(config.n_layer))
        self.norm = RMSNorm(config.dim, eps=config.norm_eps)
        self.output = nn.Linear(config.dim, config.vocab_size, bias=False)
        self.max_batch_size = -1
        self.max_seq_length = -1

    def setup_caches(self, max_batch_size, max_seq_length):
        self.max_seq_length = max_seq_length
        self.max_batch_size = max_batch_size
        for b in self.layers:
            b.attention.kv_cache = KVCache(max_batch_size, max_seq_length, self.config.n_head, self.config.head_dim)
        freqs_cis = precompute_freqs_cis(self.config.block_size, self.config.head_dim, self.config.rope_base)
        self.register_buffer("freqs_cis", freqs_cis, persistent=False)
        causal_mask = torch.tril(torch.ones(self.max_seq_length, self.max_seq_length, dtype=torch.bool))
        self.register_buffer("causal_mask", causal_mask, persistent=False)

    def forward(self, idx: Tensor, input_pos: Optional[Tensor] = None) -> Tensor:
        assert self.freqs_cis is not None, "Caches must be initialized first"
        mask = self.causal_mask[None, None, input_pos]
        freqs_cis = self.freqs_cis[input_pos]
        x = self.tok_embeddings(idx)

        for i, layer in enumerate(self.layers):
            x = layer(x, input_pos, freqs_cis, mask)
        x = self.norm(x)
        logits = self.output(x)
        return logits


class TransformerBlock(nn.Module):
    def __init__(self, config: ModelArgs) -> None:
        super().__init__()
        self.attention = Attention(config)
        self.feed_forward = FeedForward(config)
        self.ffn_norm = RMSNorm(config.dim, config.norm_eps)
        self.attention_norm = RMSNorm(config.dim, config.norm_eps)

    def forward(self, x: Tensor, input_pos: Tensor, freqs_cis: Tensor, mask: Tensor) -> Tensor:
        h = x + self.attention(self.attention_norm(x), freqs_cis, mask, input_pos)
        out = h + self.feed_forward(self.ffn_norm(h))
        return out


class Attention(nn.Module):
    def __init__(self, config: ModelArgs):
        super().__init__()
        assert config.dim % config.n_head == 0
        self.wqkv = nn.Linear(config.dim, 3 * config.dim, bias=False)
        self.wo = nn.Linear(config.dim, config.dim, bias=False)
        self.kv_cache = None
        self.n_head = config.n_head
        self.head_dim = config.head_dim
        self.dim = config.dim

    def forward(self, x: Tensor, freqs_cis: Tensor, mask: Tensor, input_pos: Optional[Tensor] = None) -> Tensor:
        bsz, seqlen, _ = x.shape

        q, k, v = self.wqkv(x).split([self.dim, self.dim, self.dim], dim=-1)

        q = q.view(bsz, seqlen, self.n_head, self.head_dim)
        k = k.view(bsz, seqlen, self.n_head, self.head_dim)
        v = v.view(bsz, seqlen, self.n_head, self.head_dim)

        q = apply_rotary_emb(q, freqs_cis)
        k = apply_rotary_emb(k, freqs_cis)

        q, k, v = map(lambda x: x.transpose(1, 2), (q, k, v))

        if self.kv_cache is not None:
            k, v = self.kv_cache.update(input_pos, k, v)

        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0)

        y = y.transpose(1, 2).contiguous().view(bsz, seqlen, self.dim)

        y = self.wo(y)
        return y


class FeedForward(nn.Module):
    def __init__(self, config: ModelArgs) -> None:
        super().__init__()
        self.w1 = nn.Linear(config.dim, config.intermediate_size, bias=False)
        self.w3 = nn.Linear(config.dim, config.intermediate_size, bias=False)
        self.w2 = nn.Linear(config.intermediate_size, config.dim, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)

    def forward(self, x: Tensor) -> Tensor:
        output = self._norm(x.float()).type_as(x)
        return output * self.weight


def precompute_freqs_cis(seq_len: int, n_elem: int, base: float = 10000) -> Tensor:
    freqs = 1.0 / (base ** (torch.arange(0, n_elem, 2)[: (n_elem // 2)].float() / n_elem))
    t = torch.arange(seq_len, device=freqs.device)
    freqs = torch.outer(t, freqs)
    freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
    cache = torch.stack([freqs_cis.real, freqs_cis.imag], dim=-1)
    return cache


def apply_rotary_emb(x: Tensor, freqs_cis: Tensor) -> Tensor:
    xshaped = x.float().reshape(*x.shape[:-1], -1, 2)
    freqs_cis = freqs_cis.view(1, xshaped.size(1), 1, xshaped.size(3), 2)
    x_out2 = torch.stack(
        [
            xshaped[..., 0] * freqs_cis[..., 0] - xshaped[..., 1] * freqs_cis[..., 1],
            xshaped[..., 1] * freqs_cis[..., 0] + xshaped[..., 0] * freqs_cis[..., 1],
        ],
        -1,
    )

    x_out2 = x_out2.flatten(3)
    return x_out2.type_as(x)


# --- gpt-fast's generate (generate.py), greedy, with an end token -----------------------------


def logits_to_probs(logits, temperature: float = 1.0, top_k: Optional[int] = None):
    logits = logits / max(temperature, 1e-5)
    if top_k is not None:
        v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
        pivot = v.select(-1, -1).unsqueeze(-1)
        logits = torch.where(logits < pivot, -float("Inf"), logits)
    probs = torch.nn.functional.softmax(logits, dim=-1)
    return probs


def sample(logits, temperature: float = 1.0, top_k: Optional[int] = None):
    probs = logits_to_probs(logits[0, -1], temperature, top_k)
    idx_next = torch.argmax(probs, dim=-1, keepdim=True)  # (greedy; gpt-fast draws from probs)
    return idx_next, probs


def prefill(model: Transformer, x: Tensor, input_pos: Tensor, **sampling_kwargs) -> Tensor:
    # input_pos: [S]
    logits = model(x, input_pos)
    return sample(logits, **sampling_kwargs)[0]


def decode_one_token(model: Transformer, x: Tensor, input_pos: Tensor, **sampling_kwargs) -> tuple[Tensor, Tensor]:
    # input_pos: [1]
    assert input_pos.shape[-1] == 1
    logits = model(x, input_pos)
    return sample(logits, **sampling_kwargs)


def decode_n_tokens(model: Transformer, cur_token: Tensor, input_pos: Tensor, num_new_tokens: int,
                    eos_id: Optional[int] = None, **sampling_kwargs):
    new_tokens, new_probs = [], []
    for i in range(num_new_tokens):
        next_token, next_prob = decode_one_token(model, cur_token, input_pos, **sampling_kwargs)
        input_pos += 1
        new_tokens.append(next_token.clone())
        new_probs.append(next_prob.clone())
        cur_token = next_token.view(1, -1)
        if eos_id is not None and next_token.item() == eos_id:
            break

    return new_tokens, new_probs


class GPTDecode(nn.Module):
    """gpt-fast's `generate` as a module: the Transformer with its caches set up, greedy."""

    def __init__(self, config: ModelArgs | None = None, eos_id: int = EOS_ID):
        super().__init__()
        self.config = config or ModelArgs()
        self.model = Transformer(self.config)
        self.model.setup_caches(max_batch_size=1, max_seq_length=self.config.block_size)
        self.eos_id = eos_id

    def forward(self, prompt: Tensor, max_new_tokens: int) -> Tensor:
        return self.generate(prompt, max_new_tokens, eos_id=self.eos_id, temperature=1.0)

    @torch.no_grad()
    def generate(self, prompt: Tensor, max_new_tokens: int, *, eos_id: Optional[int] = None, **sampling_kwargs) -> Tensor:
        T = prompt.size(0)
        assert T + max_new_tokens <= self.config.block_size, "prompt and new tokens exceed the context"
        input_pos = torch.arange(0, T)
        next_token = prefill(self.model, prompt.view(1, -1), input_pos, **sampling_kwargs)
        if eos_id is not None and next_token.item() == eos_id:
            return next_token
        input_pos = torch.tensor([T])
        generated_tokens, _ = decode_n_tokens(self.model, next_token.view(1, -1), input_pos, max_new_tokens - 1,
                                              eos_id=eos_id, **sampling_kwargs)
        return torch.cat([next_token] + generated_tokens)
