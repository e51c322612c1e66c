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


# --- paths ------------------------------------------------------------------------------------


@torch.no_grad()
def scores_without_end(model: GPTDecode, prompt: Tensor, steps: int) -> tuple[Tensor, Tensor]:
    """The logits of the first `steps` new tokens `forward` emits for `prompt` when the end
    token never wins (steps × vocabulary), and the final hidden states they come from
    (steps × dim). Until `forward` stops, its tokens do not depend on the end token's row,
    so these give every decision it takes. Runs the model's own pieces (its caches change,
    as a `forward` call changes them)."""
    transformer, eos = model.model, model.eos_id
    hidden, scores = [], []

    def step(tokens: Tensor, input_pos: Tensor) -> Tensor:
        x = transformer.norm(_blocks(transformer, tokens, input_pos))[0, -1]
        logits = transformer.output(x)
        hidden.append(x)
        scores.append(logits)
        return logits.index_fill(0, torch.tensor([eos]), -torch.inf).argmax().view(1, 1)

    token = step(prompt.view(1, -1), torch.arange(prompt.size(0)))
    for k in range(steps - 1):
        token = step(token, torch.tensor([prompt.size(0) + k]))
    return torch.stack(scores), torch.stack(hidden)


def _blocks(transformer: Transformer, idx: Tensor, input_pos: Tensor) -> Tensor:
    mask = transformer.causal_mask[None, None, input_pos]
    freqs_cis = transformer.freqs_cis[input_pos]
    x = transformer.tok_embeddings(idx)
    for layer in transformer.layers:
        x = layer(x, input_pos, freqs_cis, mask)
    return x


def _gaps(scores: Tensor, eos: int) -> tuple[Tensor, Tensor]:
    """Per step: the end token's score minus the best other token's (>= 0 stops), and the best
    other token's lead over the runner-up."""
    others = scores.index_fill(-1, torch.tensor([eos]), -torch.inf)
    top2 = others.topk(2, dim=-1).values
    return scores[..., eos] - top2[..., 0], top2[..., 0] - top2[..., 1]


def decode_path(model: GPTDecode, prompt: Tensor, max_new_tokens: int) -> tuple[tuple[int, int, bool], float]:
    """((prompt length, new tokens, stopped at the end token), the smallest gap a decision on
    the way rests on). The model's caches are left as they were."""
    caches = [buffer.clone() for buffer in model.buffers()]
    scores, _ = scores_without_end(model, prompt, max_new_tokens)
    with torch.no_grad():
        for buffer, kept in zip(model.buffers(), caches):
            buffer.copy_(kept)
    end_gap, word_gap = _gaps(scores, model.eos_id)
    stops = (end_gap >= 0).nonzero()
    length = int(stops[0, 0]) + 1 if len(stops) else max_new_tokens
    closeness = torch.minimum(end_gap.abs(), word_gap)[:length].min()
    return (prompt.size(0), length, bool(len(stops))), float(closeness)


def path_of(model: GPTDecode, inputs: Inputs) -> tuple[int, int, bool]:
    path, _ = decode_path(model, *inputs)
    return path


def branches_of(path: tuple[int, int, bool]) -> frozenset[str]:
    """The prefill a path takes (one prompt token is a sub-DNN of its own: by size) and where
    the greedy loop ends: the end token first (no step), within 2-8 new tokens, later, or never."""
    prompt_length, length, stopped = path
    prefill = "prompt of 1 token" if prompt_length == 1 else "prompt of 2+ tokens"
    if not stopped:
        end = "runs to max_new_tokens"
    elif length == 1:
        end = "stops at the first token"
    else:
        end = "stops after 2-8 tokens" if length <= 8 else "stops after 9+ tokens"
    return frozenset({prefill, end})


def all_branches(model: GPTDecode) -> frozenset[str]:
    return frozenset().union(*[branches_of(p) for p in [(1, 1, True), (5, 3, True), (5, 9, True), (5, 24, False)]])


# --- building and calibration -----------------------------------------------------------------

CANDIDATES = 12
CANDIDATE_SEED = 20_251_128


def candidate_prompts(count: int = CANDIDATES, seed: int = CANDIDATE_SEED) -> list[Tensor]:
    """Seeded prompts of the lengths `PROMPT_LENGTHS` and of 1 token, in turn."""
    generator = torch.Generator().manual_seed(seed)
    lengths = (1, *PROMPT_LENGTHS)
    vocabulary = ModelArgs().vocab_size
    prompts = []
    for i in range(count):
        prompt = torch.randint(3, vocabulary, (lengths[i % len(lengths)],), generator=generator)
        prompts.append(prompt)
    return prompts


