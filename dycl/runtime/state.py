"""The state a compiled model keeps from one call to the next (numpy only).

The frontend makes each module attribute that forward carries across calls a slot of the host
function (docs/conventions.md, "State that outlives a call"): the manifest's `state.slots`
say, per attribute path, its kind, the host arguments it enters as and the output tree of
the results it leaves as. This module turns stored values into those arguments and the
results back into values:

- `tensor`, `int`, `float`, `bool`: one argument, the value; the result replaces it;
- `optional` (None or a tensor): two arguments, whether it is present and the tensor (zeros
  of the slot's type where it is None); the result (None or a tensor) replaces it;
- `tuple` (a tuple of tensors: an LSTM's `(h, c)`): one argument per item, each of the
  dtype and shape of the slot's `items`; the result (a tuple) replaces it;
- `optional_tuple` (None or such a tuple): whether it is present, then the items (zeros
  where it is None);
- `append` (a list forward only appends to): no argument; the result is the list of what
  the call appended, added to the stored list;
- `none`: an attribute that stays None; nothing enters or leaves.

A `tensor` slot marked `in_place` is one whose buffer the host program gives to the sub-DNN
that writes it (`rt.in_place`: the new value is written into the old one's buffer). Its
array must be the state's alone (`keep_own`).

An optional slot with `present_with` (another slot's path) is None exactly when that one
is: the program reads one flag for both (two attributes that start None together and are
set together, `self.h` and `self.c`), and a state where they disagree is refused.

Values are saved as one `.npz`: the arrays, and under `__tree__` a JSON string of each
path's value as a tree (`{"array": "a0"}`, `{"int": 3}`, `{"none": []}`, `{"list": [...]}`,
`{"tuple": [...]}`), so that a file holds any state without pickles.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from dycl.runtime.outputs import unflatten

TREE_KEY = "__tree__"
_ARITY = {"tensor": 1, "int": 1, "float": 1, "bool": 1, "optional": 2, "append": 0, "none": 0}


def _arity(slot: Mapping[str, Any]) -> int:
    items = len(slot.get("items", ()))
    return {"tuple": items, "optional_tuple": 1 + items}.get(slot["kind"], _ARITY.get(slot["kind"], 0))


class StateError(TypeError):
    """A state value that does not fit its slot."""


class StateSlots:
    """The slots of one artifact (the manifest's `state.slots`)."""

    def __init__(self, slots: list[Mapping[str, Any]]):
        self.slots = list(slots)
        self.argument_count = sum(_arity(s) for s in self.slots)

    @property
    def paths(self) -> list[str]:
        return [s["path"] for s in self.slots]

    def arguments(self, state: Mapping[str, Any]) -> list:
        """The host function's state arguments, slot by slot (after the model's inputs)."""
        args: list = []
        for slot in self.slots:
            value, kind = state[slot["path"]], slot["kind"]
            if kind == "tensor":
                args.append(_array(slot, value))
            elif kind in ("int", "float", "bool"):
                args.append(value)
            elif kind == "optional":
                present = value is not None
                args += [present, _array(slot, value) if present else np.zeros(slot["shape"], dtype=slot["dtype"])]
            elif kind == "tuple":
                args += _items(slot, value)
            elif kind == "optional_tuple":
                present = value is not None
                items = _items(slot, value) if present else [np.zeros(i["shape"], dtype=i["dtype"]) for i in slot["items"]]
                args += [present, *items]
            leader = slot.get("present_with")
            if leader is not None and (value is None) != (state[leader] is None):
                raise StateError(f"state '{slot['path']}' and '{leader}' are None together or not at all "
                                 f"(the model sets them together), got {'None' if value is None else 'a value'} and "
                                 f"{'None' if state[leader] is None else 'a value'}")
        return args

    def keep_own(self, state: dict[str, Any], inputs: tuple, results: tuple) -> None:
        """Make each `in_place` slot's array (one whose buffer the host program gives to the
        sub-DNN that writes it) the state's own, in place: an array that shares memory with
        the call's inputs, another result (an output the caller keeps) or another slot is
        copied, so that the next call, writing into it, changes nothing anyone else holds. A
        slot marked `own_result` needs no check: the host program proves its new value is an
        array the runtime made that it returns once and nothing else holds."""
        for slot in self.slots:
            if not slot.get("in_place") or slot.get("own_result"):
                continue
            value = state[slot["path"]]
            if not isinstance(value, np.ndarray):
                continue
            others = [a for k, a in enumerate(results) if k != slot["tree"]]
            others += list(inputs) + [state[s["path"]] for s in self.slots if s is not slot]
            if any(isinstance(a, np.ndarray) and np.may_share_memory(a, value) for a in others):
                state[slot["path"]] = value.copy()

    def update(self, state: dict[str, Any], results: tuple) -> None:
        """The state after a call, from the host function's results (in place)."""
        for slot in self.slots:
            if slot["kind"] == "none":
                continue
            value = unflatten(slot["tree"], results)
            if slot["kind"] == "append":
                state[slot["path"]] = [*state[slot["path"]], *value]
            else:
                state[slot["path"]] = value


def _items(slot: Mapping[str, Any], value: Any) -> list[np.ndarray]:
    """A tuple slot's items, each checked against its dtype and shape."""
    items = slot["items"]
    if not isinstance(value, (tuple, list)) or len(value) != len(items):
        raise StateError(f"state '{slot['path']}': expected a tuple of {len(items)} tensors, got {type(value).__name__}")
    return [_array({**item, "path": f"{slot['path']}[{k}]"}, v) for k, (item, v) in enumerate(zip(items, value))]


def _array(slot: Mapping[str, Any], value: Any) -> np.ndarray:
    value = np.asarray(value)
    if value.dtype != np.dtype(slot["dtype"]) or list(value.shape) != list(slot["shape"]):
        raise StateError(
            f"state '{slot['path']}': expected a {slot['dtype']} tensor of shape {list(slot['shape'])}, "
            f"got a {value.dtype} tensor of shape {list(value.shape)}"
        )
    return value


# ----- saving and loading -------------------------------------------------------------


def to_bytes(state: Mapping[str, Any]) -> bytes:
    """The `.npz` of a state (path -> value)."""
    arrays: dict[str, np.ndarray] = {}

    def encode(value):
        if value is None:
            return {"none": []}
        if isinstance(value, (bool, np.bool_)):
            return {"bool": bool(value)}
        if isinstance(value, (int, np.integer)):
            return {"int": int(value)}
        if isinstance(value, (float, np.floating)):
            return {"float": float(value)}
        if isinstance(value, (list, tuple)):
            return {"list" if isinstance(value, list) else "tuple": [encode(v) for v in value]}
        key = f"a{len(arrays)}"
        arrays[key] = as_numpy(value)
        return {"array": key}

    trees = {path: encode(value) for path, value in state.items()}
    buffer = io.BytesIO()
    np.savez(buffer, **{TREE_KEY: np.array(json.dumps(trees))}, **arrays)
    return buffer.getvalue()


def from_file(path) -> dict[str, Any]:
    with np.load(path, allow_pickle=False) as stored:
        arrays = {key: stored[key] for key in stored.files}
    trees = json.loads(str(arrays.pop(TREE_KEY)))

    def decode(tree):
        (kind, value), = tree.items()
        if kind == "none":
            return None
        if kind in ("bool", "int", "float"):
            return value
        if kind == "array":
            return arrays[value]
        items = [decode(v) for v in value]
        return items if kind == "list" else tuple(items)

    return {path: decode(tree) for path, tree in trees.items()}


def as_numpy(value: Any) -> np.ndarray:
    detach = getattr(value, "detach", None)  # a torch tensor (torch is never imported here)
    return detach().cpu().numpy() if detach is not None else np.asarray(value)


def copy_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """A copy the caller may change without changing the model's state."""

    def copy(value):
        if isinstance(value, np.ndarray):
            return value.copy()
        if isinstance(value, list):
            return [copy(v) for v in value]
        if isinstance(value, tuple):
            return tuple(copy(v) for v in value)
        return value

    return {path: copy(value) for path, value in state.items()}


__all__ = ["StateSlots", "StateError", "to_bytes", "from_file", "copy_state", "as_numpy"]
