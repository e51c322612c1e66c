"""Which variables share memory, read off the example values.

Every run executes eagerly on the example values of its inputs before it is captured, so
the examples alias each other exactly as the program's tensors do on that path: `z = y`
binds the same tensor, `v = y.view(-1)` a view of its storage. When a run mutates a
tensor in place, every live variable whose example shares that storage changes too:

- a variable bound to the same memory (same storage, offset, sizes and strides) gets the
  mutated tensor's new value;
- a variable that sees the storage through a different view gets its new value computed
  from the mutated tensor's, when one of the two is a contiguous tensor that covers the
  other (`v = hist.view(-1)`, later `v[i] = c`: `hist`'s elements at `v`'s positions);
- a variable that sees it through another view, a list that holds the tensor,
  a forward input or a weight, or a value whose aliasing depends on the path taken
  (`Dyn.alias_unknown`, set at joins), is refused: no exact value-semantics rewrite exists
  for it here.
"""

from __future__ import annotations

import torch

from dycl.frontend import values as V


def storage_of(tensor) -> int | None:
    """An id of the memory a tensor example lives in (None for empty or non-tensors)."""
    if not isinstance(tensor, torch.Tensor) or tensor.numel() == 0:
        return None
    try:
        pointer = tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return None
    return pointer or None


def geometry(tensor: torch.Tensor) -> tuple:
    """The exact memory a tensor covers: equal geometry means the same values."""
    return (storage_of(tensor), tensor.storage_offset(), tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype)


def positions_in(inner: torch.Tensor, outer: torch.Tensor) -> torch.Tensor | None:
    """Where each element of the view `inner` lies in the contiguous tensor `outer` that
    covers it (same storage and dtype): flat positions of `outer.reshape(-1)`, in `inner`'s
    order; an empty tensor when the two share no element. None when `outer` is not
    contiguous, or covers only part of `inner`."""
    if outer.dtype != inner.dtype or storage_of(outer) != storage_of(inner) or not outer.is_contiguous():
        return None
    positions = torch.full(inner.shape, inner.storage_offset() - outer.storage_offset(), dtype=torch.long)
    for dim, (size, stride) in enumerate(zip(inner.shape, inner.stride())):
        shape = [1] * inner.dim()
        shape[dim] = size
        positions = positions + (torch.arange(size) * stride).reshape(shape)
    inside = (positions >= 0) & (positions < outer.numel())
    if not inside.any():
        return positions.new_empty(0)
    return positions.reshape(-1) if inside.all() else None


def tensor_examples(value: V.EnvValue) -> list[torch.Tensor]:
    """Example tensors a variable holds: its own, its tuple leaves', a runtime list's items."""
    found = []
    for leaf in V.leaves(value):
        if isinstance(leaf, V.Dyn):
            if isinstance(leaf.example, torch.Tensor):
                found.append(leaf.example)
            elif isinstance(leaf.example, list):
                found.extend(e for e in leaf.example if isinstance(e, torch.Tensor))
    return found


def alias_group(env: dict, name: str, names) -> frozenset:
    """The other variables among `names` whose examples share memory with `name`'s, each
    with whether it is the very same memory: the aliasing a join must agree on."""
    mine = {storage_of(t): geometry(t) for t in tensor_examples(env.get(name, V.UNDEF))}
    mine.pop(None, None)
    if not mine:
        return frozenset()
    group = set()
    for other in names:
        if other == name:
            continue
        for tensor in tensor_examples(env.get(other, V.UNDEF)):
            storage = storage_of(tensor)
            if storage in mine:
                group.add((other, geometry(tensor) == mine[storage]))
    return frozenset(group)


def storages(value: V.EnvValue) -> frozenset:
    found = {storage_of(t) for t in tensor_examples(value)}
    found.discard(None)
    return frozenset(found)


def path_dependent_memory(*values: V.EnvValue) -> frozenset:
    """The memory that any of `values` shares on some paths only (their `may_share`): a value
    joined or carried from them inherits it (fuzz seed 86972: a second `if` lost the mark
    of the first, and an in-place change on the aliasing path was silently wrong)."""
    found = frozenset()
    for value in values:
        for leaf in V.leaves(value):
            if isinstance(leaf, V.Dyn):
                found |= leaf.may_share
    return found


def placed_by_runtime_int(inputs: list[V.Dyn]):
    """For a run that reads a runtime int: the memory a result shares with an input as
    another view of it (`x[:k]`, `x[i]`, placed by the int), which `Dyn.may_share` marks:
    an in-place change through that view, or of its tensor while it lives, is refused."""
    views: dict = {}
    for leaf in inputs:
        memory = storage_of(leaf.example)
        if memory is not None:
            views.setdefault(memory, set()).add(geometry(leaf.example))

    def placed(example) -> frozenset:
        memory = storage_of(example) if isinstance(example, torch.Tensor) else None
        if memory is None or memory not in views or geometry(example) in views[memory]:
            return frozenset()
        return frozenset({memory})
    return placed


