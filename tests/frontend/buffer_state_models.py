"""Models that keep state in registered buffers changed in place, written the way reference
LLM implementations keep their KV cache:

- Meta's Llama: `self.cache_k[:bsz, start_pos:start_pos + seqlen] = xk`, read back as
  `self.cache_k[:bsz, :start_pos + seqlen]` (`start_pos` a runtime int);
- gpt-fast's `KVCache`: `k_out = self.k_cache; k_out[:, :, input_pos] = k_val`, a write
  through an alias in a helper module's method (`input_pos` a tensor of positions);
- a 0-d buffer counter (`self.steps += 1`) and an `index_copy_` into a buffer.

`SEQUENCES`: name -> (factory, a list of calls' arguments); a compiled model must match eager
call by call, its buffers included. `BUFFERS`: name -> the buffer paths forward changes."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from dycl.zoo.gpt_decode import KVCache  # gpt-fast's KVCache (model.py): the write goes through an alias of the buffer

SEQUENCES: dict = {}
BUFFERS: dict = {}

DIM, HEADS, MAX_SEQ = 16, 2, 8


def _sequence_of_steps(prompt: int, steps: int, batch: int = 1, seed: int = 0):
    """A prefill of `prompt` positions, then one-token steps, the way Llama's `generate`
    slices its token buffer: every call gets the whole (batch, MAX_SEQ, DIM) buffer and the
    positions `[start_pos, start_pos + seqlen)` it computes."""
    generator = torch.Generator().manual_seed(seed)
    h = torch.randn(batch, MAX_SEQ, DIM, generator=generator)
    calls = [(h, 0, prompt)]
    calls += [(h, prompt + k, 1) for k in range(steps)]
    return calls


class LlamaAttention(nn.Module):
    """Meta's Llama attention (llama/model.py), without rotary embeddings and model parallel
    layers; its KV cache in buffers (`persistent=False` for the values, as some ports do)."""

    def __init__(self, max_batch_size: int = 2):
        super().__init__()
        self.n_heads, self.head_dim = HEADS, DIM // HEADS
        self.wq = nn.Linear(DIM, DIM, bias=False)
        self.wk = nn.Linear(DIM, DIM, bias=False)
        self.wv = nn.Linear(DIM, DIM, bias=False)
        self.wo = nn.Linear(DIM, DIM, bias=False)
        self.register_buffer("cache_k", torch.zeros(max_batch_size, MAX_SEQ, self.n_heads, self.head_dim))
        self.register_buffer("cache_v", torch.zeros(max_batch_size, MAX_SEQ, self.n_heads, self.head_dim), persistent=False)

    def forward(self, x: torch.Tensor, start_pos: int, mask):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_heads, self.head_dim)

        self.cache_k[:bsz, start_pos:start_pos + seqlen] = xk
        self.cache_v[:bsz, start_pos:start_pos + seqlen] = xv

        keys = self.cache_k[:bsz, :start_pos + seqlen]
        values = self.cache_v[:bsz, :start_pos + seqlen]

        xq = xq.transpose(1, 2)
        keys = keys.transpose(1, 2)
        values = values.transpose(1, 2)
        scores = torch.matmul(xq, keys.transpose(2, 3)) / math.sqrt(self.head_dim)
        scores = scores + mask  # (bs, n_heads, seqlen, cache_len + seqlen)
        # (fp32 throughout: Llama's `.type_as(xq)` here is refused for an unrelated reason,
        # a third runtime size, xq's rows, that DyCL does not relate to the scores' rows)
        scores = F.softmax(scores.float(), dim=-1)
        output = torch.matmul(scores, values)
        output = output.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(output)


class LlamaDecoder(nn.Module):
    """LLaMA's `Transformer.forward(tokens, start_pos)` over one attention layer: the rows
    `[start_pos, start_pos + seqlen)` of the caller's buffer as its input, and the causal
    additive causal mask of those rows cut from a registered buffer (nanoGPT's
    `self.bias[:, :, :T, :T]` at an offset; Llama's `torch.hstack` of two runtime-sized blocks
    is refused for an unrelated reason: three runtime sizes in one statement). That buffer
    never changes: it stays a weight."""

    def __init__(self):
        super().__init__()
        self.attention = LlamaAttention()
        self.norm = nn.LayerNorm(DIM)
        mask = torch.full((MAX_SEQ, MAX_SEQ), float("-inf")).triu(1)  # (Llama's additive causal mask)
        self.register_buffer("mask", mask.view(1, 1, MAX_SEQ, MAX_SEQ), persistent=False)

    def forward(self, h_all: torch.Tensor, start_pos: int, seqlen: int):
        h = h_all[:, start_pos:start_pos + seqlen]
        mask = self.mask[:, :, start_pos:start_pos + seqlen, :start_pos + seqlen]
        h = h + self.attention(self.norm(h), start_pos, mask)
        return h


SEQUENCES["llama_cache"] = (LlamaDecoder, _sequence_of_steps(4, 4))
BUFFERS["llama_cache"] = ("attention.cache_k", "attention.cache_v")


class GptFastAttention(nn.Module):
    """gpt-fast's Attention: the cache is a helper module, updated by a method call."""

    def __init__(self):
        super().__init__()
        self.n_head, self.head_dim = HEADS, DIM // HEADS
        self.wqkv = nn.Linear(DIM, 3 * DIM, bias=False)
        self.wo = nn.Linear(DIM, DIM, bias=False)
        self.kv_cache = KVCache(1, MAX_SEQ, HEADS, DIM // HEADS)
        self.register_buffer("causal_mask", torch.tril(torch.ones(MAX_SEQ, MAX_SEQ, dtype=torch.bool)))

    def forward(self, x, input_pos):
        bsz, seqlen, _ = x.shape
        q, k, v = self.wqkv(x).split([DIM, DIM, DIM], dim=-1)
        q = q.view(bsz, seqlen, self.n_head, self.head_dim).transpose(1, 2)
        k = k.view(bsz, seqlen, self.n_head, self.head_dim).transpose(1, 2)
        v = v.view(bsz, seqlen, self.n_head, self.head_dim).transpose(1, 2)
        if self.kv_cache is not None:
            k, v = self.kv_cache.update(input_pos, k, v)
        mask = self.causal_mask[None, None, input_pos]
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0)
        y = y.transpose(1, 2).contiguous().view(bsz, seqlen, DIM)
        return self.wo(y)


