"""A KV cache kept in place at run time (docs/architecture.md, "State in registered buffers").

The backend records which sub-DNN outputs may be written into an argument's buffer (the
manifest's `in_place`), codegen gives a state slot's buffer to the call that last reads it
(`rt.in_place`), and the ONNX Runtime runner writes the cache where it lies. Every test
compares with eager PyTorch call by call, state included; the negative ones are where giving
the buffer would be wrong (the old cache read after the write, a tensor the caller passed,
an output that is the cache): those keep a copy and stay exact."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn

import dycl
from tests.frontend.buffer_state_models import BUFFERS, SEQUENCES
from tests.frontend.helpers import assert_replays_after_reset, max_abs_error, seeded_model, state_error

TOLERANCE = 1e-5






def _eager_call(model, args):
    with torch.no_grad():
        return model(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])


def _addresses(compiled) -> dict[str, int]:
    """Where each state array's data lies (the runtime's own arrays, not `state`'s copies)."""
    return {path: value.ctypes.data for path, value in compiled._state.items() if isinstance(value, np.ndarray)}


def _replay(compiled, eager_model, calls) -> float:
    worst = 0.0
    for args in calls:
        worst = max(worst, max_abs_error(_eager_call(eager_model, args), compiled(*args)),
                    state_error(eager_model, compiled.state))
    return worst


def test_gpt_fast_cache_is_written_in_place():
    """gpt-fast's `k_out = self.k_cache; k_out[:, :, input_pos] = k_val`: the sub-DNN's two
    cache outputs pair with the cache arguments, the host gives both buffers, and every
    step writes into the same arrays, exactly as eager."""
    factory, calls = SEQUENCES["gpt_fast_kv_cache"]
    model = seeded_model(factory)
    eager = copy.deepcopy(model)
    compiled = dycl.compile(model, calls[0], progress=False)
    (record,) = compiled.manifest["subdnns"]
    assert sorted(record["in_place"]) == [[0, 1], [1, 3]]  # (output, argument): k and v
    # given, and each new cache a result returned once: no sharing check at run time
    assert all(slot["in_place"] and slot["own_result"] for slot in compiled.manifest["state"]["slots"])
    assert "rt.in_place(subdnn_0, (1, 3))" in compiled.source
    before = _addresses(compiled)
    worst = _replay(compiled, eager, calls)
    print(f"gpt_fast_kv_cache in place: max abs error {worst:.3g} over {len(calls)} calls")
    assert worst <= TOLERANCE
    assert _addresses(compiled) == before  # no step copied a cache
    assert set(before) == set(BUFFERS["gpt_fast_kv_cache"])
    assert_replays_after_reset(compiled, model, calls, state_error, TOLERANCE)
    # reset_state gave the model a fresh copy of the initial state: never the initial arrays
    assert all(a is not b for a, b in zip(compiled._state.values(), compiled._initial_state.values()))


def test_state_copies_and_saving_never_alias_the_cache(tmp_path):
    """`compiled.state`, `save()` and a loaded copy hold values, not the buffer the next step
    writes: they keep what they held when taken."""
    factory, calls = SEQUENCES["gpt_fast_kv_cache"]
    model = seeded_model(factory)
    eager = copy.deepcopy(model)
    compiled = dycl.compile(model, calls[0], progress=False)
    _replay(compiled, eager, calls[:3])
    taken = compiled.state
    snapshot = {k: v.copy() for k, v in taken.items()}
    compiled.save(tmp_path / "artifact")
    eager_at_save = copy.deepcopy(eager)
    compiled(*calls[3])
    assert all(np.array_equal(taken[k], snapshot[k]) for k in taken)
    loaded = dycl.load(tmp_path / "artifact")
    assert all(np.array_equal(loaded.state[k], snapshot[k]) for k in taken)
    assert _replay(loaded, eager_at_save, calls[3:]) <= TOLERANCE
    _eager_call(eager, calls[3])
    assert _replay(compiled, eager, calls[4:]) <= TOLERANCE


def test_run_many_of_a_stateful_model_writes_in_place_in_order():
    factory, calls = SEQUENCES["gpt_fast_kv_cache"]
    model = seeded_model(factory)
    eager = copy.deepcopy(model)
    compiled = dycl.compile(model, calls[0], progress=False)
    before = _addresses(compiled)
    outputs = compiled.run_many([tuple(args) for args in calls])
    worst = max(max_abs_error(_eager_call(eager, args), out) for args, out in zip(calls, outputs))
    assert worst <= TOLERANCE and state_error(eager, compiled.state) <= TOLERANCE
    assert _addresses(compiled) == before


