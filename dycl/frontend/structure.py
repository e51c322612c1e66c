"""Structural evaluation: what Python computes from the *shape* of values whose items are
only known at runtime, such as a forward argument `lengths: list[int]` (a fixed-length list
of runtime ints).

`for l in lengths`, `enumerate(lengths)`, `zip(lengths, self.heads)`, `range(len(lengths))`,
`lengths[1:]` depend only on how many items there are, never on their values: they are
evaluated in Python with every runtime leaf replaced by an opaque `Leaf` token, and the
tokens are mapped back to their values afterwards. Anything that looks inside a token
(arithmetic, comparison, a call other than the structural builtins below) fails, and the
expression is compiled the ordinary way.
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

from dycl.frontend import values as V

# Builtins that only look at the structure of their arguments.
STRUCTURAL_CALLS = frozenset({"len", "range", "enumerate", "zip", "reversed", "list", "tuple"})
DICT_VIEWS = frozenset({"items", "keys", "values"})


class Leaf:
    """Stands for a runtime value inside a structurally evaluated expression."""

    __slots__ = ("value",)

    def __init__(self, value: V.EnvValue):
        self.value = value


def is_structural(expr: ast.expr) -> bool:
    """Only names, attributes, subscripts, constants and calls of structural builtins."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Attribute) and node.func.attr in DICT_VIEWS and not (node.args or node.keywords):
                continue  # `d.items()`: a dict's keys are known, its values are tokens
            if not (isinstance(node.func, ast.Name) and node.func.id in STRUCTURAL_CALLS):
                return False
        elif not isinstance(
            node,
            (ast.Name, ast.Attribute, ast.Subscript, ast.Slice, ast.Constant, ast.Tuple, ast.List,
             ast.Load, ast.UnaryOp, ast.USub, ast.BinOp, ast.Add, ast.Sub, ast.keyword),
        ):
            return False
    return True


class ListToken(list):
    """Stands for a list value (`V.Tup` of kind list) inside a structurally evaluated
    expression; it maps back to that very value, so that `g = groups[0]` binds `g` to the
    list `groups` holds (a slice or `list(...)` is a new plain list, as in Python)."""

    __slots__ = ("origin",)

    def __init__(self, items, origin: V.Tup):
        super().__init__(items)
        self.origin = origin


class DictToken(dict):
    """Stands for a dict value (`V.Tup` of a `DictKind`): `d["logits"]` is its item's value."""

    __slots__ = ("origin",)

    def __init__(self, items, origin: V.Tup):
        super().__init__(items)
        self.origin = origin


def tokens(value: V.EnvValue, memo: dict[int, Any] | None = None) -> Any:
    """The Python value an expression sees: constants as they are, runtime leaves as tokens.
    `memo` (id of a value -> its token) makes one list value one Python list wherever it occurs."""
    memo = {} if memo is None else memo
    if isinstance(value, V.Const):
        return value.value
    if isinstance(value, V.Tup):
        if id(value) in memo:
            return memo[id(value)]
        items = [tokens(item, memo) for item in value.items]
        if isinstance(value.kind, V.DictKind):
            token = DictToken(zip(value.kind.keys, items), value)
        else:
            token = ListToken(items, value) if value.kind == "list" else tuple(items)
        memo[id(value)] = token
        return token
    return Leaf(value)


def has_leaf(obj: Any) -> bool:
    if isinstance(obj, (Leaf, ListToken, DictToken)):
        return True
    if isinstance(obj, (list, tuple)):
        return any(has_leaf(o) for o in obj)
    if isinstance(obj, dict):
        return any(has_leaf(o) for o in obj.values())
    return False


def has_list_token(obj: Any) -> bool:
    """Whether a structurally evaluated value holds a list value (not only runtime leaves)."""
    if isinstance(obj, ListToken):
        return True
    return isinstance(obj, (list, tuple)) and any(has_list_token(o) for o in obj)


def env_value(obj: Any) -> Any:
    """Tokens back to their values: a tuple or list holding tokens becomes a `V.Tup`; a
    value without tokens stays a plain Python value (bound as a constant)."""
    if isinstance(obj, Leaf):
        return obj.value
    if isinstance(obj, (ListToken, DictToken)):
        return obj.origin
    if isinstance(obj, dict) and has_leaf(obj):
        return V.dict_value({k: as_env_value(o) for k, o in obj.items()})
    if isinstance(obj, (list, tuple)) and has_leaf(obj):
        return V.Tup(tuple(as_env_value(o) for o in obj), "list" if isinstance(obj, list) else "tuple")
    return obj


def as_env_value(obj: Any) -> V.EnvValue:
    value = env_value(obj)
    return value if isinstance(value, (V.Const, V.Dyn, V.Tup, V.Maybe)) else V.Const(value)


def is_builtin_namespace_clean(namespace: dict) -> bool:
    """The structural builtins are Python's own in this scope (not shadowed)."""
    return all(namespace.get(name, getattr(builtins, name)) is getattr(builtins, name) for name in STRUCTURAL_CALLS)
