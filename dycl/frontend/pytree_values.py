"""Library objects that torch.export takes apart as pytree nodes (a transformers
`DynamicCache`, a `ModelOutput`): frontend values whose leaves are tensors.

Such an object is a `values.Tup` of kind `NodeKind` (its Python type and the pytree
context that rebuilds it); its items are its pytree children, converted as any run result
is. A run gets the object itself, rebuilt from its children (`python_container`), so that
`outputs.logits` or `cache.get_seq_length()` inside a run is the library's own code; two
such values join, or are carried by a loop, when their kinds are equal (one structure),
leaf by leaf. Python's builtin containers keep their own kinds (tuple, list, dict)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch.utils._pytree as pytree

from dycl.frontend import values as V

@dataclass(frozen=True, eq=False)
class NodeKind:
    """The kind of a `Tup` that is a registered pytree node of a library type."""

    type: type
    context: Any

    def __eq__(self, other) -> bool:
        return isinstance(other, NodeKind) and self.type is other.type and self.context == other.context

    def __hash__(self) -> int:
        return hash(self.type)

    def __str__(self) -> str:
        return self.type.__name__

    def build(self, children: list):
        """The Python object of this kind holding `children` (pytree's own unflatten)."""
        return pytree.SUPPORTED_NODES[self.type].unflatten_fn(children, self.context)


def is_node(obj) -> bool:
    """Whether `obj` is an object of a registered pytree type of a library (not a builtin
    container, a namedtuple or another tuple, which the frontend keeps as a tuple)."""
    return type(obj) in pytree.SUPPORTED_NODES and _is_library_type(type(obj))


def children(obj) -> tuple[list, NodeKind]:
    """`obj`'s pytree children and its kind."""
    items, context = pytree.SUPPORTED_NODES[type(obj)].flatten_fn(obj)
    return list(items), NodeKind(type(obj), context)


def structured(spec: pytree.TreeSpec, leaves: list):
    """`tree_unflatten(leaves, spec)`, except that a library node becomes a `Tup` of kind
    `NodeKind` around its structured children rather than the library's object (whose
    constructor would see frontend values)."""
    it = iter(leaves)

    def visit(node: pytree.TreeSpec):
        if node.is_leaf():
            return next(it)
        items = [visit(child) for child in node.children()]
        if node.type in pytree.SUPPORTED_NODES and _is_library_type(node.type):
            return V.Tup(tuple(items), NodeKind(node.type, node.context))
        return pytree.SUPPORTED_NODES[node.type].unflatten_fn(items, node.context)

    return visit(spec)


def _is_library_type(kind) -> bool:
    """(A namedtuple's node type is `collections.namedtuple` itself, not a class.)"""
    return isinstance(kind, type) and not issubclass(kind, (tuple, list)) and kind.__module__.partition(".")[0] not in ("collections", "builtins")


def snapshot(objects) -> dict[int, tuple]:
    """The library objects among a run's example inputs (by id), with their leaves' ids."""
    return {id(obj): (obj, _leaf_ids(obj)) for obj in objects if is_node(obj)}


def changed(snapshots: dict[int, tuple], renewed: set[int], values_by_object: dict):
    """The value of an object the run changed (its leaves are other tensors now: a cache
    the model appended to) that the run did not return as a result (`renewed`: the values
    its results replaced), or None. Such a change is invisible to the host program."""
    for key, (obj, before) in snapshots.items():
        value = values_by_object.get(key)
        if _leaf_ids(obj) != before and id(value) not in renewed:
            return value
    return None


def _leaf_ids(obj) -> tuple:
    leaves, spec = pytree.tree_flatten(obj)
    return (str(spec), *map(id, leaves))


def holds(value, part) -> bool:
    """Whether `value` is `part` or holds it in its items."""
    return value is part or isinstance(value, V.Tup) and any(holds(item, part) for item in value.items)
