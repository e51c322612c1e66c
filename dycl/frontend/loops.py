"""Helpers of the loops (`loop_compiler.py`): carried variables, the unrolling limit, and
what a loop body does to the lists it touches.
"""

from __future__ import annotations

import ast
import copy

from xdsl.ir import Attribute
from dycl.frontend import lists
from dycl.frontend import values as V
from dycl.frontend.errors import FrontendError

MAX_UNROLL = 512
# An unrolled loop whose `if`s can leave it (`break`, `return`) compiles the iterations after
# such an `if` once per arm that goes on: copies multiply with every iteration. Past this
# many copies, a constant range whose index the body reads runs as a runtime loop instead.
MAX_UNROLLED_COPIES = 32
# Unrolled, a loop that can `break` nests each iteration in the `if` of the one before: past
# this many iterations, where its runtime form is refused, that refusal is the answer.
MAX_NESTED_UNROLL = 64


class LoopStructureError(FrontendError):
    """A variable's structure (None, tuple, tensor) changes between iterations."""


class CarriedKindChange(LoopStructureError):
    """A carried variable's kind (dtype, or int/float/bool) changes between iterations (a
    uint8 mask before the loop, a bool one after an iteration): the first iteration may be
    compiled apart (`loop_compiler._peeled`), else this is the refusal."""

    loop: ast.stmt  # the loop whose variable it is


class Carried:
    """A variable carried by a runtime loop: its value before the loop, the IR types and
    examples of its leaves, and its tuple structure (None for a single value)."""

    def __init__(self, initial, types: list[Attribute], examples: list, structure, may_share: frozenset = frozenset()):
        self.initial = initial
        self.types = types
        self.examples = examples
        self.structure = structure
        self.may_share = may_share  # see values.Dyn.may_share


class CarriedListKind(Exception):
    """Build the loop again, carrying `name` as a runtime list of `list_type`."""

    def __init__(self, name: str, mismatch):
        super().__init__(name)
        self.name = name
        self.list_type = mismatch.list_type
        self.mismatch = mismatch


def retypable_list(body_env: dict, state: dict, mismatch) -> str | None:
    """The carried variable whose list the body gave an item of another kind, when the list
    entered the loop with items known here that fit that kind (an empty `[]`): it can be
    carried as a list of that kind instead."""
    if mismatch.list_type is None:
        return None
    for name, entry in carried_items(state):
        value = body_env.get(name)
        if (
            isinstance(value, V.Dyn) and value.value == mismatch.holder.value
            and entry.structure is None and lists.fits(entry.initial, mismatch.list_type)
        ):
            return name
    return None


def carried_items(state):
    return [(name, entry) for name, entry in state.items() if isinstance(entry, Carried)]


def item_assignment(node: ast.For, k: int) -> ast.stmt:
    """`<target> = list(<iter>)[k]`, at the loop's line."""
    items = ast.Call(func=ast.Name("list", ast.Load()), args=[copy.deepcopy(node.iter)], keywords=[])
    value = ast.Subscript(value=items, slice=ast.Constant(k), ctx=ast.Load())
    assign = ast.Assign(targets=[_as_store(copy.deepcopy(node.target))], value=value)
    for sub in ast.walk(assign):
        if "lineno" in sub._attributes:
            ast.copy_location(sub, node)
    return assign


def _as_store(target: ast.expr) -> ast.expr:
    for sub in ast.walk(target):
        if isinstance(sub, (ast.Name, ast.Tuple, ast.List)):
            sub.ctx = ast.Store()
    return target


def own_statements(stmts):
    """Statements of this loop body, not of nested loops or functions (`with torch.no_grad():`
    blocks are the body's own: a `break` in one leaves this loop, fuzz seed 50)."""
    stack = list(stmts)
    while stack:
        stmt = stack.pop()
        yield stmt
        if isinstance(stmt, ast.If):
            stack.extend(stmt.body + stmt.orelse)
        elif isinstance(stmt, ast.With):
            stack.extend(stmt.body)


