"""Helpers of the host expressions (`host_values.py`): operand slots, the truth value of a
mixed `and`/`or`, what a `v is None` test tells each branch.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from dycl.frontend import expressions as X
from dycl.frontend import values as V


def is_tensor(value: V.EnvValue) -> bool:
    return isinstance(value, V.Dyn) and V.is_tensor_type(value.type) or (
        isinstance(value, V.Tup) and any(is_tensor(i) for i in value.items)
    )


def call_operands(expr: ast.Call, receiver, args: list) -> dict:
    """Values already computed for a call's operands (see `_apply`): the receiver of a
    method call, the positional arguments."""
    known = known_values(list(expr.args), args)
    if receiver is not None and isinstance(expr.func, ast.Attribute):
        known[id(expr.func.value)] = receiver
    return known


def known_values(nodes, values) -> dict:
    """{id(node): value} of sub-expressions already computed (never computed twice)."""
    return {id(node): value for node, value in zip(nodes, values) if not isinstance(node, ast.Starred)}


def conversion_op(func, source_kind: str) -> str:
    """The op of `bool(v)`/`int(v)`/`float(v)` for a value of kind int/float/bool/Tensor (of
    another kind than the result: the same kind is the value itself)."""
    if func is float and source_kind in ("int", "bool"):
        source_kind = "Scalar"  # (torch has no Float.int: Float.Scalar takes any number)
    return f"torch.aten.{X.SCALAR_BUILTINS[func]}.{source_kind}"


def _packed_field(node: ast.AST, env: dict) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and isinstance(env.get(node.value.id), V.Packed)


def handler_of(table: dict, func):
    try:
        return table.get(func)
    except TypeError:  # an unhashable constant
        return None


def none_test_branches(test: ast.expr, env: dict) -> tuple[dict, dict]:
    """What `if v is None:` / `if v is not None:` tells each branch about a `v` that is None
    on some paths: None in one, its value in the other."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    if not (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.left, ast.Name) and isinstance(env.get(test.left.id), V.Maybe)
        and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None
    ):
        return {}, {}
    name = test.left.id
    # (another value None exactly when this one is, by one "present" flag: a module's
    # `self.h` and `self.c` that start None together, state.py, is known there too)
    flag = env[name].present
    same = [n for n, v in env.items() if n == name or isinstance(v, V.Maybe) and _same_flag(v.present, flag)]
    present, absent = {n: env[n].value for n in same}, {n: V.Const(None) for n in same}
    is_not = isinstance(test.ops[0], ast.IsNot) != negated
    return (present, absent) if is_not else (absent, present)


def _same_flag(a, b) -> bool:
    """One runtime bool: one IR value, or joins of one on every path (state.same_value)."""
    from dycl.frontend.state import same_value

    return isinstance(a, V.Dyn) and isinstance(b, V.Dyn) and same_value(a.value, b.value)


def is_bool(value) -> bool:
    return (isinstance(value, V.Const) and isinstance(value.value, bool)) or (isinstance(value, V.Dyn) and value.type == V.BOOL)


def is_simple(node: ast.AST) -> bool:
    """Names, constants, comparisons and `not`/and/or of them: nothing that can raise."""
    return all(
        isinstance(n, (ast.Name, ast.Constant, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Load, ast.cmpop, ast.boolop, ast.Not))
        for n in ast.walk(node)
    )


@dataclass(frozen=True)
class TruthValue(V.Dyn):
    """The truth of `a and b` / `a or b` whose operands are of different kinds (a bool and a
    tensor): exact as a condition; Python's value (one of the operands) has no one type here."""

    source: str = ""


def operand_slots(expr: ast.expr, env: dict):
    """Sub-expressions that can be computed first and passed in: direct operands, the
    receiver of a method call (`t.argmax()` -> `t`), keyword values. A field of a packed
    sequence (`p.batch_sizes`) is an operand whole: the packed value is none."""
    for child in ast.iter_child_nodes(expr):
        while isinstance(child, (ast.Attribute, ast.keyword, ast.Starred)) and not _packed_field(child, env):
            child = child.value
        if isinstance(child, ast.Slice):  # `x[:n]`: its bounds are the operands
            yield from (part for part in (child.lower, child.upper, child.step) if part is not None)
        elif isinstance(child, ast.expr):
            yield child


