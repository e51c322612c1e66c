"""Gates kept in a plain list on the model (issue 34, item 9.1): `self.gate_instances`,
filled in `__init__` (directly or by a helper of `__init__`), is a constant list of modules,
as a `ModuleList` is; an attribute each gate sets in its forward (`self.saved_action =
action`) and forward then reads through the list (`[g.saved_action for g in
self.gate_instances]`, a loop over it, `self.gate_instances[-1].saved_prob`) is that gate's
attribute variable of the call (before: refused as "a list kept from one call to the next").

Read before the gates run in the call, the attribute is the value the previous call left:
state kept across calls, compiled as such and compared call by call. A change of the list
itself in forward is refused at its line.
"""

from __future__ import annotations

import copy
import inspect

import pytest
import torch

import dycl
from tests.frontend import gate_list_models as M
from tests.frontend.helpers import compiled_error, eager, max_abs_error, seeded_model, tiered

CASES = {
    "skipnet_gate_instances": (M.SkipNetGateList, M.skipnet_inputs),
    "helper_collected_gates": (M.RoutedBlocks, M.routed_inputs),
}


def _every_path(name: str, model, args_list) -> None:
    """The inputs take each path (each gate on and off, several patterns)."""
    patterns = {tuple(eager(model, args)[1].flatten().tolist()) for args in args_list}
    assert len(patterns) >= 3, patterns
    for k in range(len(next(iter(patterns)))):
        assert {p[k] for p in patterns} == {0.0, 1.0}, (name, k, patterns)


def _compiled_error(name: str, backend: str) -> float:
    factory, inputs = CASES[name]
    model = seeded_model(factory)
    args_list = inputs()
    _every_path(name, model, args_list)
    return compiled_error(model, args_list, backend)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gate_list_on_onnxruntime(name):
    assert _compiled_error(name, "onnxruntime") <= 1e-5


@pytest.mark.parametrize("name", tiered(CASES, set()))
def test_gate_list_on_tvm(name):
    assert _compiled_error(name, "tvm") <= 1e-5


def _previous_actions_error(backend: str) -> float:
    """Call by call against one eager copy: each call reads what the one before left."""
    model = seeded_model(M.PreviousActions)
    calls = M.previous_inputs()
    reference = copy.deepcopy(model)
    compiled = dycl.compile(model, calls[0], backend=backend, progress=False)
    worst, seen = 0.0, set()
    for args in calls:
        before = tuple(g.saved_action.item() for g in reference.gate_instances)
        seen.add(before)
        with torch.no_grad():
            expected = reference(*[a.clone() for a in args])
        worst = max(worst, max_abs_error(expected, compiled(*args)))
        for k, gate in enumerate(reference.gate_instances):
            state = compiled.state[f"gates.{k}.saved_action"]
            worst = max(worst, max_abs_error(gate.saved_action, torch.as_tensor(state)))
    assert len(seen) >= 3, seen  # (calls that start from different previous actions)
    return worst


def test_actions_of_the_previous_call_are_state_on_onnxruntime():
    assert _previous_actions_error("onnxruntime") <= 1e-5


@pytest.mark.slow
def test_actions_of_the_previous_call_are_state_on_tvm():
    assert _previous_actions_error("tvm") <= 1e-5


def test_changing_the_gate_list_in_forward_is_refused_at_its_line():
    model = M.AppendsToGateList().eval()
    with pytest.raises(dycl.FrontendError) as refused:
        dycl.compile(model, (torch.randn(1, 4),), backend="onnxruntime", progress=False)
    lines, first = inspect.getsourcelines(M.AppendsToGateList.forward)
    assert refused.value.line == first + 2, refused.value
    assert "self.gate_instances" in str(refused.value) and "module state" in str(refused.value)
    assert model.gate_instances == [model.gate]  # (compiling did not change the model's list)