def example_inputs() -> Inputs:
    """A prompt of `EXAMPLE_PROMPT_LENGTH` tokens (its length marked dynamic: the compiled
    model takes prompts of any length) and 8 new tokens."""
    prompt = torch.randint(3, ModelArgs().vocab_size, (EXAMPLE_PROMPT_LENGTH,), generator=torch.Generator().manual_seed(0))
    torch._dynamo.mark_dynamic(prompt, 0)
    return (prompt, 8)


def _reset_caches(model: GPTDecode) -> None:
    for layer in model.model.layers:
        layer.attention.kv_cache.k_cache.zero_()
        layer.attention.kv_cache.v_cache.zero_()


def _init_weights(model: GPTDecode) -> None:
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
    for layer in model.model.layers:  # (GPT-2's scaled init of the residual projections)
        for projection in (layer.attention.wo, layer.feed_forward.w2):
            nn.init.normal_(projection.weight, std=0.02 / math.sqrt(2 * model.config.n_layer))


@torch.no_grad()
def calibrate(model: GPTDecode, prompts: list[Tensor]) -> None:
    """Spread the logits (a gain on the output layer: a temperature, it never changes which
    token wins) to a standard deviation of 5, so greedy choices are clear; then move the end
    token's row along the mean final hidden state, which adds about the same amount to its
    score at every step, by the amount that gives the most branches and distinct stop points
    whose decisions are all clear. Until a prompt stops, the end token's row does not change
    its tokens, so one decoding run per prompt evaluates every amount."""
    output = model.model.output
    runs = [scores_without_end(model, p, MAX_NEW_TOKENS) for p in prompts]
    gain = 5.0 / torch.cat([s for s, _ in runs]).std()
    output.weight *= gain
    scores = torch.stack([s for s, _ in runs]) * gain  # prompts × steps × vocabulary
    hidden = torch.stack([h for _, h in runs])  # prompts × steps × dim
    direction = hidden.flatten(0, 1).mean(0)
    direction /= (hidden @ direction).mean()  # (so that the end score moves by about 1 per unit)
    end_gap, word_gap = _gaps(scores, model.eos_id)
    amounts = torch.linspace(0.0, 20.0, 201)
    gap = end_gap + amounts[:, None, None] * (hidden @ direction)  # amounts × prompts × steps
    stops = gap >= 0
    stopped = stops.any(-1)
    lengths = torch.where(stopped, stops.int().argmax(-1) + 1, MAX_NEW_TOKENS)
    on_path = torch.arange(MAX_NEW_TOKENS) < lengths[..., None]
    clear = torch.minimum(gap.abs(), word_gap).masked_fill(~on_path, torch.inf).amin(-1) >= DECISION_MARGIN
    best_key, best_amount = None, 0.0
    for a, amount in enumerate(amounts.tolist()):
        paths = {(p.size(0), int(n), bool(s)) for p, n, s, ok in zip(prompts, lengths[a], stopped[a], clear[a]) if ok}
        covered = frozenset().union(*map(branches_of, paths)) if paths else frozenset()
        key = (len(covered), len({p[1:] for p in paths}))
        if best_key is None or key > best_key:
            best_key, best_amount = key, amount
    output.weight[model.eos_id] += best_amount * direction
    _reset_caches(model)


def _build(seed: int) -> GPTDecode:
    with seeded(seed):
        model = GPTDecode()
        _init_weights(model)
    model.eval()
    calibrate(model, candidate_prompts())
    return model


def _select_path_inputs(model: GPTDecode) -> list[Inputs]:
    """One prompt per set of branches among the candidates (all with `MAX_NEW_TOKENS` new
    tokens), plus one with a budget of a single new token (the greedy loop never runs)."""
    chosen: dict[frozenset[str], tuple[tuple[int, int, bool], Tensor]] = {}
    for prompt in candidate_prompts():
        path, closeness = decode_path(model, prompt, MAX_NEW_TOKENS)
        if closeness >= DECISION_MARGIN:
            chosen.setdefault(branches_of(path), (path, prompt))
    missing = all_branches(model) - frozenset().union(*chosen)
    if missing:
        raise CalibrationError(f"gpt_decode candidates miss {sorted(missing)}")
    ordered = sorted(chosen.values(), key=lambda c: c[0])
    budget_of_one = next(prompt for (length, new, _), prompt in ordered if length > 1 and new > 1)
    return [(prompt.clone(), MAX_NEW_TOKENS) for _, prompt in ordered] + [(budget_of_one.clone(), 1)]


build = memoized_build(_build)
ENTRIES = [
    ZooEntry(name="gpt_decode", family="decode",
             summary="gpt-fast-style causal transformer (4 layers, width 256, vocabulary 512, context 256), "
                     "KV cache in buffers, prefill then greedy steps to max_new_tokens or the end token",
             build=build, example_inputs=example_inputs,
             path_inputs=memoized_inputs(lambda: _select_path_inputs(build(0))), path_of=path_of,
             branches_of=branches_of, all_branches=all_branches),
]
