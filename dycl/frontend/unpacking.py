"""Assignments that unpack, rewritten into the indexing the compiler already follows, with
Python's meaning:

- a starred target, `first, *rest = xs`, `*init, last = xs`, `enc_output, *_ =
  self.encoder(src, mask)`: the value is bound once to a fresh name, each plain target is
  its item at a constant position (from the end after the star) and the starred one the
  `list` of the items between. Python checks the length first (a ValueError when it is
  shorter than the plain targets); a length known here that is too short is refused, and
  a runtime list's short length raises at the item read (an IndexError).
- `v, _ = torch.topk(x, k)` whose second name is never read in the function: `v =
  __dycl_first_of_two(torch.topk(x, k))`, so that no run returns the second item. With k a runtime int, only the values have
  an exact lowering (the indices of equal values are topk's own: export_rewrites.py).

Applied by `rewrite.lower` to each statement, before the other desugarings.
"""

from __future__ import annotations

import ast
import copy
import re

from dycl.frontend.nodes import fresh_id

_PAIR_RESULTS = frozenset({"topk"})  # (calls that always return two items)


def expand(source, stmt: ast.stmt) -> list[ast.stmt] | None:
    """The statements that replace `stmt`, or None to keep it."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], (ast.Tuple, ast.List))):
        return None
    target = stmt.targets[0]
    starred = [k for k, elt in enumerate(target.elts) if isinstance(elt, ast.Starred)]
    if starred:
        return _starred(source, stmt, target, starred)
    return _discarded_second(source, stmt, target)


def _starred(source, stmt: ast.Assign, target, starred: list[int]) -> list[ast.stmt]:
    if len(starred) > 1:  # (a SyntaxError in Python already)
        raise source.error(stmt, "two starred targets in one assignment")
    star = starred[0]
    before, after = target.elts[:star], target.elts[star + 1:]
    known = _known_length(stmt.value)
    if known is not None and known < len(before) + len(after):
        raise source.error(
            stmt, f"`{ast.unparse(stmt)}` unpacks {known} items into at least {len(before) + len(after)} names",
            "Python raises a ValueError here; unpack as many names as there are items",
        )
    held = f"__unpacked{fresh_id()}"
    made = [_at(stmt, ast.Name(held, ast.Store()), stmt.value)]
    load = lambda: ast.Name(held, ast.Load())  # noqa: E731
    for k, elt in enumerate(before):
        made.append(_at(stmt, elt, ast.Subscript(load(), ast.Constant(k), ast.Load())))
    end = ast.BinOp(ast.Call(ast.Name("len", ast.Load()), [load()], []), ast.Sub(), ast.Constant(len(after)))
    middle = ast.Slice(ast.Constant(len(before)), end if after else None, None)
    made.append(_at(stmt, target.elts[star].value, ast.Call(ast.Name("list", ast.Load()), [ast.Subscript(load(), middle, ast.Load())], [])))
    for k, elt in enumerate(after):
        made.append(_at(stmt, elt, ast.Subscript(load(), ast.Constant(k - len(after)), ast.Load())))
    return made


def _discarded_second(source, stmt: ast.Assign, target) -> list[ast.stmt] | None:
    call = stmt.value
    if not (len(target.elts) == 2 and isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr in _PAIR_RESULTS and isinstance(target.elts[1], ast.Name)):
        return None
    # (as the function's source names it: an inlined body's locals are renamed `__<f><n>_<name>`)
    second = re.sub(rf"^__{re.escape(source.node.name)}\d+_", "", target.elts[1].id)
    if any(isinstance(n, ast.Name) and n.id == second and not isinstance(n.ctx, ast.Store) for n in ast.walk(source.node)):
        return None
    # `torch.topk(x, k)` -> helper(torch.topk, x, k); `x.topk(k)` -> helper("topk", x, k)
    module = isinstance(call.func.value, ast.Name) and call.func.value.id in ("torch", "__dycl_torch")
    callee = call.func if module else ast.Constant(call.func.attr)
    receiver = [] if module else [call.func.value]
    first = ast.Call(ast.Name(FIRST_OF_TWO, ast.Load()), [callee, *receiver, *call.args], call.keywords)
    return [_at(stmt, target.elts[0], first)]


FIRST_OF_TWO = "__dycl_first_of_two"


def first_of_two(function, *args, **kwargs):
    """The first of the two items `function(*args, **kwargs)` returns (a method's name: of
    `args[0]`), as `a, _ = ...` binds it (a ValueError for another number of items). A
    helper (desugar.HELPERS) that makes the call itself, so that the run capturing it never
    returns the second item."""
    if isinstance(function, str):
        function, args = getattr(args[0], function), args[1:]
    first, _ = function(*args, **kwargs)
    return first


def _known_length(value: ast.expr) -> int | None:
    if isinstance(value, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in value.elts):
        return len(value.elts)
    return None


def _at(where: ast.stmt, target: ast.expr, value: ast.expr) -> ast.Assign:
    made = ast.Assign(targets=[copy.deepcopy(target)], value=value)
    return ast.fix_missing_locations(ast.copy_location(made, where))


__all__ = ["FIRST_OF_TWO", "expand", "first_of_two"]
