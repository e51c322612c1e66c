"""In-place changes of tensors, and the rebinding they cause.

A run (or the host) that changes a tensor in place gives every variable bound to its memory
the new value (`rebind_mutated`): the very value for the same view, one computed from the new
value for another view (`aliases.py` holds the memory model), or a refusal where the change
cannot be followed (a forward input, a weight, memory shared on some paths only). A mutation
whose operands are runtime Python values computes them on the host first. Each function takes
the compiler as its context.
"""

from __future__ import annotations

import ast

from dycl.frontend import aliases, lists, runs
from dycl.frontend import values as V
from dycl.frontend.errors import FrontendError
from dycl.frontend.liveness import names_mutated
from dycl.frontend.nodes import OPERAND_PREFIX, replace_nodes
from dycl.frontend.rewrite import fresh_id


def mutates_tensor(c, stmt: ast.stmt, env: dict) -> bool:
    """`t += k` / `t[k] = v` on a tensor variable (not `n += 1` on an int)."""
    mutated = set().union(*(names_mutated(sub) for sub in ast.walk(stmt)))
    return any(runs.is_tensor_value(env.get(name)) for name in mutated)


def compile_mutation_with_host_operands(c, stmt: ast.stmt, env: dict) -> None:
    """A tensor mutation whose operands are runtime Python values (`z += k` with
    `k = float(...)`, `y[0, k] = 5.0` with `k = int(...)`): the operands are computed on
    the host first, then the statement itself runs, in place, so that aliases see it."""
    operands = [stmt.value] if getattr(stmt, "value", None) is not None else []
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
        # `x[0, k].mul_(v)`: the receiver is changed in place, where it is
        operands = [*call.args, *(k.value for k in call.keywords)]
        targets = [call.func.value]
    for target in targets:
        while isinstance(target, (ast.Subscript, ast.Attribute)):
            if isinstance(target, ast.Subscript):
                operands.append(target.slice)
            target = target.value
    scoped = dict(env)
    replacements = {}
    while any(isinstance(o, (ast.Tuple, ast.Slice)) for o in operands):
        # the parts of `x[0, k:k + 1]`: a slice is no value of its own
        operands = [
            p for o in operands
            for p in (o.elts if isinstance(o, ast.Tuple) else [o.lower, o.upper, o.step] if isinstance(o, ast.Slice) else [o])
            if p is not None
        ]
    for operand in operands:
        if c._needs_host(operand, env, set()):
            name = f"{OPERAND_PREFIX}{fresh_id()}"
            scoped[name] = c.expression(operand, env)
            replacements[id(operand)] = name
    rewritten = replace_nodes(stmt, replacements)
    if not c._store_on_host(rewritten, scoped):
        c.compile_run([rewritten], scoped, set(scoped))
    for name in env:
        if scoped[name] is not env[name]:
            env[name] = scoped[name]


def rebind_mutated(c, env: dict, live, stmt, mutations: list[tuple[V.Dyn, V.Dyn]]) -> None:
    """Give a tensor mutated in place its new value in every variable bound to it."""
    if not mutations:
        return
    new_values = {old.value: new for old, new in mutations}
    changed: dict[int, tuple[V.Dyn, V.Dyn]] = {}
    views: dict = {}  # (a variable's value, the new value) -> its new value
    for old, new in mutations:
        what = runs.bound_name(env, old)
        memory = aliases.storage_of(old.example)
        if memory in c.memory_of_inputs:
            raise c.error(
                stmt, f"{runs.quoted(stmt)}in-place change of the forward input `{c.memory_of_inputs[memory]}`"
                + ("" if what == c.memory_of_inputs[memory] else f" (through `{what}`)"),
                "PyTorch would change the caller's tensor, which a compiled model cannot: "
                "mutate a copy (`x = x.clone()` first) if the caller does not read the change",
            )
        if memory in c.memory_of_weights:
            raise c.error(
                stmt, f"{runs.quoted(stmt)}in-place change of the weight `{c.memory_of_weights[memory]}` (through `{what}`)",
                "module state must not change in forward: compute a new tensor instead",
            )
        if old.may_share:
            raise path_dependent_alias(c, stmt, what)
        if memory is not None:
            changed[memory] = (old, new)
    for name in list(env):
        # a dead variable is rebound where that is exact, and never a reason to refuse
        strict = live is None or name in live
        env[name] = _after_mutation(c, env[name], name, new_values, changed, stmt, strict, views)


