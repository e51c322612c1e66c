"""State that outlives a call: module attributes forward keeps from one call to the next are
carried by the compiled model exactly as PyTorch carries them (issue 28, wall 2).

A sequence of calls must match eager call by call, outputs and state: on the reference
interpreter (`dycl.interpreter.run_call`), ONNX Runtime, and TVM in the slow tier."""

from __future__ import annotations

import copy
import inspect
import threading

import numpy as np
import pytest
import torch

import dycl
from dycl.frontend import FrontendError, import_module
from dycl.interpreter import run_call
from tests.frontend import state_models
from tests.frontend.helpers import assert_replays_after_reset, max_abs_error, tiered
from tests.frontend.state_models import REFUSED, SEQUENCES, MemoizedEncoder, StreamingGRU, memoized_calls

TOLERANCE = 1e-5


def _attribute(model, path: str):
    owner, _, attr = path.rpartition(".")
    return getattr(model.get_submodule(owner) if owner else model, attr)


def _torch(value):
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.array(value))
    if isinstance(value, (list, tuple)):
        items = [_torch(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def _plain(value):
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        items = [_plain(v) for v in value]
        return items if isinstance(value, list) else tuple(items)
    return value


def _state_error(eager_model, state: dict) -> float:
    """Max abs error of a compiled model's state against the eager module's attributes."""
    assert state, "the model keeps no state"
    expected = {path: _plain(_attribute(eager_model, path)) for path in state}
    return max_abs_error(expected, {path: _torch(value) for path, value in state.items()})


def _eager_call(model, args):
    with torch.no_grad():
        return model(*[a.clone() for a in args])


def _build(factory):
    torch.manual_seed(0)
    return factory().eval()


@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_call_sequence_on_the_interpreter(name):
    factory, calls = SEQUENCES[name]
    model = _build(factory)
    eager = copy.deepcopy(model)
    program = import_module(model, calls[0])
    weights = {k: torch.from_numpy(v) for k, v in program.weights.items()}
    state = program.state
    assert state and _state_error(model, state) == 0.0  # the module's state when imported, left as it was
    worst = 0.0
    for args in calls:
        output, state = run_call(program.module, args, weights, state, program.function_name)
        worst = max(worst, max_abs_error(_eager_call(eager, args), output), _state_error(eager, state))
    assert worst <= TOLERANCE, worst


def _compiled_sequence(name, backend):
    factory, calls = SEQUENCES[name]
    model = _build(factory)
    eager = copy.deepcopy(model)
    before = {k: _plain(v) for k, v in vars(model).items() if not k.startswith("_")}
    compiled = dycl.compile(model, calls[0], backend=backend, progress=False)
    # dycl.compile (the frontend and the self-check) left the module as it was, and the
    # compiled model starts from that state
    after = {k: _plain(v) for k, v in vars(model).items() if not k.startswith("_")}
    assert max_abs_error(before, after) == 0.0
    assert compiled.stateful and _state_error(model, compiled.state) == 0.0
    worst = 0.0
    for args in calls:
        worst = max(worst, max_abs_error(_eager_call(eager, args), compiled(*args)), _state_error(eager, compiled.state))
    assert worst <= TOLERANCE, worst
    return compiled, model, calls, worst


# (a counter, a value set on one path, a tensor and a tuple of tensors; appended lists: the
# corpus's BlockDropAgentNumpy)
@pytest.mark.parametrize("name", tiered(SEQUENCES, {"assigned_on_one_path", "counts_across_calls", "streaming_gru", "streaming_lstm_tuple"}))
def test_call_sequence_on_onnxruntime(name):
    compiled, model, calls, worst = _compiled_sequence(name, "onnxruntime")
    print(f"{name}: max abs error {worst:.3g} over {len(calls)} calls")
    assert_replays_after_reset(compiled, model, calls, _state_error, TOLERANCE)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_call_sequence_on_tvm(name):
    _compiled_sequence(name, "tvm")


def test_streaming_gru_state_is_the_module_attribute():
    """The streaming acceptance test: 20 chunks, then `compiled.state` is `model.hidden`."""
    factory, calls = SEQUENCES["streaming_gru"]
    model = _build(factory)
    eager = copy.deepcopy(model)
    compiled = dycl.compile(model, calls[0], progress=False)
    assert set(compiled.state) == {"hidden"} and compiled.state["hidden"] is None and model.hidden is None
    for args in calls:
        assert max_abs_error(_eager_call(eager, args), compiled(*args)) <= TOLERANCE
    assert torch.allclose(torch.from_numpy(compiled.state["hidden"]), eager.hidden, atol=TOLERANCE)


def test_state_survives_save_and_load(tmp_path):
    factory, calls = SEQUENCES["counted_exits"]
    model = _build(factory)
    eager = copy.deepcopy(model)
    compiled = dycl.compile(model, calls[0], progress=False)
    for args in calls[:4]:
        _eager_call(eager, args), compiled(*args)
    compiled.save(tmp_path / "artifact")
    loaded = dycl.load(tmp_path / "artifact")
    assert loaded.state["calls"] == 4 and _state_error(eager, loaded.state) <= TOLERANCE
    assert "state.npz" in loaded.manifest["files"] and "state_initial.npz" in loaded.manifest["files"]
    for args in calls[4:]:  # it goes on where the saved model stopped
        assert max_abs_error(_eager_call(eager, args), loaded(*args)) <= TOLERANCE
        assert _state_error(eager, loaded.state) <= TOLERANCE
    loaded.reset_state()
    assert loaded.state["calls"] == 0 and not loaded.state["warm"]
    # the state file is covered by the integrity check
    (tmp_path / "artifact" / "state.npz").write_bytes(b"tampered")
    with pytest.raises(dycl.ArtifactError, match="sha256"):
        dycl.load(tmp_path / "artifact")


def test_tuple_state_survives_save_and_load(tmp_path):
    """`compiled.state["state"]` is the LSTM's `(h, c)` tuple, saved in state.npz, and
    reset_state() makes it None again."""
    factory, calls = SEQUENCES["streaming_lstm_tuple"]
    model = _build(factory)
    eager = copy.deepcopy(model)
    compiled = dycl.compile(model, calls[0], progress=False)
    assert compiled.state == {"state": None}
    for args in calls[:3]:
        _eager_call(eager, args), compiled(*args)
    h, c = compiled.state["state"]
    assert h.shape == c.shape == (1, 1, 6) and _state_error(eager, compiled.state) <= TOLERANCE
    compiled.save(tmp_path / "artifact")
    loaded = dycl.load(tmp_path / "artifact")
    assert isinstance(loaded.state["state"], tuple) and _state_error(eager, loaded.state) <= TOLERANCE
    for args in calls[3:6]:
        assert max_abs_error(_eager_call(eager, args), loaded(*args)) <= TOLERANCE
    loaded.reset_state()
    assert loaded.state == {"state": None}


def test_attributes_set_together_share_their_none():
    """`self.h` and `self.c` are None together or not at all (one flag in the program):
    a state where only one of them is None is refused, never run on a guess."""
    from dycl.runtime.state import StateError, StateSlots

    factory, calls = SEQUENCES["streaming_cell_pair"]
    program = import_module(_build(factory), calls[0])
    slots = {slot["path"]: slot for slot in __import__("json").loads(program.function.attributes["dycl.state"].data)}
    assert slots["c"].get("present_with") == "h" or slots["h"].get("present_with") == "c"
    from dycl.interpreter import state_slots

    with pytest.raises(StateError, match="None together"):
        StateSlots(state_slots(program.function)).arguments({"h": np.zeros((2, 6), np.float32), "c": None})


def test_run_many_on_a_stateful_model_runs_the_requests_in_order():
    """Many requests at once on a streaming GRU: each request sees the state the one before
    it left, as 20 calls in a row do (batching them would give every chunk the same state)."""
    factory, calls = SEQUENCES["streaming_gru"]
    model = _build(factory)
    eager = copy.deepcopy(model)
    compiled = dycl.compile(model, calls[0], progress=False)
    outputs = compiled.run_many([tuple(args) for args in calls])
    for args, output in zip(calls, outputs):
        assert max_abs_error(_eager_call(eager, args), output) <= TOLERANCE
    assert torch.allclose(torch.from_numpy(compiled.state["hidden"]), eager.hidden, atol=TOLERANCE)


def test_a_stateful_model_is_not_reentrant_and_a_stateless_one_is():
    factory, calls = SEQUENCES["counts_across_calls"]
    compiled = dycl.compile(_build(factory), calls[0], progress=False)
    (name,) = compiled.subdnn_names or [None]
    inner = compiled.subdnn_calls
    seen = []

    def calls_itself(*args):  # a sub-DNN that calls the model again (as a second thread would)
        try:
            compiled(*calls[0])
        except RuntimeError as error:
            seen.append(str(error))
        return inner[name](*args)

    if name is None:  # no sub-DNN: re-enter through the host instead
        pytest.skip("no sub-DNN to re-enter from")
    reentrant = compiled.rebind({name: calls_itself})
    compiled = reentrant
    compiled(*calls[0])
    assert seen and "not re-entrant" in seen[0]
    # a model without state stays callable from many threads at once
    stateless = dycl.compile(torch.nn.Linear(3, 3).eval(), (torch.ones(1, 3),), progress=False)
    assert not stateless.stateful and stateless.state == {}
    errors = []

    def work():
        try:
            for _ in range(20):
                stateless(torch.ones(1, 3))
        except Exception as error:  # pragma: no cover - the failure is reported below
            errors.append(error)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors


def _marked_line(marker: str) -> int:
    lines = inspect.getsource(state_models).splitlines()
    return next(k for k, line in enumerate(lines, start=1) if f"line marker: {marker}" in line)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_state_that_cannot_be_carried_is_refused_at_its_line(name):
    factory, args, marker, words = REFUSED[name]
    model = factory().eval()
    before = {k: v for k, v in vars(model).items() if not k.startswith("_")}
    with pytest.raises(FrontendError) as info:
        import_module(model, args)
    error = info.value
    assert (error.file, error.line) == (state_models.__file__, _marked_line(marker)), str(error)
    assert words in str(error), str(error)
    assert "__attr" not in str(error) and "__item" not in str(error), str(error)
    after = {k: v for k, v in vars(model).items() if not k.startswith("_")}
    assert after.keys() == before.keys() and all(after[k] is before[k] for k in before)


def _sequence_error(eager_model, calls, call) -> float:
    worst = 0.0
    for args in calls:
        output, state = call(args)
        worst = max(worst, max_abs_error(_eager_call(eager_model, args), output), _state_error(eager_model, state))
    return worst


def test_an_is_none_test_tells_the_rest_of_its_and():
    """`self.cache_key is not None and torch.equal(x, self.cache_key)`: the right operand
    runs only where the key is a tensor, and knows it (it was refused: "not a tensor")."""
    model = _build(MemoizedEncoder)
    eager = copy.deepcopy(model)
    calls = memoized_calls()
    program = import_module(model, calls[0])
    weights = {k: torch.from_numpy(v) for k, v in program.weights.items()}
    state = program.state

    def call(args):
        nonlocal state
        output, state = run_call(program.module, args, weights, state, program.function_name)
        return output, state

    assert _sequence_error(eager, calls, call) <= TOLERANCE
    assert eager.hits == 3


@pytest.mark.slow
def test_an_is_none_test_tells_the_rest_of_its_and_on_onnxruntime():
    model = _build(MemoizedEncoder)
    eager = copy.deepcopy(model)
    calls = memoized_calls()
    compiled = dycl.compile(model, calls[0], progress=False)
    assert _sequence_error(eager, calls, lambda args: (compiled(*args), compiled.state)) <= TOLERANCE