class _ReadsOldCache(nn.Module):
    """The old cache is read after the write (a copy taken before it, used after)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 6, 4))

    def forward(self, x, pos):
        old = self.cache.clone()
        k_out = self.cache
        k_out[:, pos] = x
        return (k_out - old).sum(-1) + old.mean(1, keepdim=True).sum(-1)


class _OldCacheAfterABranch(nn.Module):
    """The old cache is read in a sub-DNN after a runtime branch that follows the write."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 6, 4))

    def forward(self, x, pos):
        old = self.cache * 1.0
        self.cache[:, pos] = x
        if x.sum() > 0:
            return self.cache.sum(1) - old.sum(1)
        return old.sum(1) * 2.0


def _steps(count: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(1, 1, 4, generator=generator) * (1 if k % 2 else -1), torch.tensor([k % 6]))
            for k in range(count)]


@pytest.mark.parametrize("factory", [_ReadsOldCache, _OldCacheAfterABranch])
def test_a_cache_read_after_its_write_keeps_the_copy(factory):
    model = seeded_model(factory)
    eager = copy.deepcopy(model)
    calls = _steps(5, seed=3)
    compiled = dycl.compile(model, calls[0], progress=False)
    worst = _replay(compiled, eager, calls)
    print(f"{factory.__name__}: max abs error {worst:.3g}; host gives a buffer: {'rt.in_place(' in compiled.source}")
    assert worst <= TOLERANCE
    # The old value is read after the write: no output pairs with the argument that carries
    # it in (the graph reads it twice), so nothing is given and each step makes a new array.
    assert "rt.in_place(" not in compiled.source
    before = _addresses(compiled)
    compiled(*calls[0])
    assert _addresses(compiled) != before


class _WritesACallersCache(nn.Module):
    def forward(self, cache, k, pos):
        cache = cache.clone()
        cache[:, :, pos] = k
        return cache, cache.sum()


def test_a_callers_tensor_is_never_written():
    """A scatter on a forward input pairs with it in the sub-DNN, but the caller's array is
    not the runtime's: the host program does not give it, and it stays as it was."""
    model = _WritesACallersCache()
    cache, k = torch.zeros(1, 2, 5, 3), torch.randn(1, 2, 1, 3)
    compiled = dycl.compile(model, (cache, k, torch.tensor([2])), progress=False)
    assert any(record.get("in_place") for record in compiled.manifest["subdnns"])
    assert "rt.in_place(" not in compiled.source
    mine = np.zeros((1, 2, 5, 3), np.float32)
    for p in range(3):
        out = compiled(mine, k.numpy(), np.array([p]))
        assert max_abs_error(model(torch.from_numpy(mine), k, torch.tensor([p])), tuple(torch.from_numpy(np.asarray(o)) for o in out)) <= TOLERANCE
    assert not mine.any()


class _ReturnsTheCache(nn.Module):
    """gpt-fast's `update` returns the cache itself: an output that is the state's array."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 2, 6, 4))

    def forward(self, k, pos):
        k_out = self.cache
        k_out[:, :, pos] = k
        return k_out


def test_an_output_that_is_the_cache_is_not_written_by_the_next_call():
    """The caller keeps what a call returned: the state's array is copied where it shares
    memory with an output, so the next in-place write never reaches it."""
    model = seeded_model(_ReturnsTheCache)
    eager = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(5)
    calls = [(torch.randn(1, 2, 1, 4, generator=generator), torch.tensor([k])) for k in range(4)]
    compiled = dycl.compile(model, calls[0], progress=False)
    (slot,) = compiled.manifest["state"]["slots"]
    assert slot["in_place"] and "own_result" not in slot  # (returned twice: checked at run time)
    kept = []
    for args in calls:
        expected = _eager_call(eager, args).clone()  # (eager returns the buffer itself)
        kept.append((expected, compiled(*args)))
        assert state_error(eager, compiled.state) <= TOLERANCE
    assert max(max_abs_error(e, a) for e, a in kept) <= TOLERANCE


class _RaisesAfterTheWrite(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 6, 4))

    def forward(self, x, pos):
        k_out = self.cache
        k_out[:, pos] = x
        assert x.sum() < 3.0, "too large"
        return k_out.sum(1)


def test_a_call_that_raises_after_the_write_leaves_the_cache_as_eager_does():
    """Eager's buffer is written before the assert raises; so is the buffer given to the
    sub-DNN, and later calls go on from it as eager's do."""
    model = seeded_model(_RaisesAfterTheWrite)
    eager = copy.deepcopy(model)
    calls = [(torch.full((1, 1, 4), 0.1 * (k + 1)), torch.tensor([k])) for k in range(5)]
    compiled = dycl.compile(model, calls[0], progress=False)
    assert "rt.in_place(" in compiled.source
    assert _replay(compiled, eager, calls[:2]) <= TOLERANCE
    big = (torch.full((1, 1, 4), 2.0), torch.tensor([2]))
    with pytest.raises(AssertionError, match="too large"):
        _eager_call(eager, big)
    with pytest.raises(AssertionError, match="too large"):
        compiled(*big)
    assert state_error(eager, compiled.state) == 0.0
    assert _replay(compiled, eager, calls[3:]) <= TOLERANCE


