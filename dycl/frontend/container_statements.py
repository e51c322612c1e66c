"""Statements that change a list or dict in place (`lst.append(x)`, `lst[k] = v`,
`del lst[k]`, `d[key] = v`): a new value bound to every variable holding the container, and
the container changes refused.
"""

from __future__ import annotations

import ast

from dycl.frontend import values as V
from dycl.frontend.desugar import LIST_MUTATORS, source_text
from dycl.frontend.list_ops import ListOps, subscript_key
from dycl.frontend.lists import is_list, items_of, rebind


LIST_METHODS = LIST_MUTATORS + ("sort", "reverse")
# Methods that change other Python containers in place (refused: no value semantics here).
CONTAINER_MUTATORS = {
    dict: ("pop", "popitem", "clear", "update", "setdefault"),
    set: ("add", "discard", "remove", "pop", "clear", "update"),
}
CONTAINER_METHOD_NAMES = frozenset(LIST_METHODS).union(*CONTAINER_MUTATORS.values())
"""Every method name that changes a list, dict or set in place."""


def mutate(c, call: ast.Call, env: dict) -> None:
    """A bare `name.method(...)` statement on a Python list, or on an item of a list known
    here (`rows[0].append(x)`) (or a refused container change)."""
    receiver, method = call.func.value, call.func.attr
    name = receiver.id if isinstance(receiver, ast.Name) else None
    holder = c.receiver_value(receiver, env)
    what = f"`{source_text(call)}`"
    ops = ListOps(c, call, what)
    if isinstance(holder, V.Const) and not isinstance(holder.value, list):
        kind = type(holder.value).__name__
        raise c.error(
            call, f"{what} changes a {kind} in forward",
            f"build a new {kind} instead (e.g. with a comprehension) and bind it to `{source_text(receiver)}`",
        )
    if method in ("sort", "reverse"):
        name = source_text(receiver)
        rewrite = f"{name} = sorted({name})" if method == "sort" else f"{name} = {name}[::-1]"
        raise c.error(call, f"{what} (reorders a list in place)", f"build the list in the order you need, or write `{rewrite}` on a list of Python values")
    if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        raise c.error(call, f"{what} with keyword or starred arguments", "pass the arguments by position")
    arity = {"append": (1, 1), "extend": (1, 1), "insert": (2, 2), "pop": (0, 1), "remove": (1, 1), "clear": (0, 0)}[method]
    if not arity[0] <= len(call.args) <= arity[1]:
        raise c.error(call, f"{what}: wrong number of arguments for list.{method}")
    args = [c.expression(a, env) for a in call.args]
    if method == "append":
        new = append(c, holder, args[0], call)
    elif method == "pop":
        new, _ = ops.pop(holder, args[0] if args else None)
    elif method == "insert":
        new = ops.insert(holder, args[0], args[1])
    elif method == "extend":
        new = ops.concat(holder, as_list(ops, args[0]))
    elif method == "clear":
        new = ops.clear(holder)
    else:  # remove
        if not (isinstance(holder, V.Const) and isinstance(args[0], V.Const)):
            raise c.error(
                call, f"{what}: removing an item by equality from a list of runtime values",
                f"delete it by position: `del {name}[i]`",
            )
        items, _ = ops.python(holder, lambda values: values.remove(args[0]))
        new = V.Const([i.value for i in items])
    rebind(c, env, name, holder, new, call, what)


def append(c, holder, item, node):
    """holder + [item] as the new list value (a runtime list stays one)."""
    if isinstance(holder, V.Dyn):
        return c._runtime_append(holder, item, node)
    items = holder.items if isinstance(holder, V.Tup) else tuple(V.Const(v) for v in holder.value)
    return c._list_value(V.Tup(items + (item,), "list"))


def as_list(ops: ListOps, value):
    """The operand of `extend`/`+` as a list value (a tuple's items count as a list's)."""
    if is_list(value):
        return value
    if isinstance(value, V.Tup) or (isinstance(value, V.Const) and isinstance(value.value, (tuple, range))):
        items = items_of(value) if not isinstance(value, V.Const) else tuple(V.Const(v) for v in value.value)
        return V.Tup(tuple(items), "list")
    raise ops.error(
        f"{ops.what}: extending a list with a {V.kind_of(value)}",
        "extend it with a list or tuple (a tensor's rows: `list(t.unbind(0))`)",
    )


