"""Which variables share memory, read off the example values.

Every run executes eagerly on the example values of its inputs before it is captured, so
the examples alias each other exactly as the program's tensors do on that path: `z = y`
binds the same tensor, `v = y.view(-1)` a view of its storage. When a run mutates a
tensor in place, every live variable whose example shares that storage changes too:

- a variable bound to the same memory (same storage, offset, sizes and strides) gets the
  mutated tensor's new value;
- a variable that sees the storage through a different view, a list that holds the tensor,
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


def mark_path_dependent(value: V.EnvValue, memory: frozenset) -> V.EnvValue:
    """The same value, its tensor leaves marked as maybe sharing `memory` (path-dependent)."""
    if isinstance(value, V.Tup):
        return V.Tup(tuple(mark_path_dependent(i, memory) for i in value.items), value.kind)
    if isinstance(value, V.Dyn) and memory and not memory <= value.may_share:
        return V.Dyn(value.value, value.type, value.example, value.may_share | memory)
    return value


class WeightGuard:
    """Notices when running user code on example values changed a parameter or buffer in
    place, and puts the original values back (the frontend then refuses the model)."""

    def __init__(self, model: torch.nn.Module):
        self.weights = [
            (name, tensor, tensor._version, tensor.detach().clone())
            for name, tensor in [*model.named_parameters(), *model.named_buffers()]
        ]
        self.memory = {storage_of(t): name for name, t, _, _ in self.weights}
        self.memory.pop(None, None)

    def changed(self) -> str | None:
        first = None
        for name, tensor, version, original in self.weights:
            if tensor._version != version:
                with torch.no_grad():
                    tensor.copy_(original)
                first = first or name
        if first is not None:  # copying back counts as a change too
            self.weights = [(n, t, t._version, o) for n, t, _, o in self.weights]
        return first
