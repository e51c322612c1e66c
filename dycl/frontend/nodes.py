"""Statement markers the frontend adds to Python ASTs while it rewrites a forward.

Returns, `break` and `continue` are rewritten into assignments plus a forward `Jump` to a
`Label` in the same statement list; an `if` whose branches jump is compiled with the
statements up to the label appended to both branches (its `scf.if` joins at the label).
"""

from __future__ import annotations

import ast
import copy
import itertools
from collections.abc import Callable
from typing import Any


# Names the frontend makes up start with one of these, then a fresh number (and `_` and the
# user's name, where there is one); `desugar.display_name` turns them back for messages.
COMPREHENSION_PREFIX = "__comp"  # a comprehension's variable, local to it
ATTRIBUTE_PREFIX = "__attr"  # a module attribute forward assigns (attributes.py)
OPERAND_PREFIX = "__operand"  # a sub-expression computed before the run that uses it
RESULT_PREFIX = "__result"  # an inlined helper's return value
OBJECT_PREFIX = "__object"  # an attribute of a helper object forward builds (helper_objects.py)

RETURN_VAR = "__dycl_return"  # the variable the forward's `return`s assign (`ReturnTo`)

_fresh = itertools.count()


def fresh_id() -> int:
    """A number no other made-up name of this process has."""
    return next(_fresh)


class FrontendStmt(ast.stmt):
    """A statement only the frontend writes. Deep copies (the arms of a per-length chain
    copy the statements they hold) copy its AST and share the import-time objects it
    refers to (`_shared`: a module a `BindConst` binds, the source of a `SwitchScope`)."""

    _shared: tuple[str, ...] = ()

    def __init__(self, lineno: int = 0):
        super().__init__()
        self.lineno = lineno

    def __deepcopy__(self, memo):
        node = type(self).__new__(type(self))
        for key, value in self.__dict__.items():
            node.__dict__[key] = value if key in self._shared else copy.deepcopy(value, memo)
        return node


class _OneField(FrontendStmt):
    """A statement of one field, its `_fields[0]`: the id of a jump, or a variable's name."""

    def __init__(self, value, lineno: int = 0):
        super().__init__(lineno)
        setattr(self, self._fields[0], value)


class _Marker(_OneField):
    _fields = ("id",)


class Label(_Marker):
    """Where the jumps with the same id land."""


class Jump(_Marker):
    """A forward jump to the `Label` with the same id."""


class _Named(_OneField):
    """A statement about the variable `name`."""

    _fields = ("name",)


class BindConst(_Named):
    """`name = value` where value is known at import time (e.g. a loop target over modules)."""

    _shared = ("value",)

    def __init__(self, name: str, value: Any, lineno: int = 0):
        super().__init__(name, lineno)
        self.value = value


class FixLength(_Named):
    """On this path the runtime list `name` has `length` items: bind it to them."""

    def __init__(self, name: str, length: int, lineno: int = 0):
        super().__init__(name, lineno)
        self.length = length


class ReturnTo:
    """What `return value` means at some point: `var = value` then jump to `label`; and
    where an exception raised there goes (`raises`: exceptions.py's scopes)."""

    raises = None  # (forward's own body, outside any `try`)

    def __init__(self, var: str, label: int):
        self.var = var
        self.label = label

    def statements(self, value: ast.expr, lineno: int) -> list[ast.stmt]:
        assign = ast.Assign(targets=[ast.Name(self.var, ast.Store())], value=value)
        assign.lineno = assign.targets[0].lineno = lineno  # errors about the value name this line
        return [assign, Jump(self.label, lineno)]

    def written(self) -> set[str]:
        """Names a `return` here assigns (what a loop with an early return may write)."""
        return {self.var}


class ReturnFromLoop(ReturnTo):
    """Inside a runtime loop: also set a flag the loop condition and the code after it test."""

    def __init__(self, var: str, flag: str, label: int):
        super().__init__(var, label)
        self.flag = flag

    def statements(self, value: ast.expr, lineno: int) -> list[ast.stmt]:
        assign, jump = super().statements(value, lineno)
        return [assign, BindConst(self.flag, True, lineno), jump]

    def written(self) -> set[str]:
        return {self.var, self.flag}


class Loop(FrontendStmt):
    """A `for`/`while` kept whole until it is compiled; remembers what `return` means there.

    A loop with a `return` writes what that `return` writes (`returns.written()`): the
    enclosing function's result, or, nested in a runtime loop, the enclosing loop's return
    value and flag, which that loop must then carry and test.
    """

    _fields = ("node",)

    def __init__(self, node: ast.stmt, returns: ReturnTo):
        super().__init__(node.lineno)
        self.node = node
        self.returns = returns
        self.has_return = any(isinstance(n, ast.Return) for n in ast.walk(node))