class _Generate(nn.Module):
    """gpt-fast's `decode_n_tokens` in forward: a runtime number of steps, each writing the
    cache at `input_pos` (`input_pos += 1`), stopping early on a test of the output."""

    def __init__(self):
        super().__init__()
        self.attention = SEQUENCES["gpt_fast_kv_cache"][0]()

    def forward(self, x, steps: int):
        input_pos = torch.tensor([0])
        for _ in range(steps):
            x = x + self.attention(x, input_pos)
            input_pos += 1
            if x.abs().sum() > 200.0:
                break
        return x


def test_a_cache_carried_through_a_decode_loop_is_written_in_place():
    """The cache is a loop carry: its first value is the state's, each step's is the call's
    own result, read by nothing else, so every step of every call writes the same arrays."""
    model = seeded_model(_Generate)
    eager = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(7)
    calls = [(torch.randn(1, 1, 16, generator=generator), n) for n in (3, 0, 5, 2)]
    compiled = dycl.compile(model, calls[0], progress=False)
    assert "_in_place(" in compiled.source.split("while True:")[1]  # (the call in the loop)
    before = _addresses(compiled)
    worst = _replay(compiled, eager, calls)
    print(f"decode loop in place: max abs error {worst:.3g} over {len(calls)} calls")
    assert worst <= TOLERANCE
    assert _addresses(compiled) == before


class _WritesAnIntermediate(nn.Module):
    """No state: a sub-DNN's result, read by nothing after, is written at a runtime position
    by the next sub-DNN (a runtime branch between them keeps them apart)."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 4)

    def forward(self, x, pos, v):
        h = self.layer(x)
        if x.sum() > 0:
            h[:, pos] = v
            return h
        return x - 1.0


def test_an_intermediate_a_sub_dnn_made_is_written_in_place_and_stays_exact():
    model = seeded_model(_WritesAnIntermediate)
    generator = torch.Generator().manual_seed(11)
    calls = [(torch.randn(4, 4, generator=generator) + s, torch.tensor([k % 4]), torch.randn(4, 1, generator=generator))
             for k, s in enumerate((1.0, -1.0, 2.0, -2.0))]
    # (the branch in the host: its arms are sub-DNNs of their own)
    compiled = dycl.compile(model, calls[0], progress=False, pipeline={"keep_branches": False})
    assert "rt.in_place(" in compiled.source
    worst = max(max_abs_error(_eager_call(model, args), compiled(*args)) for args in calls)
    print(f"intermediate written in place: max abs error {worst:.3g}")
    assert worst <= TOLERANCE
    outputs = compiled.run_many([tuple(args) for args in calls])  # (the stepwise form gives nothing)
    assert max(max_abs_error(_eager_call(model, args), out) for args, out in zip(calls, outputs)) <= TOLERANCE


@pytest.mark.slow
def test_tvm_keeps_the_functional_copy():
    """TVM records no pairs (docs/architecture.md says why): its host program gives nothing,
    and each step's cache is a new array, exactly as eager's values."""
    factory, calls = SEQUENCES["gpt_fast_kv_cache"]
    model = seeded_model(factory)
    eager = copy.deepcopy(model)
    compiled = dycl.compile(model, calls[0], backend="tvm", progress=False)
    assert not any(record.get("in_place") for record in compiled.manifest["subdnns"])
    assert "rt.in_place(" not in compiled.source
    worst = _replay(compiled, eager, calls)
    print(f"gpt_fast_kv_cache on TVM (functional): max abs error {worst:.3g}")
    assert worst <= TOLERANCE