def mark_path_dependent(value: V.EnvValue, memory: frozenset) -> V.EnvValue:
    """The same value, its tensor leaves marked as maybe sharing `memory` (path-dependent)."""
    if not memory:
        return value  # (the very value: a list held in two places stays one list)
    if isinstance(value, V.Tup):
        items = tuple(mark_path_dependent(i, memory) for i in value.items)
        return value if all(a is b for a, b in zip(items, value.items)) else V.Tup(items, value.kind)
    if isinstance(value, V.Maybe):
        inner = mark_path_dependent(value.value, memory)
        return value if inner is value.value else V.Maybe(value.present, inner)
    if isinstance(value, V.Dyn) and memory and not memory <= value.may_share:
        return V.Dyn(value.value, value.type, value.example, value.may_share | memory)
    return value


class StateGuard:
    """Notices when running user code on example values changed the model: a parameter or
    buffer in place, an attribute rebound (`self.hidden = h` in a helper that runs inside a
    captured block), a list/dict/set attribute changed (`self.saved_actions.append(a)`).
    Such state outlives the call, which a compiled model cannot reproduce: everything is put
    back as it was and the frontend refuses the statement."""

    def __init__(self, model: torch.nn.Module):
        self.weights = [
            (name, tensor, tensor._version, tensor.detach().clone())
            for name, tensor in [*model.named_parameters(), *model.named_buffers()]
        ]
        self.memory = {storage_of(t): name for name, t, _, _ in self.weights}
        self.memory.pop(None, None)
        self.modules = [(prefix, module) for prefix, module in model.named_modules()]
        self.attributes = self._attributes()

    def snapshot(self) -> None:
        """What `changed` compares with: taken right before user code runs (export, between
        runs, may rebuild attributes such as a conv's `kernel_size` tuple; that is no change)."""
        self.attributes = self._attributes()

    def _attributes(self) -> dict:
        """(module path, attribute) -> (the object, a shallow copy of a container)."""
        state = {}
        for prefix, module in self.modules:
            for key, value in module.__dict__.items():
                if key.startswith("_") and key not in ("_parameters", "_buffers", "_modules"):
                    continue
                state[(prefix, key)] = (value, _shallow_copy(value))
        return state

    def changed(self) -> str | None:
        """The first weight or attribute that changed (as `self.<path>`), after restoring all."""
        first = None
        for name, tensor, version, original in self.weights:
            if tensor._version != version:
                with torch.no_grad():
                    tensor.copy_(original)
                first = first or f"self.{name}"
        if first is not None:  # copying back counts as a change too
            self.weights = [(n, t, t._version, o) for n, t, _, o in self.weights]
        now = self._attributes()
        for (prefix, key), (value, copy) in self.attributes.items():
            current = now.get((prefix, key))
            if current is not None and current[0] is value and _same_items(copy, current[1]):
                continue
            first = first or "self." + ".".join(p for p in (prefix, key.lstrip("_")) if p)
            module = dict(self.modules)[prefix]
            module.__dict__[key] = value
            if copy is not None:
                _put_back(value, copy)
        for (prefix, key) in now.keys() - self.attributes.keys():
            first = first or f"self.{'.'.join(p for p in (prefix, key) if p)}"
            del dict(self.modules)[prefix].__dict__[key]
        return first


def _same_items(a, b) -> bool:
    if a is None or b is None:
        return a is b
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(a[k] is b[k] for k in a)
    if isinstance(a, set):
        return a == b
    return len(a) == len(b) and all(x is y for x, y in zip(a, b))


class GlobalsGuard:
    """Notices when running user code on example values changed a list, dict or set that a
    global (or closure) name of the compiled function holds (`HISTORY.append(x.sum())`): like
    module state, it outlives the call, and a captured block would change it once, while
    compiling. Put back as it was; the frontend refuses the statement."""

    def __init__(self, namespace: dict):
        self.held = [
            (name, value, _shallow_copy(value))
            for name, value in namespace.items()
            if isinstance(value, (list, dict, set)) and not name.startswith("__")
        ]

    def changed(self) -> str | None:
        """The first such name whose container changed, after putting every one back."""
        first = None
        for name, value, copy in self.held:
            if not _same_items(copy, value):
                first = first or name
                _put_back(value, copy)
        return first


def _shallow_copy(value):
    """A copy of a list, dict or set's items (None for anything else)."""
    for kind in (list, dict, set):
        if isinstance(value, kind):
            return kind(value)
    return None


def _put_back(container, copy) -> None:
    """`container` holds `copy`'s items again (the same object: its holders see it)."""
    container.clear()
    container.extend(copy) if isinstance(container, list) else container.update(copy)
