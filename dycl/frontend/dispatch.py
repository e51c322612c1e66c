"""A module picked by a runtime index, `self.experts[k](x)`: one arm per candidate.

A ModuleList (or Sequential, or a list or tuple of modules or functions) has a length known
at import time, so a statement that indexes it with a runtime int `k` means

    __pick = (0, 1, ..., n - 1)[k]        # Python's index rules: -n <= k < n, else IndexError
    if __pick == 0:
        <statement with self.experts[0]>
    elif ...:
    else:
        <statement with self.experts[n - 1]>

which the compiler handles like any `if` on a runtime int: the host decides, and each arm
calls its own sub-network. The tuple lookup keeps Python's meaning at the edges: a negative
index picks from the end, and an index out of range raises IndexError in the host program.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from typing import Any

import torch

from dycl.frontend.nodes import equality_chain, located, map_children

PICK_PREFIX = "__pick"  # the normalized index, computed once before the arms


def _is_candidate_list(value: Any) -> bool:
    """A container of code with a length fixed at import time."""
    if isinstance(value, (torch.nn.ModuleList, torch.nn.Sequential)):
        return len(value) > 0
    if isinstance(value, (list, tuple)) and value:
        return all(isinstance(item, torch.nn.Module) or callable(item) and not isinstance(item, type) for item in value)
    return False


def _unconditional(node: ast.AST) -> Iterator[ast.AST]:
    """The nodes Python evaluates whenever it evaluates `node` (not the arms of `a if c
    else b`, the later operands of `and`/`or`, or the bodies of comprehensions and lambdas)."""
    yield node
    if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return
    if isinstance(node, ast.IfExp):
        yield from _unconditional(node.test)
        return
    if isinstance(node, ast.BoolOp):
        yield from _unconditional(node.values[0])
        return
    for child in ast.iter_child_nodes(node):
        yield from _unconditional(child)


def runtime_pick(stmt: ast.stmt, constant_of: Callable[[ast.expr], Any], missing: Any):
    """(the subscript, its container) of the first `E[k]` in `stmt` that picks code from a
    constant container with an index known only at run time, or None. `constant_of(expr)`
    is the import-time value of `expr`, or `missing`."""
    for node in _unconditional(stmt):
        if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Load):
            continue
        if isinstance(node.slice, (ast.Slice, ast.Tuple)) or any(isinstance(n, ast.Call) for n in ast.walk(node.slice)):
            continue  # a call in the index may have effects: its evaluation order must stay
        container = constant_of(node.value)
        if container is missing or not _is_candidate_list(container):
            continue
        if constant_of(node.slice) is not missing:
            continue  # a constant index is resolved while importing
        return node, container
    return None


def one_arm_per_candidate(stmt: ast.stmt, subscript: ast.Subscript, count: int, pick: str) -> list[ast.stmt]:
    """`stmt` as the statements of the module docstring, for a container of `count` items."""
    hoist = ast.Assign(
        targets=[ast.Name(pick, ast.Store())],
        value=ast.Subscript(
            value=ast.Tuple([ast.Constant(k) for k in range(count)], ast.Load()),
            slice=copy.deepcopy(subscript.slice),
            ctx=ast.Load(),
        ),
    )
    arms = [(k, [_with_index(stmt, subscript, k)]) for k in range(count)]
    return [located(hoist, stmt), *equality_chain(ast.Name(pick, ast.Load()), arms, stmt)]


def _with_index(stmt: ast.stmt, subscript: ast.Subscript, k: int) -> ast.stmt:
    """A copy of `stmt` with every `E[k]` like `subscript` indexed by the constant `k`."""
    target = ast.dump(subscript)

    def rewrite(node: ast.AST) -> ast.AST:
        if isinstance(node, ast.Subscript) and ast.dump(node) == target:
            return ast.copy_location(
                ast.Subscript(value=copy.deepcopy(node.value), slice=ast.Constant(k), ctx=ast.Load()), node
            )
        return map_children(node, rewrite)

    return rewrite(copy.deepcopy(stmt))
