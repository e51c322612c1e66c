"""Time of one decode step of a gpt-fast-style KV cache model against the cache's length (ORT).

    python scripts/kv_cache_step.py [--lengths 16,64,256] [--layers 2] [--steps 100] [--rounds 7]
                                    [--tokens 1] [--backend onnxruntime]

The model is gpt-fast's attention with its `KVCache` (`k_out = self.k_cache;
k_out[:, :, input_pos] = k_val`), 4 heads of 64, a few layers: each step writes one
position of every layer's two caches and attends over the whole cache (as gpt-fast does,
with a mask). Each form runs `--rounds` rounds of `--steps` steps at one thread (numpy in), rounds
interleaved; printed is the median round's time per step, CPU time of the process (which
leaves out descheduling on a shared machine) and wall clock, and the best round's CPU time
(the least disturbed by other processes), with the load average. The
forms: the compiled model as it runs (the host program gives each cache's buffer to the
sub-DNN that writes it), and the same artifact functional (every write copies the caches:
their bytes are printed).
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
from dycl.zoo.gpt_decode import KVCache  # gpt-fast's

HEADS, HEAD_DIM = 4, 64
DIM = HEADS * HEAD_DIM


class Attention(nn.Module):
    def __init__(self, length: int):
        super().__init__()
        self.wqkv = nn.Linear(DIM, 3 * DIM, bias=False)
        self.wo = nn.Linear(DIM, DIM, bias=False)
        self.kv_cache = KVCache(1, length, HEADS, HEAD_DIM)

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


class Generator(nn.Module):
    """`tokens` steps of the decoder in one call, as gpt-fast's `decode_n_tokens` runs them:
    the caches are carried through a loop in forward."""

    def __init__(self, length: int, layers: int):
        super().__init__()
        self.decoder = Decoder(length, layers)

    def forward(self, x, input_pos, tokens: int):
        for _ in range(tokens):
            x = self.decoder(x, input_pos)
            input_pos = input_pos + 1
        return x


def step_inputs(length: int, steps: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 1, DIM, generator=generator).numpy(), np.array([k % length]))
            for k in range(steps)]


def functional(compiled):
    """The same artifact with no buffer given: the sub-DNN runners behind wrappers that
    `rt.in_place` does not see through (each write then copies the cache)."""
    return compiled.rebind({name: (lambda *args, run=run: run(*args)) for name, run in compiled.subdnn_calls.items()})


def measure(lengths, layers: int, steps: int, rounds: int, backend: str, tokens: int = 1,
            forms=("in place", "functional")) -> list[dict]:
    """Per length and form (in place, functional), the median CPU and wall time of a step
    over `rounds` rounds of `steps` steps, rounds interleaved (the load drifts). With
    `tokens` > 1, each call runs that many steps in a loop (`Generator`), and a step is
    a call's time over `tokens`."""
    models = {}
    for length in lengths:
        torch.manual_seed(0)
        if tokens > 1:
            model = Generator(length, layers).eval()
            example = (torch.randn(1, 1, DIM), torch.tensor([0]), 2)
        else:
            model, example = Decoder(length, layers).eval(), (torch.randn(1, 1, DIM), torch.tensor([0]))
        compiled = dycl.compile(model, example, backend=backend, progress=False, threads=1)
        given = "rt.in_place(" in compiled.source
        if "in place" in forms:
            models[(length, "in place")] = (compiled, given)
        if "functional" in forms:
            models[(length, "functional")] = (functional(compiled), False)
    times = {key: ([], []) for key in models}
    for _ in range(rounds):
        for key, (compiled, _) in models.items():
            calls = step_inputs(key[0], steps)
            if tokens > 1:  # (positions from the cache's end backwards: every call fits)
                calls = [(x, np.array([key[0] - tokens - p % (key[0] - tokens + 1)]), tokens) for x, (p,) in calls]
            compiled(*calls[0])
            cpu, wall = time.process_time(), time.perf_counter()
            for args in calls:
                compiled(*args)
            times[key][0].append((time.process_time() - cpu) / (steps * tokens))
            times[key][1].append((time.perf_counter() - wall) / (steps * tokens))
    rows = []
    for (length, form), (compiled, given) in models.items():
        cpu, wall = times[(length, form)]
        rows.append({"length": length, "form": form, "cpu_us": statistics.median(cpu) * 1e6,
                     "wall_us": statistics.median(wall) * 1e6, "best_us": min(cpu) * 1e6, "given": given,
                     "cache_bytes": sum(v.nbytes for v in compiled.state.values())})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="16,64,256")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--backend", default="onnxruntime")
    parser.add_argument("--tokens", type=int, default=1, help="steps per call, in a loop in forward")
    parser.add_argument("--forms", default="in place,functional")
    options = parser.parse_args()
    lengths = [int(n) for n in options.lengths.split(",")]
    forms = options.forms.split(",")
    rows = measure(lengths, options.layers, options.steps, options.rounds, options.backend, options.tokens, forms)
    print(f"{options.backend}, {options.layers} layers, {options.tokens} step(s) per call, "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for form in forms:
        base = next(r for r in rows if r["form"] == form)
        for row in (r for r in rows if r["form"] == form):
            print(f"{form:10s} cache length {row['length']:4d}: CPU {row['cpu_us']:7.1f} us per step "
                  f"({row['cpu_us'] / base['cpu_us']:.2f}x), wall {row['wall_us']:7.1f} us "
                  f"({row['wall_us'] / base['wall_us']:.2f}x), best round's CPU {row['best_us']:7.1f} us "
                  f"({row['best_us'] / base['best_us']:.2f}x); caches {row['cache_bytes'] / 1024:.0f} KiB"
                  + (f", given to the sub-DNN: {row['given']}" if form == "in place" else ""))


if __name__ == "__main__":
    main()