def _gpt_fast_steps(count: int, seed: int = 1):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 1, DIM, generator=generator), torch.tensor([k])) for k in range(count)]


SEQUENCES["gpt_fast_kv_cache"] = (GptFastAttention, _gpt_fast_steps(6))
BUFFERS["gpt_fast_kv_cache"] = ("kv_cache.k_cache", "kv_cache.v_cache")


class StepCounter(nn.Module):
    """A 0-d buffer counting the calls, read in a branch; an exponential average changed by
    `mul_` and `+=`; a ring of the last inputs kept by `index_copy_` at the step's slot."""

    def __init__(self, slots: int = 3):
        super().__init__()
        self.layer = nn.Linear(4, 4)
        self.slots = slots
        self.register_buffer("steps", torch.tensor(0))
        self.register_buffer("ema", torch.zeros(4))
        self.register_buffer("ring", torch.zeros(slots, 4), persistent=False)

    def forward(self, x):
        y = self.layer(x)
        self.steps += 1
        self.ema.mul_(0.5)
        self.ema += 0.5 * y.mean(0)
        slot = (self.steps % self.slots).view(1)
        self.ring.index_copy_(0, slot, y[:1])
        if self.steps > 2:
            y = y + self.ring.mean(0)
        return y + self.ema, self.steps.clone()


def _chunks(count: int, shape, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(*shape, generator=generator),) for _ in range(count)]


SEQUENCES["step_counter"] = (StepCounter, _chunks(6, (2, 4), seed=2))
BUFFERS["step_counter"] = ("steps", "ema", "ring")


class CapturedStep(nn.Module):
    """A block with a forward hook runs whole inside a captured block: its buffer changes
    are seen by torch.export (`BUFFER_MUTATION`), not by the frontend's own statements."""

    def __init__(self):
        super().__init__()
        self.inner = _HookedRunningMean()
        self.inner.register_forward_hook(lambda module, args, out: None)
        self.out = nn.Linear(4, 4)

    def forward(self, x):
        return self.out(self.inner(x))


