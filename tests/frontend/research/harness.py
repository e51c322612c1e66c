"""Build corpus models, find which path an eager run takes, compare compiled with eager.

The path of an eager run is, by default, the sequence of submodule calls it makes (forward
hooks on every submodule): exits, skipped blocks, chosen experts and decode lengths all show
in it. A model whose paths differ without different calls (numpy argmax over computed
outputs, masks mixed in arithmetic) defines `path_key(inputs, output, trace)`.
"""

from __future__ import annotations

import contextlib
import copy
import numbers

import numpy as np
import torch
import torch.nn as nn

from tests.frontend.research import decoders, early_exit, halting_routing, policy, skipping
from tests.frontend.research.common import randomize_bn

FAMILIES = (early_exit, skipping, policy, decoders, halting_routing)

# The constructs of issue 13 (item 3); every model lists the ones it uses in `CONSTRUCTS`.
CONSTRUCTS = {
    "np-on-tensor": "numpy on a tensor (`p.detach().cpu().numpy()`)",
    "np-on-list": "numpy on a list of 0-d tensors (`np.argmax(confs)`)",
    "np.argmax": "`np.argmax`",
    "np.max": "`np.max`",
    "np.mean": "`np.mean`",
    "np.array": "`np.array(lst)`",
    "np.where": "`np.where`",
    "self-attr": "a module attribute written in forward or a helper, then read",
    "init-hidden": "`self.hidden = self.init_hidden(b)` at the top of forward, read in a helper",
    "saved-actions": "`self.saved_actions.append(a)`",
    "cross-call-state": "module state carried from one call to the next (`if self.hidden is None:`, `self.steps += 1`, `self.h.data.zero_()`)",
    "del": "`del lst[-1]`",
    "pop": "`lst.pop()`",
    "slice[:-1]": "`lst[:-1]`",
    "insert(0)": "`lst.insert(0, m)`",
    "extend": "`lst.extend(other)`",
    ".data": "`.data`",
    ".detach()": "`.detach()`",
    ".cpu()": "`.cpu()`",
    ".to(device)": "`.to(x.device)`",
    "no_grad": "`with torch.no_grad():`",
    "Variable": "`torch.autograd.Variable(x)`",
    "list-arg": "a Python list of ints as a forward argument",
    "none-start": "a variable that starts as None (`logits = None`, `hx = None`)",
    "states-none-tuple": "an RNN called with `states=None` first and a tuple afterwards",
    "carry-structure": "a constant-trip loop whose carried value changes structure (None -> tuple)",
    "list-comp": "a list comprehension (`[head(h) for head in self.heads]`, `sum([l > t for l in lengths])`)",
    "genexp": "a generator expression (`any(c > t for c in ...)`, `sum(g * e(x) for ...)`)",
    "any": "`any(...)`",
    "all": "`all(...)`",
    "max-key": "`max(range(n), key=...)`",
    "masked-assign": "`p[p >= 0.5] = 1.0`",
    "relu_-in-branch": "`y.relu_()` in a branch",
    "index-assign": "`out[:, i] = v`",
    "augassign": "`t += v` on a tensor",
    "masked_fill_": "`mask.masked_fill_(...)`",
    "clamp_": "`x.clamp_(...)`",
    "inplace-relu": "`nn.ReLU(inplace=True)`",
    "view-store": "a store through a view (`v = y.view(-1); v[0] = 1`)",
    "forward-override": "an instance override `self.forward = self.early_exit`",
    "getattr-format": "`getattr(self, 'group{}_layer{}'.format(g, i))` in nested loops",
    "early-return": "`return` inside a loop",
    "mixed-return": "a return mixing tensors, ints and bools",
    "packed": "`pack_padded_sequence` with runtime lengths, an RNN on it, `pad_packed_sequence`",
    "data-size": "a size that depends on the data (`idx = mask.nonzero().squeeze(1)`, `x[idx]`, `out[idx] = v`)",
    "paired-state": "state kept in a tuple or in attributes set together (`out, self.state = self.lstm(x, self.state)`, `self.h`/`self.c` None until the first call)",
    "unique-repeat": "`torch.unique(..., return_inverse=True, return_counts=True)`, `repeat_interleave` with a tensor of repeats",
    "unentered-loop": "a runtime loop the example inputs never enter (one-word captions: zero decode steps)",
    "raise-caught": "an exception raised in a submodule or helper and caught up the call chain (`raise HighwayException(out, i + 1)`, `except HighwayException as e: e.message`)",
    "nested-def": "a function defined inside forward and called later (`def decode(tok, h): ...`, a closure over locals and `self`)",
    "dict": "a dict of runtime values (`return {\"logits\": y}`, `outputs[k] = v`, `{n: e(x) for n, e in d.items()}`)",
    "gate-list": "a plain list of submodules kept on the model (`self.gate_instances`, filled in `__init__`), read through in forward after each gate set an attribute (`[g.saved_action for g in self.gate_instances]`)",
    "helper-object": "a plain Python object built in forward, its methods called in later statements (`dispatcher = SparseDispatcher(n, gates)`, `dispatcher.dispatch(x)`)",
    "kind-change": "a loop-carried mask that enters as uint8 and comes back bool (`selector = x.data.new(b).byte()`, then `selector = (accum < 1 - eps).data`)",
    "one-path-alias": "an alias made on one path and written through (`cx = hx` when no state is given, then `hx[idx], cx[idx] = cell(...)`)",
}
MODELS = {cls.__name__: cls for family in FAMILIES for cls in family.MODELS}


