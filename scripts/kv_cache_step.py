"""Time of one decode step of a gpt-fast-style KV cache model against the cache's length (ORT).

    python scripts/kv_cache_step.py [--lengths 16,64,256] [--layers 2] [--steps 200] [--backend onnxruntime]

The model is gpt-fast's attention with its `KVCache` (`k_out = self.k_cache;
k_out[:, :, input_pos] = k_val`), 4 heads of 64, a few layers: each step writes one
position of every layer's two caches and attends over the whole cache (as gpt-fast does,
with a mask). The step time is the median of `--steps` calls at one thread (numpy in), with
the load average printed beside it: the machine may be shared. Also printed per step: the
bytes of the caches (what a functional write copies at least once per step) and whether
the host program gives each cache's buffer to the sub-DNN that writes it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

import dycl

HEADS, HEAD_DIM = 4, 64
DIM = HEADS * HEAD_DIM


class KVCache(nn.Module):
    def __init__(self, length: int):
        super().__init__()
        self.register_buffer("k_cache", torch.zeros(1, HEADS, length, HEAD_DIM))
        self.register_buffer("v_cache", torch.zeros(1, HEADS, length, HEAD_DIM))

    def update(self, input_pos, k_val, v_val):
        k_out = self.k_cache
        v_out = self.v_cache
        k_out[:, :, input_pos] = k_val
        v_out[:, :, input_pos] = v_val
        return k_out, v_out


class Attention(nn.Module):
    def __init__(self, length: int):
        super().__init__()
        self.wqkv = nn.Linear(DIM, 3 * DIM, bias=False)
        self.wo = nn.Linear(DIM, DIM, bias=False)
        self.kv_cache = KVCache(length)

    def forward(self, x, input_pos, mask):
        bsz, seqlen, _ = x.shape
        q, k, v = self.wqkv(x).split([DIM, DIM, DIM], dim=-1)
        q = q.view(bsz, seqlen, HEADS, HEAD_DIM).transpose(1, 2)
        k = k.view(bsz, seqlen, HEADS, HEAD_DIM).transpose(1, 2)
        v = v.view(bsz, seqlen, HEADS, HEAD_DIM).transpose(1, 2)
        k, v = self.kv_cache.update(input_pos, k, v)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.0)
        return self.wo(y.transpose(1, 2).contiguous().view(bsz, seqlen, DIM))


class Decoder(nn.Module):
    def __init__(self, length: int, layers: int):
        super().__init__()
        self.layers = nn.ModuleList(Attention(length) for _ in range(layers))
        self.register_buffer("causal_mask", torch.tril(torch.ones(length, length, dtype=torch.bool)))

    def forward(self, x, input_pos):
        mask = self.causal_mask[None, None, input_pos]
        for layer in self.layers:
            x = x + layer(x, input_pos, mask)
        return x


def step_inputs(length: int, steps: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 1, DIM, generator=generator).numpy(), np.array([k % length]))
            for k in range(steps)]


def measure(length: int, layers: int, steps: int, backend: str) -> dict:
    torch.manual_seed(0)
    model = Decoder(length, layers).eval()
    example = (torch.randn(1, 1, DIM), torch.tensor([0]))
    compiled = dycl.compile(model, example, backend=backend, progress=False, threads=1)
    calls = step_inputs(length, steps)
    for args in calls[:10]:  # warm up
        compiled(*args)
    times = []
    for args in calls:
        start = time.perf_counter()
        compiled(*args)
        times.append(time.perf_counter() - start)
    cache_bytes = sum(v.nbytes for v in compiled.state.values())
    given = "in_place(" in compiled.source
    return {"length": length, "us": statistics.median(times) * 1e6, "cache_bytes": cache_bytes, "given": given}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="16,64,256")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--backend", default="onnxruntime")
    options = parser.parse_args()
    rows = [measure(int(n), options.layers, options.steps, options.backend) for n in options.lengths.split(",")]
    print(f"{options.backend}, {options.layers} layers, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    base = rows[0]["us"]
    for row in rows:
        print(f"cache length {row['length']:4d}: {row['us']:8.1f} us per step ({row['us'] / base:.2f}x), "
              f"caches {row['cache_bytes'] / 1024:.0f} KiB, given to the sub-DNN: {row['given']}")


if __name__ == "__main__":
    main()