def can_break(body: list[ast.stmt]) -> bool:
    """Whether a `break` of this loop's own is in `body`."""
    return any(isinstance(stmt, ast.Break) for stmt in own_statements(body))


def unrolled_copies(body: list[ast.stmt], trips: int) -> int:
    """How many copies of `body` unrolling `trips` iterations compiles: an `if` with an exit
    in it (`break`, `return`) takes the code after it into each arm that goes on."""
    per_iteration = _going_on(body)
    return sum(per_iteration**k for k in range(trips))


def _going_on(stmts: list[ast.stmt]) -> int:
    """The paths through `stmts` that reach their end, counting an `if` as one path unless
    an arm of it may leave the loop (then it is its arms' paths that go on)."""
    paths = 1
    for stmt in stmts:
        if isinstance(stmt, (ast.Break, ast.Return)):
            return 0
        if isinstance(stmt, ast.With):
            paths *= _going_on(stmt.body)
        elif isinstance(stmt, ast.If) and _may_exit(stmt):
            paths *= _going_on(stmt.body) + _going_on(stmt.orelse)
    return paths


def _may_exit(stmt: ast.stmt) -> bool:
    """A `break` of this loop or a `return` (of any depth) in `stmt`."""
    return any(isinstance(n, (ast.Break, ast.Return)) for n in own_statements([stmt])) or any(
        isinstance(n, ast.Return) for n in ast.walk(stmt))


def length_after_for(value, entry, node: ast.For, trip: range, name: str, followers: dict):
    """A list a loop over a constant range carries, marked with the lengths it may have
    after the loop when it changes only by `name.append(x)` statements at the body's top
    level (`sampled.append(tok)` in a decoder of constant length): code after the loop may
    then stack it (`np.array(sampled)`), once per length."""
    if not (isinstance(entry, Carried) and lists.is_runtime_list(value)) or name in followers or name in followers.values():
        return value
    initial = lists.possible_lengths(entry.initial)
    counts = _appends_per_iteration(node.body, name)
    if initial is None or counts is None:
        return value
    at_break, full = counts
    # k - 1 full iterations, then one that breaks, or every iteration in full
    grown = {full * (k - 1) + partial for k in range(1, len(trip) + 1) for partial in at_break} | {full * len(trip)}
    lengths = frozenset(length + n for length in initial for n in grown)
    if len(lengths) > lists.MAX_LENGTH_CASES:
        return value
    return lists.KnownLengths(value.value, value.type, value.example, value.may_share, lengths)


def _appends_per_iteration(body: list[ast.stmt], name: str) -> tuple[frozenset, int] | None:
    """How many items a run of `body` appends to the list `name`: (the counts it may have
    appended when it breaks, the count when it runs to its end). Known when `name` changes
    only by `name.append(x)` statements at the body's top level, and is otherwise only read
    by `len(name)` and `name[i]`; None otherwise."""
    appended, at_break = 0, set()
    allowed: set[int] = set()
    for stmt in body:
        if _is_append_to(stmt, name):
            appended += 1
            allowed.add(id(stmt.value.func.value))
        elif any(isinstance(n, ast.Break) for n in ast.walk(stmt)):
            at_break.add(appended)  # (a break of a nested loop counts too: more lengths)
    for node in ast.walk(ast.Module(body=body, type_ignores=[])):
        if isinstance(node, (ast.Continue, ast.Return)):
            return None  # an iteration that skips appends, or leaves the function
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1:
            allowed.add(id(node.args[0]))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            allowed.add(id(node.value))
        elif isinstance(node, ast.Name) and node.id == name and id(node) not in allowed:
            return None
    return frozenset(at_break), appended


def _is_append_to(stmt: ast.stmt, name: str) -> bool:
    return (
        isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
        and isinstance(stmt.value.func, ast.Attribute) and stmt.value.func.attr == "append"
        and isinstance(stmt.value.func.value, ast.Name) and stmt.value.func.value.id == name
        and len(stmt.value.args) == 1 and not stmt.value.keywords
        and not any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt.value.args[0]))
    )


def holds_none(value) -> bool:
    return any(isinstance(leaf, V.Const) and leaf.value is None for leaf in V.leaves(value))
