"""Sets and `sorted` of runtime ints on the host (issue 34, item 9.2).

Research code does index bookkeeping with Python sets: a beam search's `done = set(range(b))
- set(finished)`, then `for i in sorted(done):`; a router's `len(set(chosen))`. The host
program is Python, so such values can live there, computed by the loops Python's own
definitions amount to, which the frontend compiles as any host code (`compiled`):

- a set of runtime ints is kept as the *sorted list of its distinct items* (`SortedSet`).
  `sorted(s)`, `len(s)`, `k in s` and the set operators `-`, `&`, `|`, `^` only depend on
  which items it holds, so they are exact on that list;
- iterating a set in any other way (`for i in s`, `list(s)`, `s.pop()`) follows CPython's
  hash table, whose order depends on the table's size and history (`{9, 3}` iterates 9 first
  in a table of 8), so it is refused: "iterate `sorted(s)`". Which uses a name bound to a
  set has is checked in the whole function (`check_uses`), as for `np.where`'s index list;
- `sorted(lst)` of a runtime list of ints (`reverse=True` too) is an insertion sort, stable
  as Python's (equal ints are indistinguishable anyway). Floats are refused: with a NaN,
  Python's order is its algorithm's.

Only ints are accepted (bools, floats and tensors are refused at the line): two equal ints
are one item, as in Python's set.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

from dycl.frontend import list_ops, lists, nodes
from dycl.frontend import values as V
from dycl.frontend.desugar import display_name, resolve, source_text
from dycl.frontend.rewrite import fresh_id, lower

SET_OPERATORS = {ast.Sub: "-", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^"}
_ORDER_FREE = (builtins.sorted, builtins.len, builtins.set, builtins.frozenset, builtins.bool)


@dataclass(frozen=True)
class SortedSet(V.Dyn):
    """A set of runtime ints, as the runtime list of its distinct items in ascending order."""


# ----- the algorithms, as the Python the host runs ---------------------------------------

# the distinct items of `__src`, ascending: each item put in after the smaller ones kept
_DISTINCT = """\
__out = list(__none)
for __v in __src:
    __seen = False
    __low = list(__none)
    __high = list(__none)
    for __w in __out:
        if __w < __v:
            __low.append(__w)
        elif __w == __v:
            __seen = True
        else:
            __high.append(__w)
    if not __seen:
        __low.append(__v)
        __low.extend(__high)
        __out = __low
"""

# every item of `__src`, ascending (descending with `reverse`), equal items in their order
_SORTED = """\
__out = list(__none)
for __v in __src:
    __low = list(__none)
    __high = list(__none)
    for __w in __out:
        if __w {keep} __v:
            __low.append(__w)
        else:
            __high.append(__w)
    __low.append(__v)
    __low.extend(__high)
    __out = __low
"""

# the items of `__a` that are (`__found`) or are not (`not __found`) in `__b`
_FILTERED = """\
__out = list(__none)
for __v in __a:
    __found = False
    for __w in __b:
        if __w == __v:
            __found = True
    if {test}:
        __out.append(__v)
"""

_CONTAINS = """\
__out = False
for __w in __b:
    if __w == __v:
        __out = True