def _after_mutation(c, value, name, new_values, changed, stmt, strict: bool, views: dict):
    if isinstance(value, V.Tup):
        # one list held in two places (`g2 = groups[0]`) stays one list: a later
        # `g2.append(...)` must reach `groups[0]` too (fuzz seed 442659)
        key = ("tuple", id(value), strict)
        if key not in views:
            items = tuple(_after_mutation(c, i, name, new_values, changed, stmt, strict, views) for i in value.items)
            same = all(a is b for a, b in zip(items, value.items))
            views[key] = value if same else V.Tup(items, value.kind)
        return views[key]
    if isinstance(value, V.Maybe):
        inner = _after_mutation(c, value.value, name, new_values, changed, stmt, strict, views)
        return value if inner is value.value else V.Maybe(value.present, inner)
    if not isinstance(value, V.Dyn):
        return value
    if value.value in new_values:
        return new_values[value.value]
    if isinstance(value, lists.StaticList):  # (`outs.append(x)`, then `x.relu_()`)
        return _list_after_mutation(c, value, name, new_values, changed, stmt, strict, views)
    if not strict:
        memory = aliases.storage_of(value.example)
        exact = memory in changed and not value.may_share and aliases.geometry(value.example) == aliases.geometry(changed[memory][0].example)
        return changed[memory][1] if exact else value
    if value.may_share & changed.keys():
        raise path_dependent_alias(c, stmt, name)
    if isinstance(value.example, list):
        if any(aliases.storage_of(item) in changed for item in value.example):
            raise c.error(
                stmt, f"{runs.quoted(stmt)}in-place change of a tensor that the list `{name}` also holds",
                f"append a copy (`{name}.append(t.clone())`) or rebind instead of mutating (`t = t * 2`)",
            )
        return value
    memory = aliases.storage_of(value.example)
    if memory not in changed:
        return value
    old, new = changed[memory]
    if aliases.geometry(value.example) == aliases.geometry(old.example):
        return new
    seen = views.get((value.value, new.value))
    if seen is None:
        seen = views[(value.value, new.value)] = _other_view_after_mutation(c, value, old, new, stmt)
    if seen is None:
        raise c.error(
            stmt, f"{runs.quoted(stmt)}in-place change of a view that `{name}` shares memory with (a different view of the same tensor)",
            "make the view and the in-place change in the same straight-line block, "
            f"or write the new `{name}` explicitly (e.g. `{name} = {name}.clone()` before taking the view)",
        )
    return seen


def _list_after_mutation(c, value, name, new_values, changed, stmt, strict: bool, views: dict):
    """A list whose items are known here, after a change of a tensor it holds: the list
    of the items' new values. Every name bound to the list gets the one new list."""
    key = ("list", value.value, strict)
    if key not in views:
        items = [_after_mutation(c, i, name, new_values, changed, stmt, strict, views) for i in value.items]
        same = all(a is b for a, b in zip(items, value.items))
        views[key] = value if same else lists.static_list(c, items, value.type)
    return views[key]


def _other_view_after_mutation(c, value: V.Dyn, old: V.Dyn, new: V.Dyn, stmt) -> V.Dyn | None:
    """The new value of `value`, a different view of the memory of `old`, which a run
    changed in place to `new`: computed from `new` when one of the two is a contiguous
    tensor that covers the other (`hist` and `v = hist.view(-1)`), unchanged when they
    share no element; None otherwise."""
    written = aliases.positions_in(old.example, value.example)  # old's elements in value
    if written is not None and written.numel() == 0:
        return value
    if written is not None and written.unique().numel() == written.numel():
        source = "__value.reshape(-1).index_put((__positions,), __new.reshape(-1)).reshape(__value.shape)"
        positions = written
    else:
        positions = aliases.positions_in(value.example, old.example)  # value's elements in old
        if positions is None:
            return None
        source = f"__new.reshape(-1)[__positions].reshape({tuple(value.example.shape)})"
    result = c.written_expression(source, stmt, {"__value": value, "__new": new, "__positions": V.Const(positions)})
    # its example is still the view the example run changed: later changes through one
    # of the two views reach the other again
    return V.Dyn(result.value, result.type, value.example, value.may_share)


def path_dependent_alias(c, stmt, name: str) -> FrontendError:
    return c.error(
        stmt, f"{runs.quoted(stmt)}in-place change of `{name}`, which shares memory with another variable on some paths only "
        "(or where a runtime int places it: `x[:k]`, `x[i]`)",
        f"copy it where it is assigned on every path (`{name} = other.clone()`), or rebind instead of mutating",
    )
