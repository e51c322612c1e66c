"""State kept in registered buffers changed in place (a KV cache, a step counter): the buffers
forward changes are state that outlives the call, carried as attribute state is (slots of the
host function), exactly, call by call; the buffers forward only reads stay weights.

A sequence of calls must match eager call by call, outputs and buffers: on the reference
interpreter, ONNX Runtime, and TVM in the slow tier."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

import dycl
from dycl.frontend import import_module
from dycl.interpreter import run_call
from tests.frontend.buffer_state_models import BUFFERS, SEQUENCES
from tests.frontend.helpers import assert_replays_after_reset, max_abs_error, seeded_model as _build, state_error, tiered

TOLERANCE = 1e-5






def _eager_call(model, args):
    with torch.no_grad():
        return model(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_buffer_sequence_on_the_interpreter(name):
    factory, calls = SEQUENCES[name]
    model = _build(factory)
    eager = copy.deepcopy(model)
    program = import_module(model, calls[0])
    state = program.state
    assert set(state) == set(BUFFERS[name])  # the buffers forward changes, no other
    assert not set(state) & set(program.weights)  # (state, not weights)
    if name == "llama_cache":  # (the mask buffer forward only reads stays a weight)
        assert "mask" in program.weights
    assert state_error(model, state) == 0.0
    weights = {k: torch.from_numpy(v) for k, v in program.weights.items()}
    worst = 0.0
    for args in calls:
        output, state = run_call(program.module, args, weights, state, program.function_name)
        worst = max(worst, max_abs_error(_eager_call(eager, args), output), state_error(eager, state))
    print(f"{name}: max abs error {worst:.3g} over {len(calls)} calls (interpreter)")
    assert worst <= TOLERANCE, worst


def _compiled_sequence(name, backend):
    factory, calls = SEQUENCES[name]
    model = _build(factory)
    eager = copy.deepcopy(model)
    before = {k: v.clone() for k, v in model.state_dict(keep_vars=False).items()}
    compiled = dycl.compile(model, calls[0], backend=backend, progress=False)
    # the frontend and the self-check left the module's buffers as they were, and the
    # compiled model starts from them
    assert max_abs_error(before, dict(model.state_dict())) == 0.0
    assert compiled.stateful and set(compiled.state) == set(BUFFERS[name])
    assert state_error(model, compiled.state) == 0.0
    worst = 0.0
    for args in calls:
        worst = max(worst, max_abs_error(_eager_call(eager, args), compiled(*args)), state_error(eager, compiled.state))
    print(f"{name}: max abs error {worst:.3g} over {len(calls)} calls ({backend})")
    assert worst <= TOLERANCE, worst
    return compiled, model, calls


# (Llama's cache, 18 s, in the slow tier: gpt-fast's KV cache stands for it here)
@pytest.mark.parametrize("name", tiered(SEQUENCES, set(SEQUENCES) - {"llama_cache"}))
def test_buffer_sequence_on_onnxruntime(name):
    compiled, model, calls = _compiled_sequence(name, "onnxruntime")
    assert_replays_after_reset(compiled, model, calls, state_error, TOLERANCE)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_buffer_sequence_on_tvm(name):
    _compiled_sequence(name, "tvm")


def test_kv_cache_survives_save_and_load(tmp_path):
    """The cache after a prefill and two steps is saved in state.npz; the loaded model goes
    on decoding from it, and reset_state() empties it again."""
    factory, calls = SEQUENCES["llama_cache"]
    model = _build(factory)
    eager = copy.deepcopy(model)
    compiled = dycl.compile(model, calls[0], progress=False)
    for args in calls[:3]:
        _eager_call(eager, args), compiled(*args)
    assert np.abs(compiled.state["attention.cache_k"]).max() > 0
    compiled.save(tmp_path / "artifact")
    loaded = dycl.load(tmp_path / "artifact")
    assert "state.npz" in loaded.manifest["files"] and state_error(eager, loaded.state) <= TOLERANCE
    for args in calls[3:]:
        assert max_abs_error(_eager_call(eager, args), loaded(*args)) <= TOLERANCE
        assert state_error(eager, loaded.state) <= TOLERANCE
    loaded.reset_state()
    assert all(not np.any(value) for value in loaded.state.values())


def test_a_captured_block_changes_buffers_through_export(monkeypatch):
    """A hooked submodule runs whole inside a captured block: the buffers it changes are the
    run's `BUFFER_MUTATION` outputs, which become the slots' new values (never dropped, never
    a weight read of the compile-time value)."""
    from dycl.frontend import capture

    seen = []
    original = capture.RunCapturer._import

    def spy(self, *args):
        run = original(self, *args)
        seen.extend(run.mutated_buffers)
        return run

    monkeypatch.setattr(capture.RunCapturer, "_import", spy)
    factory, calls = SEQUENCES["captured_block"]
    program = import_module(_build(factory), calls[0])
    assert sorted(seen) == ["inner.count", "inner.mean"]
    assert not any(op.name == "dycl.param" and "inner.mean" in str(op.attributes["name"]) for op in program.module.walk())