def store(c, target: ast.Subscript, item, env: dict) -> None:
    """`name[key] = item` on a list: a new list value for every alias."""
    name = target.value.id
    holder = env[name]
    what = f"`{source_text(target)} = ...`"
    new = ListOps(c, target, what).set_item(holder, subscript_key(c, target.slice, env), item)
    rebind(c, env, name, holder, new, target, what)


def is_dict(value) -> bool:
    """A dict value: built here with runtime items, or a Python dict known here."""
    return (isinstance(value, V.Tup) and isinstance(value.kind, V.DictKind)) or (
        isinstance(value, V.Const) and type(value.value) is dict
    )


def _dict_entries(c, holder, node, what: str) -> dict:
    if isinstance(holder, V.Tup):
        return dict(zip(holder.kind.keys, holder.items))
    if not all(type(k) in (str, int) for k in holder.value):
        raise c.error(node, f"{what} on a dict keyed by {', '.join(sorted({type(k).__name__ for k in holder.value}))}", "key it by strs or ints")
    return {k: V.Const(v) for k, v in holder.value.items()}


def _dict_key(c, node: ast.expr, env, what: str):
    key = c.expression(node, env)
    if not (isinstance(key, V.Const) and type(key.value) in (str, int)):
        raise c.error(node, f"{what} with a key that is not a str or int known when the model is imported", "key the dict by constant strs or ints")
    return key.value


def dict_store(c, target: ast.Subscript, item, env: dict) -> None:
    """`name[key] = item` on a dict: a new dict value for every alias (a new key goes last)."""
    name = target.value.id
    holder = env[name]
    what = f"`{source_text(target)} = ...`"
    entries = _dict_entries(c, holder, target, what)
    entries[_dict_key(c, target.slice, env, what)] = item
    rebind(c, env, name, holder, _dict_value(entries), target, what)


def dict_delete(c, target: ast.Subscript, env: dict) -> None:
    """`del name[key]` on a dict."""
    name = target.value.id
    holder = env[name]
    what = f"`del {source_text(target)}`"
    entries = _dict_entries(c, holder, target, what)
    key = _dict_key(c, target.slice, env, what)
    if key not in entries:
        raise c.error(target, f"{what}: KeyError: {key!r}")
    del entries[key]
    rebind(c, env, name, holder, _dict_value(entries), target, what)


def _dict_value(entries: dict) -> V.EnvValue:
    """A new dict value: a Python dict when every item is known here (`cfg["shift"] = 1.0`)."""
    if all(isinstance(v, V.Const) for v in entries.values()):
        return V.Const({k: v.value for k, v in entries.items()})
    return V.dict_value(entries)


def delete(c, stmt: ast.Delete, env: dict) -> None:
    """`del name` (unbinds it) or `del name[key]` (a new list value for every alias)."""
    (target,) = stmt.targets
    if isinstance(target, ast.Name):
        value = env.get(target.id, V.UNDEF)
        if value is V.UNDEF:
            raise c.error(target, f"`del {target.id}` before `{target.id}` is assigned")
        env[target.id] = V.UNDEF
        return
    name = target.value.id
    what = f"`del {source_text(target)}`"
    holder = env.get(name, V.UNDEF)
    if holder is V.UNDEF:
        raise c.error(target, f"`{name}` may be used before it is assigned")
    if is_dict(holder) and isinstance(target.value, ast.Name):
        dict_delete(c, target, env)
        return
    if not is_list(holder):
        kind = V.kind_of(holder)
        hint = (
            "module state and containers other than lists cannot change in forward: build a new one"
            if isinstance(holder, V.Const) else "only items of Python lists can be deleted"
        )
        raise c.error(target, f"{what} on a {kind}", hint)
    ops = ListOps(c, target, what)
    new = ops.delete(holder, subscript_key(c, target.slice, env))
    rebind(c, env, name, holder, new, target, what)
