"""`hits = np.where(cond)[0]`: a loop gathering the indices of `cond`'s nonzero items into a
list of ints, and the uses of `hits` on which that list agrees with numpy's array.
"""

from __future__ import annotations

import ast
import builtins

import numpy as np

from dycl.frontend.desugar import resolve, source_text
from dycl.frontend.nodes import fresh_id, parsed


_WHERE_USES = "`len(hits)`, `hits[i]`, `for i in hits` and `list(hits)`"


def _where_target(source, stmt: ast.stmt) -> tuple[str, ast.expr] | None:
    """(name, cond) of `name = np.where(cond)[0]` / `name, = np.where(cond)`, else None."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return None
    target, value = stmt.targets[0], stmt.value
    if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 1:
        target, call = target.elts[0], value
    elif isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Constant) and value.slice.value == 0:
        call = value.value
    else:
        return None
    if not (isinstance(target, ast.Name) and isinstance(call, ast.Call) and len(call.args) == 1 and not call.keywords):
        return None
    if resolve(source, call.func) is not np.where:
        return None
    return target.id, call.args[0]


def expand_np_where(source, stmt: ast.stmt) -> list[ast.stmt] | None:
    """`hits = np.where(cond)[0]` with a 1-d `cond` of static length: the indices of its
    nonzero items, gathered the way numpy defines them

        __mask = cond
        hits = []
        for __i in range(__mask.shape[0]):     (unrolled: the length is static)
            if __mask[__i]:
                hits.append(__i)

    `hits` is then a list of ints where numpy has an int array: the two agree on what
    research code does with it ({uses}); any other use of the name in the function
    (arithmetic, comparisons, truth values, `.size`) is refused at that use.""".format(uses=_WHERE_USES)
    found = _where_target(source, stmt)
    if found is None:
        return None
    name, cond = found
    _check_where_uses(source, name)
    number = fresh_id()
    mask, i = f"__mask{number}", f"__index{number}"
    code = (
        f"{mask} = 0\n{name} = []\nfor {i} in range({mask}.shape[0]):\n"
        f"    if {mask}[{i}]:\n        {name}.append({i})"
    )
    statements = parsed(code, stmt)
    statements[0].value = cond  # (the user's expression keeps its own location)
    return statements


def _check_where_uses(source, name: str) -> None:
    parents = {child: node for node in ast.walk(source.node) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(source.node):
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Call) and node in parent.args and len(parent.args) == 1 and not parent.keywords:
            if resolve(source, parent.func) in (builtins.len, builtins.list):
                continue
        if isinstance(parent, ast.Subscript) and parent.value is node and not isinstance(parent.slice, (ast.Slice, ast.Tuple)):
            continue
        if isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is node:
            continue
        raise source.error(
            parent or node,
            f"`{source_text(parent or node)}` on `{name}`, the index array of `np.where(cond)`: DyCL "
            f"keeps it as a list of ints, which agrees with numpy's array only for {_WHERE_USES}",
            f"write it with those (`len({name}) > 0` for a truth value, `{name}[0]` for the first hit), "
            "or keep the mask a tensor and compute with torch",
        )