class _HookedRunningMean(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.register_buffer("mean", torch.zeros(4))
        self.register_buffer("count", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        y = self.proj(x)
        self.count.add_(1)
        self.mean.mul_(0.8).add_(0.2 * y.mean(0))
        return y - self.mean


SEQUENCES["captured_block"] = (CapturedStep, _chunks(5, (3, 4), seed=4))
BUFFERS["captured_block"] = ("inner.mean", "inner.count")


class MoCoQueue(nn.Module):
    """MoCo's queue of keys (facebookresearch/moco, `builder.py`): a (dim, K) buffer written
    at a pointer kept in a 1-element long buffer, `ptr = int(self.queue_ptr)`, then
    `self.queue[:, ptr : ptr + batch_size] = keys.T` and `self.queue_ptr[0] = ptr`, in a
    `@torch.no_grad()` helper; the logits against the queue as MoCo computes them."""

    def __init__(self, dim: int = 4, K: int = 6):
        super().__init__()
        self.K = K
        self.encoder_k = nn.Linear(4, dim)
        self.register_buffer("queue", F.normalize(torch.randn(dim, K), dim=0))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        batch_size = keys.shape[0]
        ptr = int(self.queue_ptr)
        assert self.K % batch_size == 0  # for simplicity
        # replace the keys at ptr (dequeue and enqueue)
        self.queue[:, ptr : ptr + batch_size] = keys.T
        ptr = (ptr + batch_size) % self.K  # move pointer
        self.queue_ptr[0] = ptr

    def forward(self, q):
        k = F.normalize(self.encoder_k(q), dim=1)
        l_pos = torch.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", [q, self.queue.clone().detach()])
        logits = torch.cat([l_pos, l_neg], dim=1) / 0.07
        self._dequeue_and_enqueue(k)
        return logits


SEQUENCES["moco_queue"] = (MoCoQueue, _chunks(5, (2, 4), seed=5))
BUFFERS["moco_queue"] = ("queue", "queue_ptr")


class RingAtStep(nn.Module):
    """A ring of the last outputs in a buffer, written at the slot a 0-d step buffer gives,
    as a KV cache's write at `self.steps % slots` (a 0-d integer tensor as the index), a
    column at `int(self.steps) % slots` and an augmented store at the slot; read after."""

    def __init__(self, slots: int = 3):
        super().__init__()
        self.slots = slots
        self.layer = nn.Linear(4, 4)
        self.register_buffer("steps", torch.tensor(0))
        self.register_buffer("ring", torch.zeros(slots, 4))
        self.register_buffer("columns", torch.zeros(4, slots))
        self.register_buffer("hits", torch.zeros(slots))

    def forward(self, x):
        y = torch.tanh(self.layer(x))
        self.ring[self.steps % self.slots] = y[0]
        pos = int(self.steps) % self.slots
        self.columns[:, pos] = y[-1]
        self.hits[self.steps % self.slots] += 1.0
        self.steps += 1
        return y + self.ring.mean(0) + self.columns.sum(1), self.hits.clone()


SEQUENCES["ring_at_step"] = (RingAtStep, _chunks(5, (2, 4), seed=6))
BUFFERS["ring_at_step"] = ("steps", "ring", "columns", "hits")


class StepCacheInAWhile(nn.Module):
    """Buffers written in a bounded `while` whose body may `break` on either arm of a gate, or
    go on without changing `x` (fuzz seed 410039: the host program's ownership analysis of
    the loop's carries followed the unchanged carry around the loop forever)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("steps", torch.tensor(0))
        self.register_buffer("cache", torch.zeros(4, 4))
        self.register_buffer("mean", torch.zeros(4), persistent=False)

    def forward(self, x):
        steps = 0
        while steps < 3 and x.mean() > -1.0:
            if x.sum() > 0.5:
                if x.std() > 2.0:
                    break
                x = torch.tanh(self.fc(x))
            else:
                if x.sum() < -0.5:
                    break
            self.cache.index_copy_(0, (self.steps % 4).view(1), x.detach())
            self.steps += 1
            self.mean.mul_(0.5)
            self.mean += 0.5 * x.detach()[0]
            steps += 1
        return x + self.cache.mean(0, keepdim=True) + self.mean


def _scaled_rows(scales, seed: int):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 4, generator=generator) * s,) for s in scales]


SEQUENCES["cache_in_a_while"] = (StepCacheInAWhile, _scaled_rows((1.0, 0.2, 3.0, 1.0, 0.5, 2.0), seed=3))
BUFFERS["cache_in_a_while"] = ("steps", "cache", "mean")