"""


def compiled(c, node: ast.AST, code: str, bindings: dict) -> V.EnvValue:
    """`__out` after the Python `code` runs on `bindings`, compiled here as host code."""
    statements = lower(c.scope.source, nodes.parsed(code, node), nodes.ReturnTo(f"__unused{fresh_id()}", -1))
    for statement in statements:
        nodes.written_as(statement, c.current[1] if c.current else node)
    none = lists.as_runtime_list(c, V.Tup((), "list"), V.SCALAR_LISTS[V.INT])  # (lists start empty, of ints)
    env = {**bindings, "__none": V.Dyn(none.value, none.type, [])}
    current = c.current
    try:
        return c.compile_block(statements, env, {"__out"})["__out"]
    finally:
        c.current = current  # (the user's statement is still the one being compiled)


def _int_list(c, value: V.EnvValue, node: ast.AST, what: str) -> V.Dyn:
    """`value` (a list or tuple of ints) as a runtime list of ints, read in host loops."""
    if isinstance(value, V.Dyn) and V.is_list_type(value.type):
        if value.type != V.SCALAR_LISTS[V.INT]:
            raise _not_ints(c, node, what, V.describe_type(value.type))
        return V.Dyn(value.value, value.type, list(value.example))
    items = lists.items_of(value)
    if items is None:
        raise _not_ints(c, node, what, V.kind_of(value))
    for item in items:
        if not (isinstance(item, V.Const) and type(item.value) is int or isinstance(item, V.Dyn) and item.type == V.INT):
            raise _not_ints(c, node, what, V.kind_of(item))
    built = lists.as_runtime_list(c, V.Tup(tuple(items), "list"), V.SCALAR_LISTS[V.INT])
    return V.Dyn(built.value, built.type, list(built.example))


def _not_ints(c, node, what: str, kind: str):
    return c.error(
        node, f"`{source_text(node)}`: {what} of {kind} computed at runtime (DyCL compiles sets and "
        "`sorted` of runtime ints only)",
        "keep Python ints in it (`int(v)`), or compute on a tensor (`torch.unique`, `torch.sort`)",
    )


def _sorted_set(value: V.Dyn) -> SortedSet:
    return SortedSet(value.value, value.type, sorted(set(value.example)))


def distinct(c, node: ast.AST, value: V.EnvValue, what: str) -> SortedSet:
    """The set of the ints `value` holds."""
    if isinstance(value, SortedSet):
        return value
    source = _int_list(c, value, node, what)
    return _sorted_set(compiled(c, node, _DISTINCT, {"__src": source}))


def sorted_list(c, node: ast.AST, value: V.EnvValue, reverse: bool) -> V.Dyn:
    """`sorted(value)` of runtime ints (or of a set of them: its items, ascending)."""
    if isinstance(value, SortedSet) and not reverse:
        return V.Dyn(value.value, value.type, list(value.example))  # (a new list: the same items)
    source = _int_list(c, value, node, "`sorted`")
    result = compiled(c, node, _SORTED.format(keep=">=" if reverse else "<="), {"__src": source})
    return V.Dyn(result.value, result.type, sorted(source.example, reverse=reverse))


def combine(c, node: ast.BinOp, left: SortedSet, right: SortedSet) -> SortedSet:
    """`left <op> right` of two sets of runtime ints."""
    op = type(node.op)

    def filtered(a, b, keep: bool) -> V.Dyn:
        return compiled(c, node, _FILTERED.format(test="__found" if keep else "not __found"), {"__a": a, "__b": b})

    if op is ast.Sub:
        result = filtered(left, right, False)
    elif op is ast.BitAnd:
        result = filtered(left, right, True)
    else:
        ops = list_ops.ListOps(c, node, f"`{source_text(node)}`")
        pieces = (left, right) if op is ast.BitOr else (filtered(left, right, False), filtered(right, left, False))
        result = distinct(c, node, ops.concat(*pieces), "a set")
    example = {ast.Sub: set.difference, ast.BitAnd: set.intersection, ast.BitOr: set.union,
               ast.BitXor: set.symmetric_difference}[op](set(left.example), set(right.example))
    return SortedSet(result.value, result.type, sorted(example))


def is_set_operation(left, right) -> bool:
    """Whether `left <op> right` is an operator of sets of runtime ints: one operand is such
    a set, the other one too or a set known here."""
    def is_set(value) -> bool:
        return isinstance(value, SortedSet) or isinstance(value, V.Const) and isinstance(value.value, (set, frozenset))

    return is_set(left) and is_set(right) and (isinstance(left, SortedSet) or isinstance(right, SortedSet))


def as_set(c, node: ast.AST, value) -> SortedSet:
    """A set known here (of ints) as a set of runtime ints; a runtime set as it is."""
    if isinstance(value, SortedSet):
        return value
    if not all(type(item) is int for item in value.value):
        raise _not_ints(c, node, "a set", "other values than ints")
    made = _int_list(c, V.Const(sorted(value.value)), node, "a set")
    return SortedSet(made.value, made.type, list(made.example))


def contains(c, node: ast.Compare, item: V.EnvValue, container: V.Dyn) -> V.EnvValue:
    """`item in container` of a runtime int (or bool) and a runtime list (or set) of ints:
    whether some item equals it (ints are never NaN: `in`'s identity test adds nothing)."""
    if not (isinstance(item, V.Const) and type(item.value) in (bool, int) or isinstance(item, V.Dyn) and item.type in (V.INT, V.BOOL)):
        raise c.error(node, f"`{source_text(node)}`: `in` of a {V.kind_of(item)} in a list of runtime ints",
                      "look up a Python int (`int(v)`)")
    found = compiled(c, node, _CONTAINS, {"__b": _int_list(c, container, node, "`in`"), "__v": item})
    if isinstance(node.ops[0], ast.NotIn):
        return c.builder.host_op("torch.aten.__not__", [c.builder.materialize(found)], V.BOOL, not found.example)
    return found


# ----- where a set may be used ------------------------------------------------------------


def check_context(c, node: ast.expr) -> None:
    """A set made here is used only where its order does not show: the argument of
    `sorted`/`len`/`set`, an operand of a set operator, the container of `in`, or the value
    of `name = ...` whose every use in the function is one of those (`check_uses`)."""
    statement = c.current[1] if c.current else None
    parents = {id(child): parent for parent in ast.walk(statement) for child in ast.iter_child_nodes(parent)} if statement else {}
    if id(node) not in parents:  # (the statement compiled is a copy: the node at the same place)
        node = next((n for n in ast.walk(statement) if _same_place(n, node)), node) if statement else node
    parent = parents.get(id(node))
    while isinstance(parent, ast.BinOp) and type(parent.op) in SET_OPERATORS:
        node, parent = parent, parents.get(id(parent))
    if isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
        check_uses(c, parent.targets[0].id)
        return
    holder = parents.get(id(parent)) if isinstance(parent, ast.Tuple) else None
    if (isinstance(holder, ast.Assign) and holder.value is parent and len(holder.targets) == 1 and isinstance(holder.targets[0], ast.Tuple)
            and len(holder.targets[0].elts) == len(parent.elts) and isinstance(holder.targets[0].elts[parent.elts.index(node)], ast.Name)):
        check_uses(c, holder.targets[0].elts[parent.elts.index(node)].id)  # (`a, b = s & t, s | t`)
        return
    if _order_free_use(c, node, parent):
        return
    raise c.error(
        parent if isinstance(parent, ast.AST) and hasattr(parent, "lineno") else node,
        f"`{source_text(node)}` is a set of runtime ints used where its order shows: Python iterates a "
        "set in its hash table's order, which depends on the table's size and history",
        "iterate `sorted(s)`, or use `len(s)`, `k in s` and the set operators",
    )


def check_uses(c, name: str) -> None:
    """Every read of the variable `name` (a set) in the function is order-free."""
    source = c.scope.source
    written = display_name(name)
    parents = {id(child): parent for parent in ast.walk(source.node) for child in ast.iter_child_nodes(parent)}
    for node in ast.walk(source.node):
        if not (isinstance(node, ast.Name) and node.id == written and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(id(node))
        if not _order_free_use(c, node, parent, source):
            raise source.error(
                parent or node,
                f"`{source_text(parent or node)}` on `{written}`, a set of runtime ints: Python iterates a set "
                "in its hash table's order, which depends on the table's size and history",
                f"iterate `sorted({written})`, or use `len({written})`, `k in {written}` and the set operators",
            )


def _same_place(a: ast.AST, b: ast.AST) -> bool:
    return type(a) is type(b) and all(getattr(a, k, None) == getattr(b, k, None) is not None
                                      for k in ("lineno", "col_offset", "end_lineno", "end_col_offset"))


def _order_free_use(c, node: ast.expr, parent, source=None) -> bool:
    if isinstance(parent, ast.Call) and parent.args[:1] == [node] and len(parent.args) == 1:
        func = resolve(source, parent.func) if source is not None else c._try_constant(parent.func, {}, quiet=True)
        return func in _ORDER_FREE
    if isinstance(parent, ast.BinOp) and type(parent.op) in SET_OPERATORS:
        return True
    if isinstance(parent, ast.Compare) and node in parent.comparators:
        return all(type(op) in (ast.In, ast.NotIn) for op in parent.ops)
    if isinstance(parent, (ast.If, ast.While)) and parent.test is node or isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return True
    return False


__all__ = ["SortedSet", "SET_OPERATORS", "as_set", "check_context", "check_uses", "combine", "compiled", "contains", "distinct", "is_set_operation", "sorted_list"]
