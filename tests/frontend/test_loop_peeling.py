"""A constant-range loop too long to unroll, or one that can `break`, whose carry changes
structure in its first iteration only (`h = None`, then a tensor; an empty cache, then a
full one): its first iteration is compiled apart and the others as one runtime loop
(loop_compiler._peeled), with the cache's length a runtime dim (by_size.ties_by_example)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import dycl
from dycl.frontend import FrontendError, loops
from tests.frontend.helpers import max_abs_error

TRIPS = loops.MAX_UNROLL + 88


class LongRecurrence(nn.Module):
    """A GRU cell started from `h = None`, stopping early when its state grows."""

    def __init__(self, limit: float):
        super().__init__()
        self.cell = nn.GRUCell(4, 4)
        self.limit = limit

    def forward(self, x):
        h = None
        steps = 0
        for _ in range(TRIPS):
            h = self.cell(x, h)
            steps = steps + 1
            if h.sum() > self.limit:
                break
        return h, steps


class SkipsWithContinue(nn.Module):
    """A `continue` would skip what marks the first iteration as gone on: not peeled."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(4, 4)

    def forward(self, x):
        h = None
        for _ in range(TRIPS):
            h = self.cell(x, h)
            if h.sum() > 0:
                continue
            h = h * 0.5
        return h


@pytest.mark.parametrize("limit", [-100.0, 100.0, 0.0])  # (stops at once, never, on some inputs)
def test_long_loop_whose_carry_starts_as_none_is_peeled(limit):
    torch.manual_seed(0)
    model = LongRecurrence(limit).eval()
    x = torch.randn(2, 4)
    compiled = dycl.compile(model, (x,), backend="onnxruntime", progress=False)
    assert compiled.compile_report["subdnn_count"] < 8  # (not one copy per iteration)
    for inputs in (x, torch.randn(2, 4), -x):
        expected, got = model(inputs), compiled(inputs)
        assert got[1] == expected[1]
        assert max_abs_error(expected[0], got[0]) < 1e-5


def test_continue_in_the_body_is_not_peeled():
    with pytest.raises(FrontendError, match="changes structure in a runtime loop"):
        dycl.compile(SkipsWithContinue().eval(), (torch.randn(2, 4),), backend="onnxruntime", progress=False)


class CachedDecoder(nn.Module):
    """A decoder in the style of published greedy loops: a per-layer key cache that is None
    before the first step, `torch.cat` onto it each step, and `break` at the end token."""

    def __init__(self, new_tokens: int, eos: int = 3):
        super().__init__()
        self.embed = nn.Embedding(8, 6)
        self.keys = nn.ModuleList([nn.Linear(6, 6), nn.Linear(6, 6)])
        self.head = nn.Linear(6, 8)
        self.new_tokens, self.eos = new_tokens, eos

    @torch.no_grad()
    def forward(self, ids):
        caches = None
        tokens = ids
        for _ in range(self.new_tokens):
            h = self.embed(tokens)
            k0, k1 = self.keys[0](h), self.keys[1](h)
            if caches is None:
                caches = (k0, k1)
            else:
                caches = (torch.cat([caches[0], k0], dim=1), torch.cat([caches[1], k1], dim=1))
            h = h[:, -1:] + sum(torch.softmax(c @ h[:, -1:].transpose(1, 2), dim=1).transpose(1, 2) @ c for c in caches)
            token = self.head(h).argmax(-1)
            ids = torch.cat([ids, token], dim=1)
            if token.item() == self.eos:
                break
            tokens = token
        return ids


class UnequalLeaves(nn.Module):
    """Two leaves of one carried value, equal in length where the rest loop starts and then
    growing apart (by one and by two a step), beside a third runtime length: the run is
    captured with the leaves tied and called untied where they differ."""

    def __init__(self, trips: int = 6):
        super().__init__()
        self.trips = trips

    def forward(self, x):
        pair = None
        acc = x
        for _ in range(self.trips):
            pair = (x[:, :1], x[:, :1]) if pair is None else (torch.cat([pair[0], x[:, :1]], 1), torch.cat([pair[1], x[:, :2]], 1))
            acc = torch.cat([acc, torch.cat(pair, 1).sum(1, keepdim=True) + acc[:, -1:]], 1)
            if acc.sum() > 40:
                break
        return acc, pair[0], pair[1]


def _decoder_inputs(model, wanted: int = 6):
    """Prompts that stop at the end token early and that run to the budget."""
    found, stops = [], set()
    for seed in range(400):
        ids = torch.randint(0, 8, (1, 3), generator=torch.Generator().manual_seed(seed))
        steps = model(ids).shape[1] - 3
        if steps not in stops or len(found) < 2:
            stops.add(steps)
            found.append(ids)
        if len(found) >= wanted and len(stops) >= 3:
            break
    assert len(stops) >= 3, stops
    return found


def test_a_decoder_loop_that_can_break_is_one_step_for_every_cache_length():
    counts = {}
    for new_tokens in (4, 10):
        torch.manual_seed(0)
        model = CachedDecoder(new_tokens).eval()
        inputs = _decoder_inputs(model)
        compiled = dycl.compile(model, (inputs[0],), backend="onnxruntime", progress=False)
        for ids in inputs:
            assert torch.equal(compiled(ids), model(ids)), ids
        counts[new_tokens] = compiled.compile_report["subdnn_count"]
    assert counts[4] == counts[10], counts  # (unrolled: one step sub-DNN per iteration)


def test_tied_leaves_that_grow_apart_run_untied():
    model = UnequalLeaves().eval()
    inputs = [torch.full((1, 3), v) for v in (0.1, 0.5, 2.0, -1.0)]
    compiled = dycl.compile(model, (inputs[0],), backend="onnxruntime", progress=False)
    assert "unequal to the others" in compiled.source  # (peeled, its runs tied: not unrolled)
    for x in inputs:
        expected, got = model(x), compiled(x)
        assert max(max_abs_error(e, g) for e, g in zip(expected, got)) < 1e-5, x
