"""The host function as a generator that hands each sub-DNN call to its caller.

`bind_stepwise(constants) -> forward` is emitted beside `bind`: the same statements, with
every sub-DNN call `[a, b] = subdnn_3(x, y)` written as
`[a, b] = yield ('subdnn_3', (x, y))`, and each helper that (transitively) calls a
sub-DNN entered with `yield from`. A scheduler (`dycl.runtime.batching`) advances many
requests' generators and answers the calls that wait on the same sub-DNN with one
batched backend call. The generator returns what the plain function returns.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Mapping, Sequence


class _YieldCalls(ast.NodeTransformer):
    def __init__(self, subdnns: frozenset[str], helpers: frozenset[str], aliases: Mapping[str, str]):
        self.subdnns, self.helpers, self.aliases = subdnns, helpers, aliases

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        return node  # nested defs are transformed on their own (see `stepwise_bind`)

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        if not isinstance(node.func, ast.Name):
            return node
        if node.func.id in self.subdnns or node.func.id in self.aliases:
            name = self.aliases.get(node.func.id, node.func.id)
            request = ast.Tuple([ast.Constant(name), ast.Tuple(list(node.args), ast.Load())], ast.Load())
            return ast.Yield(request)
        if node.func.id in self.helpers:
            return ast.YieldFrom(node)
        return node


def _calls(function: ast.FunctionDef) -> set[str]:
    names = set()
    for statement in function.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                names.add(node.func.id)
    return names


def stepwise_bind(bind: ast.FunctionDef, subdnns: Sequence[str], aliases: Mapping[str, str] | None = None) -> ast.FunctionDef:
    """`bind_stepwise(constants)` from the `bind(subdnns, constants)` that codegen wrote:
    the sub-DNN lookups dropped, the functions it defines made generators where needed.
    `aliases`: variables of `bind` that call a sub-DNN giving it buffers (`rt.in_place`) ->
    the sub-DNN; the scheduler runs those calls as the sub-DNN's own (no buffer given:
    `run_many` runs a stateful model's calls through `bind`)."""
    aliases = dict(aliases or {})
    subdnn_names = frozenset(subdnns) | frozenset(aliases)
    functions = [s for s in bind.body if isinstance(s, ast.FunctionDef)]
    calls = {f.name: _calls(f) for f in functions}
    stepping = {f.name for f in functions if calls[f.name] & subdnn_names}
    grown = True
    while grown:  # a helper that calls a stepping helper steps too
        grown = False
        for f in functions:
            if f.name not in stepping and calls[f.name] & stepping:
                stepping.add(f.name)
                grown = True
    transformer = _YieldCalls(frozenset(subdnns), frozenset(stepping), aliases)
    body: list[ast.stmt] = []
    for statement in bind.body:
        if isinstance(statement, ast.Assign) and (_is_subdnn_lookup(statement) or _assigns(statement, aliases)):
            continue
        statement = copy.deepcopy(statement)
        if isinstance(statement, ast.FunctionDef):
            statement.body = [transformer.visit(s) for s in statement.body]
        body.append(statement)
    body[0] = ast.Expr(ast.Constant("The entry as a generator that yields (sub-DNN name, arguments) at each call."))
    result = copy.deepcopy(bind)
    result.name = "bind_stepwise"
    result.args.args = [a for a in result.args.args if a.arg != "subdnns"]
    result.body = body
    return result


def _is_subdnn_lookup(statement: ast.Assign) -> bool:
    value = statement.value
    return isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) and value.value.id == "subdnns"


def _assigns(statement: ast.Assign, names: Mapping[str, str]) -> bool:
    return any(isinstance(target, ast.Name) and target.id in names for target in statement.targets)