def header_rewritten(stmt: ast.stmt, rewrite: Callable[[ast.expr], ast.expr]) -> ast.stmt | None:
    """For an `if` or a kept loop, a copy whose own expressions (the test, the iterable) are
    rewritten copies, its bodies left as they are (they are rewritten when they are compiled);
    None for any other statement. A shallow copy keeps the statement's class and marks (an
    exception's `Catch`, exceptions.py)."""
    if isinstance(stmt, ast.If):
        new = copy.copy(stmt)
        new.test = rewrite(copy.deepcopy(stmt.test))
        return new
    if isinstance(stmt, Loop):
        node = copy.copy(stmt.node)
        for field in ("iter", "test"):
            if hasattr(node, field):
                setattr(node, field, rewrite(copy.deepcopy(getattr(node, field))))
        return Loop(node, stmt.returns)
    return None


def jump_targets(stmts: list[ast.stmt]) -> set[int]:
    """Labels that jumps inside these statements (not inside unexpanded loops) go to."""
    targets = set()
    stack = list(stmts)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, Jump):
            targets.add(stmt.id)
        elif isinstance(stmt, Loop) and stmt.has_return:
            targets.add(stmt.returns.label)
        elif isinstance(stmt, ast.If):
            stack.extend(stmt.body)
            stack.extend(stmt.orelse)
    return targets


def located(node: ast.AST, where: ast.AST) -> ast.AST:
    """`node`, with each of its nodes that has no location yet placed where `where` is (the
    user's line, for errors and for the code compiled from it)."""
    for sub in ast.walk(node):
        if "lineno" in sub._attributes and getattr(sub, "lineno", None) is None:
            ast.copy_location(sub, where)
    return node


WRITTEN = "dycl_written"  # a statement the frontend made from a user's statement (`written_as`)


def written_as(stmt: ast.stmt, original: ast.stmt) -> ast.stmt:
    """Mark `stmt`, which the frontend made from the user's `original` (an inlined call's
    argument bindings: `scale = x[x > 0].sum()` from `y = self.gate(x, x[x > 0].sum())`):
    messages quote `original`, the statement that is at that line. In place; returns it."""
    setattr(stmt, WRITTEN, getattr(original, WRITTEN, original))
    return stmt


def parsed(code: str, where: ast.AST, mode: str = "exec"):
    """Python the frontend writes, every node placed where `where` is: the statements (or,
    mode="eval", the expression)."""
    tree = ast.parse(code, mode=mode)
    for sub in ast.walk(tree):
        if "lineno" in sub._attributes:
            ast.copy_location(sub, where)
    return tree.body


def assign(name: str, value: ast.expr, where: ast.AST) -> ast.Assign:
    """`name = value`, located at `where`."""
    return located(ast.Assign(targets=[ast.Name(name, ast.Store())], value=value), where)


def equality_chain(subject: ast.expr, arms: list[tuple[Any, list[ast.stmt]]], where: ast.AST) -> list[ast.stmt]:
    """`if subject == v0: arm0 / elif subject == v1: arm1 / ... / else: the last arm`, for
    arms [(v, statements)]: the last value is not tested, since the caller knows the values
    are the only ones `subject` can have."""
    chain = list(arms[-1][1])
    for value, body in reversed(arms[:-1]):
        test = ast.Compare(left=copy.deepcopy(subject), ops=[ast.Eq()], comparators=[ast.Constant(value)])
        chain = [ast.If(test=test, body=list(body), orelse=chain)]
    return [located(stmt, where) for stmt in chain]


def map_children(node: ast.AST, rewrite: Callable[[ast.AST], ast.AST]) -> ast.AST:
    """`node`, changed in place: each child AST `c` replaced by `rewrite(c)`."""
    for field, value in ast.iter_fields(node):
        if isinstance(value, list):
            setattr(node, field, [rewrite(v) if isinstance(v, ast.AST) else v for v in value])
        elif isinstance(value, ast.AST):
            setattr(node, field, rewrite(value))
    return node


def replace_nodes(node: ast.AST, replacements: dict[int, str]) -> ast.AST:
    """`node` with the nodes whose id() is a key replaced by those names. Only the nodes on
    the way to a replaced one are copied; the input is left as it is."""
    if id(node) in replacements:
        return ast.copy_location(ast.Name(replacements[id(node)], ast.Load()), node)
    if not any(id(sub) in replacements for sub in ast.walk(node)):
        return node
    return map_children(copy.copy(node), lambda child: replace_nodes(child, replacements))