def build(cls, seed: int | None = None) -> nn.Module:
    """The model with seeded weights (`WEIGHT_SEED` of the class, default 0), in eval mode."""
    seed = getattr(cls, "WEIGHT_SEED", 0) if seed is None else seed
    torch.manual_seed(seed)
    model = cls()
    randomize_bn(model, seed)
    return model.eval()


@contextlib.contextmanager
def trace_calls(model: nn.Module):
    """Record the qualified name of every submodule called, in order."""
    trace: list[str] = []
    handles = []
    for name, module in model.named_modules():
        if name:
            handles.append(module.register_forward_hook(lambda m, i, o, name=name: trace.append(name)))
    try:
        yield trace
    finally:
        for handle in handles:
            handle.remove()


def run_eager(model: nn.Module, inputs: tuple):
    """(output, path key) of one eager inference (no_grad, as inference scripts run)."""
    with trace_calls(model) as trace, torch.no_grad():
        output = model(*copy.deepcopy(inputs))
    key_fn = getattr(type(model), "path_key", None)
    key = key_fn(inputs, output, list(trace)) if key_fn is not None else tuple(trace)
    return output, key


def path_keys(cls) -> list:
    model = build(cls)
    return [run_eager(model, inputs)[1] for inputs in cls.path_inputs()]


def _normalize(value):
    if isinstance(value, np.generic):
        return value.item()
    return value


def max_error(expected, actual, where: str = "output") -> float:
    """Max abs difference of tensor leaves; containers must match in kind and length (dicts in
    keys and their order), tensors
    in shape and dtype, Python scalars in type and value."""
    expected, actual = _normalize(expected), _normalize(actual)
    if isinstance(expected, dict):
        assert type(actual) is dict and list(actual) == list(expected), f"{where}: expected keys {list(expected)}, got {actual!r}"
        return max([max_error(e, actual[k], f"{where}[{k!r}]") for k, e in expected.items()], default=0.0)
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and type(actual) is type(expected), (
            f"{where}: expected a {type(expected).__name__}, got {type(actual).__name__}: {actual!r}"
        )
        assert len(expected) == len(actual), f"{where}: length {len(actual)}, expected {len(expected)}"
        return max([max_error(e, a, f"{where}[{i}]") for i, (e, a) in enumerate(zip(expected, actual))], default=0.0)
    if isinstance(expected, torch.Tensor):
        if isinstance(actual, np.ndarray):
            actual = torch.from_numpy(actual)
        assert isinstance(actual, torch.Tensor), f"{where}: expected a tensor, got {type(actual).__name__}: {actual!r}"
        assert tuple(expected.shape) == tuple(actual.shape), f"{where}: shape {tuple(actual.shape)}, expected {tuple(expected.shape)}"
        assert expected.dtype == actual.dtype, f"{where}: dtype {actual.dtype}, expected {expected.dtype}"
        if expected.numel() == 0:
            return 0.0
        if expected.dtype == torch.bool or not expected.is_floating_point():
            assert torch.equal(expected, actual), f"{where}: {actual.tolist()} != {expected.tolist()}"
            return 0.0
        return (expected.double() - actual.double()).abs().max().item()
    if expected is None:
        assert actual is None, f"{where}: expected None, got {actual!r}"
        return 0.0
    assert isinstance(expected, (numbers.Number, str)), f"{where}: unexpected leaf {type(expected).__name__}"
    assert type(actual) is type(expected), f"{where}: {type(actual).__name__} {actual!r}, expected {type(expected).__name__} {expected!r}"
    if isinstance(expected, float):
        assert abs(expected - actual) <= 1e-4, f"{where}: {actual!r} != {expected!r}"
        return abs(expected - actual)
    assert expected == actual, f"{where}: {actual!r} != {expected!r}"
    return 0.0


def calibrate(cls, make, candidates, limit: int | None = None, seed: int | None = None):
    """Pick candidates (passed to `make` to get argument tuples) that reach new path keys."""
    model = build(cls, seed)
    seen, picked = {}, []
    for candidate in candidates:
        try:
            _, key = run_eager(model, make(candidate))
        except Exception as error:  # noqa: BLE001 - calibration reports, the test asserts
            key = f"error: {type(error).__name__}: {error}"
        if key not in seen:
            seen[key] = candidate
            picked.append(candidate)
            if limit and len(seen) >= limit:
                break
    return seen, picked
