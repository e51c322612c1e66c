"""`raise` and `try`/`except`/`else`/`finally` in forward and in the helpers DyCL inlines.

The host program is Python, so an exception's edges stay in the host. Every exception DyCL
compiles is one a `raise` statement of the compiled code makes; which handler catches it is
known when the model is imported, from the `try` statements around the `raise` and around
the calls that inlined it (the *scope* `rewrite.lower` gives each statement: `TryScope`,
`CallScope`, `Boundary`, chained outwards):

- an exception no handler catches leaves forward: the `raise` is eager's exception raised
  where eager raises it, as `asserts.py` raises a failing assert (`dycl.error` with the
  builtin's name as `kind` and eager's message, in the arm of the runtime `if` that reaches
  it). The rest of that path never runs: its environment is *dead* (`DEAD`), the code after
  it on the path is not compiled and a join takes the other path's values. One that every
  call reaches (forward's top level) is a FrontendError at the `raise`, as for an assert.
  Only Python's builtin exceptions can leave forward (the host raises them by name);
- an exception a handler catches (`raise HighwayException(out, i + 1)` in a layer's loop,
  caught two modules up) is control flow. Each `raise` a handler catches is a *site* of it
  with a flag and variables of its own: the `raise` stores what the handler reads of the
  exception (`e.message`: the value its class's `__init__` stores) and sets the site's flag
  and `RAISED` (an exception is on its way); statements after it are skipped (each run of
  statements DyCL meets with `RAISED` possibly set becomes `if not RAISED: ...`, up to the
  next `Catch`, scope switch or finally step; the inlined helpers it leaves return nothing),
  and the `Catch` that ends the `try` runs the handler's body once per site whose flag may
  be set (each site's `e.message` may have a structure of its own: DeeBERT's tuple of the
  exits so far), or the `else:` body when `RAISED` is false. A known flag costs nothing; a
  runtime one is a host `scf.if`;
- `finally:` runs on every path: `RAISED` is put aside before it and back after it.

What compiled code cannot raise is never caught: an exception from inside a sub-DNN's
computation (an index error, a shape error) is eager's but not the compiled program's, so a
handler of such a class (`except IndexError`, `except Exception`, a bare `except`) is
refused at its line. Refused too: a `return`/`break`/`continue` that would leave a `try`
that has a `finally` (the jump would skip it), an exception of the model's own class that
forward does not catch (the host raises builtins only), one carried out of a runtime loop's
body or out of a `finally` body, and a re-raise.
"""

from __future__ import annotations

import ast
import builtins
import copy
import inspect
import textwrap
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable

import torch

from dycl.dialects.dycl import ERROR_KINDS
from dycl.frontend import asserts, nodes
from dycl.frontend import values as V
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import FrontendError

RAISED = "__dycl_raised"  # an exception a handler will catch is on its way to it
DEAD = "__dycl_dead"  # this path raised an exception that leaves forward: nothing after it runs
SCOPE = "dycl_raises"  # the attribute of a lowered statement that holds its scope
_FLAG = "__caught"  # (the flag of each `raise` a handler catches: this prefix, `<handler>_<site>`)
_PAYLOAD = "__exc"  # (the attributes it stores for it: this prefix, `<handler>_<site>_<attribute>`)


class _NotReturned:
    def __repr__(self) -> str:
        return "<not returned>"


# The result of an inlined helper that an exception leaves: never read (the statement that
# reads it is skipped); a join gives it the other path's value.
NOT_RETURNED = V.Const(_NotReturned())
_NOT_RETURNED_MARK = "<not returned>"  # (what a `Carry` of NOT_RETURNED carries)

# Exceptions that eager raises from the computation itself (a tensor op's RuntimeError, an
# IndexError or ValueError of torch or of a host list, an assert's AssertionError): compiled
# code never raises them as eager does, so a handler that catches one cannot be compiled.
COMPUTATION_ERRORS = (
    RuntimeError, IndexError, ValueError, TypeError, KeyError, ZeroDivisionError, OverflowError,
    FloatingPointError, AssertionError, AttributeError, StopIteration, MemoryError, NameError,
)


# ----- scopes: which handler catches a `raise` -------------------------------------------

class _Shared:
    """Import-time objects that deep copies of the statements share, never copy."""

    def __deepcopy__(self, memo):
        return self


@dataclass(eq=False)
class Handler(_Shared):
    """One `except` clause: the classes it catches, and the attributes of the caught
    exception its body reads (`e.message`, read as `<prefix>_message`). Each `raise` it
    catches is a *site* with a flag and variables of its own (its `e.message` may have
    another structure than another's: the body is compiled once per site that may reach it)."""

    types: tuple
    uid: int
    attributes: set = field(default_factory=set)
    node: ast.ExceptHandler | None = None
    sites: list = field(default_factory=list)  # (flag, prefix) of each `raise` compiled that it catches

    @property
    def prefix(self) -> str:
        return f"{_PAYLOAD}{self.uid}"

    def site(self) -> tuple[str, str]:
        k = len(self.sites)
        self.sites.append((f"{_FLAG}{self.uid}_{k}", f"{_PAYLOAD}{self.uid}_{k}"))
        return self.sites[-1]


@dataclass(eq=False)
class TryScope(_Shared):
    handlers: list
    parent: object = None


@dataclass(eq=False)
class CallScope(_Shared):
    """The body of an inlined helper: an exception leaving it leaves its result unset."""

    result: str
    parent: object = None


@dataclass(eq=False)
class Boundary(_Shared):
    """A body DyCL carries no exception out of (a runtime loop's, a `finally`'s)."""

    what: str
    parent: object = None


def within(returns: nodes.ReturnTo, scope) -> nodes.ReturnTo:
    """`returns` (what `return` means) for a body whose exceptions go to `scope`."""
    inner = copy.copy(returns)
    inner.raises = scope
    return inner


def call_scope(result: str, caller: ast.stmt | None) -> CallScope:
    """The scope of a helper inlined at `caller`, whose result goes to `result`."""
    return CallScope(result, getattr(caller, SCOPE, None))


def loop_body(returns: nodes.ReturnTo, loop: nodes.Loop) -> nodes.ReturnTo:
    """`returns` for the body of `loop`, which runs as a runtime loop."""
    return within(returns, Boundary("the body of a runtime loop", loop.returns.raises))


def mark(stmts: list[ast.stmt], scope) -> list[ast.stmt]:
    """Give the statements (that have none yet) the scope their exceptions go to; mark the
    calls inside a `try` (`in_try`)."""
    if scope is None:
        return stmts
    inside = _inside_try(scope)
    for stmt in stmts:
        if not hasattr(stmt, SCOPE):
            setattr(stmt, SCOPE, scope)
            if inside:
                for node in ast.walk(stmt):
                    if isinstance(node, ast.Call):
                        setattr(node, _IN_TRY, True)
    return stmts


_IN_TRY = "dycl_in_try"


def _inside_try(scope) -> bool:
    while scope is not None and not isinstance(scope, TryScope):
        scope = scope.parent
    return scope is not None


def must_inline(call: ast.Call, function, receiver) -> bool:
    """Whether a call inside a `try` runs code that may raise: it is compiled (inlined) so
    that its `raise` goes to the handler; run inside a captured block, it could not."""
    return getattr(call, _IN_TRY, False) and _may_raise(function, receiver)


def _may_raise(function, receiver) -> bool:
    """Whether `function`, or a method of a module `receiver` holds (its submodules'
    included), has a `raise` statement: an over-approximation of what the call may raise."""
    functions = [function]
    if isinstance(receiver, torch.nn.Module):
        functions += [f for module in receiver.modules() for cls in type(module).__mro__
                      if cls.__module__.partition(".")[0] not in ("torch", "builtins")
                      for f in vars(cls).values() if inspect.isfunction(f)]
    return any(_raises(f) for f in functions)


@lru_cache(maxsize=None)
def _raises(function) -> bool:
    parsed = _parsed(function)
    return parsed is not None and any(isinstance(n, ast.Raise) for n in ast.walk(parsed[0]))


def _parsed(function) -> tuple[ast.FunctionDef, str] | None:
    """A function's definition, its lines those of its file, and the file; None without
    source. (`rewrite.parse_function` for what is not compiled, only read.)"""
    try:
        lines, first = inspect.getsourcelines(function)
        file = inspect.getsourcefile(function) or "<unknown>"
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    ast.increment_lineno(tree, first - 1)
    definition = tree.body[0]
    return (definition, file) if isinstance(definition, ast.FunctionDef) else None


def same_scope(new: ast.stmt, original: ast.stmt) -> ast.stmt:
    """`new`, made from `original`, with `original`'s scope."""
    if hasattr(original, SCOPE):
        setattr(new, SCOPE, getattr(original, SCOPE))
    return new


def catcher(scope, cls: type):
    """(the handler that catches `cls` raised in `scope` or None, the results of the
    inlined helpers it leaves, the boundary it crosses first or None)."""
    crossed, boundary = [], None
    while scope is not None:
        if isinstance(scope, TryScope):
            for handler in scope.handlers:
                if issubclass(cls, handler.types):
                    return handler, crossed, boundary
        elif isinstance(scope, CallScope):
            crossed.append(scope.result)
        elif boundary is None:
            boundary = scope
        scope = scope.parent
    return None, crossed, boundary


# ----- markers ------------------------------------------------------------------------

class Carry(ast.Assign):
    """`target = source` (a flag, or a constant) that runs on every path, an exception on
    its way or not (it is never skipped). An `Assign` for liveness."""

    def __init__(self, target: str, source: str | bool, lineno: int = 0, constant: bool = False):
        value = ast.Constant(source) if constant or not isinstance(source, str) else ast.Name(source, ast.Load())
        super().__init__(targets=[ast.Name(target, ast.Store())], value=value, lineno=lineno)


class Raised(ast.Assign):
    """The flags of the handler an exception goes to, and `RAISED`, set; the results of the
    inlined helpers it leaves undefined."""

    def __init__(self, flag: str, crossed: list[str], lineno: int = 0):
        super().__init__(targets=[ast.Name(flag, ast.Store()), ast.Name(RAISED, ast.Store())],
                         value=ast.Constant(True), lineno=lineno)
        self.crossed = crossed


class Catch(ast.If):
    """The end of a `try`: `if RAISED: <the handler whose flag is set> else: <else body>`.
    An `If` for liveness and jump targets; compiled with the handlers no exception reaches
    left out."""

    def __init__(self, handlers: list[Handler], arms: list[ast.stmt], orelse: list[ast.stmt], lineno: int):
        super().__init__(test=ast.Name(RAISED, ast.Load()), body=arms, orelse=orelse, lineno=lineno)
        self.handlers = handlers


_UNGUARDED = "dycl_unguarded"


def _unguarded(stmt: ast.stmt) -> bool:
    return isinstance(stmt, (Carry, Catch)) or getattr(stmt, _UNGUARDED, False)


# ----- lowering (rewrite.lower) -------------------------------------------------------

def lower_try(source, stmt: ast.Try, returns: nodes.ReturnTo, lower: Callable[..., list]) -> list[ast.stmt]:
    """The statements a `try` becomes; `lower(stmts, returns)` lowers a body."""
    outer = returns.raises
    if stmt.finalbody:
        _refuse_leaving(source, stmt)
    handlers = [_handler(source, h) for h in stmt.handlers]
    start = [Carry(RAISED, RAISED, stmt.lineno)]
    body = lower(stmt.body, within(returns, TryScope(handlers, outer)))
    arms: list[ast.stmt] = []  # (one per handler, for liveness and jumps: compile_catch makes one per site)
    for handler in reversed(handlers):
        handler_body = lower(_read_attributes(source, handler), within(returns, outer))
        arm = ast.If(test=ast.Name(f"{_FLAG}{handler.uid}", ast.Load()), body=handler_body, orelse=arms)
        arms = [nodes.located(arm, handler.node)]
    orelse = lower(stmt.orelse, within(returns, outer))
    lowered = [*start, *body, Catch(handlers, arms, orelse, stmt.lineno)]
    if stmt.finalbody:
        pending = f"__pending{nodes.fresh_id()}"
        final = stmt.finalbody[0].lineno
        lowered += [Carry(pending, RAISED, final), Carry(RAISED, False, final),
                    *lower(stmt.finalbody, within(returns, Boundary("a `finally` body", outer))),
                    Carry(RAISED, pending, final)]
    return lowered


def _refuse_leaving(source, stmt: ast.Try) -> None:
    """A jump out of a `try` with a `finally` would skip the `finally`."""
    for part in (stmt.body, *(h.body for h in stmt.handlers), stmt.orelse):
        for node in _own_nodes(part):
            if isinstance(node, (ast.Return, ast.Break, ast.Continue)):
                word = type(node).__name__.lower()
                raise source.error(
                    node, f"`{word}` inside a `try` that has a `finally` (DyCL runs `finally` where the `try` ends)",
                    f"set a variable and `{word}` after the `try` statement",
                )


def _own_nodes(stmts: list[ast.stmt]):
    """The nodes of these statements but those of nested functions and the `break` and
    `continue` of nested loops (which stay inside them)."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, (ast.For, ast.While)):
            stack.extend(n for n in ast.walk(node) if isinstance(n, ast.Return))
            stack.extend([node.iter] if isinstance(node, ast.For) else [node.test])
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _handler(source, node: ast.ExceptHandler) -> Handler:
    """The classes an `except` clause catches, resolved when the model is imported."""
    written = f"except {source_text(node.type)}" if node.type is not None else "except"
    if node.type is None:
        types = (BaseException,)
    else:
        namespace = {**source.globals, **source.closure}
        try:
            types = eval(compile(ast.Expression(node.type), source.file, "eval"), namespace, {})
        except Exception as error:
            raise source.error(node, f"`{written}`: its class is not known when the model is imported ({error})",
                               "name an exception class defined at module level") from None
        types = types if isinstance(types, tuple) else (types,)
        if not all(isinstance(t, type) and issubclass(t, BaseException) for t in types):
            raise source.error(node, f"`{written}`: not an exception class")
    computation = [e.__name__ for e in COMPUTATION_ERRORS if issubclass(e, types)]
    if computation:
        raise source.error(
            node,
            f"`{written}` catches {', '.join(computation[:3])}{' ...' if len(computation) > 3 else ''}, which eager raises "
            "from inside the computation of the `try` body (a tensor op, an index), where the compiled program raises nothing",
            "catch an exception class of the model's own (`class StopDecoding(Exception)`) that the code raises, "
            "or test the condition before the computation",
        )
    return Handler(types, nodes.fresh_id(), node=node)


def _read_attributes(source, handler: Handler) -> list[ast.stmt]:
    """The handler's body with `e.attr` read from the variables the `raise` fills."""
    node, name = handler.node, handler.node.name
    body = copy.deepcopy(node.body)
    if name is None:
        return body

    class Reads(ast.NodeTransformer):
        def visit_Attribute(self, expr: ast.Attribute):
            if isinstance(expr.value, ast.Name) and expr.value.id == name and isinstance(expr.ctx, ast.Load):
                handler.attributes.add(expr.attr)
                return ast.copy_location(ast.Name(f"{handler.prefix}_{expr.attr}", ast.Load()), expr)
            return self.generic_visit(expr)

        def visit_Name(self, expr: ast.Name):
            if expr.id == name:
                raise source.error(
                    expr, f"`{name}`, the exception `{source_text(node.type)}` caught, used as a value",
                    f"read its attributes (`{name}.message`, `{name}.args`)",
                )
            return expr

    return [Reads().visit(stmt) for stmt in body]


# ----- compiling (the visitor's hooks) ------------------------------------------------

def compile_raise(c, stmt: ast.Raise, block) -> None:
    """`raise E(args)`: to its handler, or out of forward (see the module's docstring)."""
    cls, args = _exception(c, stmt, block.env)
    handler, crossed, boundary = catcher(getattr(stmt, SCOPE, None), cls)
    if handler is None:
        _leave_forward(c, stmt, cls, args, block)
        return
    if boundary is not None:
        raise c.error(stmt, f"`{source_text(stmt)}` caught outside {boundary.what} it is raised in",
                      "catch it inside that body, or set a flag there and raise after it")
    flag, prefix = handler.site()
    block.replace_current([*_attribute_statements(c, stmt, cls, args, handler, prefix), Raised(flag, crossed, stmt.lineno)])


def _exception(c, stmt: ast.Raise, env) -> tuple[type, list[ast.expr]]:
    """The class `stmt` raises (known at import) and the expressions of its arguments."""
    if stmt.exc is None:
        raise c.error(stmt, "re-raise (`raise` without an exception)", "raise a new exception: `raise RuntimeError(...)`")
    call = stmt.exc if isinstance(stmt.exc, ast.Call) else None
    cls = c._try_constant(call.func if call else stmt.exc, env, quiet=True)
    if not (isinstance(cls, type) and issubclass(cls, BaseException)):
        raise c.error(stmt, f"`{source_text(stmt)}`: the exception raised is not a class known when the model is imported",
                      "raise an instance of a class: `raise ValueError(f\"...\")`")
    if call is not None and (call.keywords or any(isinstance(a, ast.Starred) for a in call.args)):
        raise c.error(stmt, f"`{source_text(stmt)}`: keyword or starred arguments of an exception", "pass them by position")
    return cls, list(call.args) if call else []


def _leave_forward(c, stmt: ast.Raise, cls: type, args: list[ast.expr], block) -> None:
    if ERROR_KINDS.get(cls.__name__) is not cls:
        own = getattr(builtins, cls.__name__, None) is not cls
        raise c.error(
            stmt, f"`{source_text(stmt)}` leaves forward: "
            + (f"`{cls.__name__}` is a class of the model's own, and the host program raises Python's builtin exceptions only"
               if own else f"`{cls.__name__}` is not among the exceptions the host program raises ({', '.join(sorted(ERROR_KINDS))})"),
            f"catch it in forward (`except {cls.__name__}`), or raise a builtin exception (`raise ValueError(...)`)",
        )
    if len(args) > 1:
        raise c.error(stmt, f"`{source_text(stmt)}`: an exception of several arguments", "pass one message: `raise ValueError(f\"...\")`")
    message = asserts.message(c, stmt, args[0] if args else None, block.env)
    if asserts.every_call_reaches(c):
        asserts.fails_on_example(c, stmt, message, block.env, cls, f"`{source_text(stmt)}` runs on every call")
    asserts.raise_error(c, stmt, message, block.env, cls.__name__)
    block.env[DEAD] = V.Const(True)
    block.i += 1


def _attribute_statements(c, stmt: ast.Raise, cls: type, args: list[ast.expr], handler: Handler, prefix: str) -> list[ast.stmt]:
    """`<prefix>_<attr> = ...` for each attribute of the exception the handler reads, as the
    class's `__init__` stores it; the arguments are evaluated once each, in order."""
    if not handler.attributes:  # (arguments that call something are evaluated, for what the calls do)
        return [nodes.located(ast.Expr(a), stmt) for a in args if any(isinstance(n, ast.Call) for n in ast.walk(a))]
    temporaries = [f"{prefix}_arg{k}" for k in range(len(args))]
    statements = [nodes.assign(t, a, stmt) for t, a in zip(temporaries, args)]
    stored = _stored_attributes(c, stmt, cls, [ast.Name(t, ast.Load()) for t in temporaries])
    for attribute in sorted(handler.attributes):
        if attribute not in stored:
            raise c.error(
                handler.node, f"`{handler.node.name}.{attribute}`: `{cls.__name__}` raised at line {stmt.lineno} has no "
                f"attribute `{attribute}` DyCL knows (what its `__init__` stores from its arguments, and `args`)",
                "store it in `__init__`: `self.%s = ...`" % attribute,
            )
        statements.append(nodes.assign(f"{prefix}_{attribute}", stored[attribute], stmt))
    return statements


def _stored_attributes(c, stmt: ast.Raise, cls: type, args: list[ast.expr]) -> dict[str, ast.expr]:
    """attribute -> expression (of `args`) for what an instance of `cls` made from `args`
    holds: `args`, and what `__init__` stores (`self.message = message`)."""
    stored: dict[str, ast.expr] = {"args": ast.Tuple(list(args), ast.Load())}
    init = cls.__init__
    parsed = _parsed(init) if inspect.isfunction(init) else None
    if parsed is None:
        return stored  # (BaseException's: only `args`)
    definition, file = parsed
    try:
        bound = inspect.signature(init).bind(None, *args)
    except TypeError as error:
        raise c.error(stmt, f"`{source_text(stmt)}`: {error}") from None
    bound.apply_defaults()
    self_name, *params = list(bound.arguments)
    values = {}
    for name in params:
        value = bound.arguments[name]
        if isinstance(value, ast.AST):
            values[name] = value
        elif isinstance(value, (bool, int, float, str, type(None))):
            values[name] = ast.Constant(value)
        else:
            raise c.error(stmt, f"`{source_text(stmt)}`: the default of `{name}` of `{cls.__name__}.__init__` is no constant")

    class Arguments(ast.NodeTransformer):
        def visit_Name(self, expr):
            return copy.deepcopy(values[expr.id]) if expr.id in values else expr

    for line in definition.body:
        target = line.targets[0] if isinstance(line, ast.Assign) and len(line.targets) == 1 else None
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == self_name:
            stored[target.attr] = Arguments().visit(copy.deepcopy(line.value))
        elif isinstance(line, ast.Expr) and (isinstance(line.value, ast.Constant) or _initializes_base(line.value)):
            continue  # (a docstring; `super().__init__(message)` sets `args`, which the call's arguments are)
        elif not isinstance(line, ast.Pass):
            raise FrontendError(f"`{cls.__name__}.__init__` does more than store its arguments (`{source_text(line)}`)",
                                "store the arguments as attributes: `self.message = message`", file=file, line=line.lineno)
    return stored


def _initializes_base(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "__init__"


def compile_raised(c, stmt: Raised, block) -> None:
    for name in (stmt.targets[0].id, RAISED):
        block.env[name] = V.Const(True)
    for result in stmt.crossed:
        block.env[result] = NOT_RETURNED
    block.i += 1


def compile_carry(c, stmt: Carry, block) -> None:
    value = stmt.value
    if isinstance(value, ast.Constant) and value.value == _NOT_RETURNED_MARK:
        block.env[stmt.targets[0].id] = NOT_RETURNED
    else:
        block.env[stmt.targets[0].id] = V.Const(value.value) if isinstance(value, ast.Constant) else block.env.get(value.id, V.Const(False))
    block.i += 1


def compile_catch(c, stmt: Catch, block) -> None:
    """The handler of each `raise` that may have set its flag (its body compiled for that
    site's attributes), or the `else:` body; what no exception reaches is left out (a
    known flag costs nothing)."""
    env = block.env
    orelse = [Carry(RAISED, False, stmt.lineno), *stmt.orelse]
    if _known_false(env.get(RAISED)):
        block.replace_current(orelse)
        return
    bodies = {arm.test.id: arm.body for arm in _chain(stmt.body)}
    arms, mine = [], set()
    for handler in stmt.handlers:
        for flag, prefix in handler.sites:
            mine.add(flag)
            if not _known_false(env.get(flag)):
                body = [_Renamed(handler.prefix, prefix).visit(s) for s in copy.deepcopy(bodies[f"{_FLAG}{handler.uid}"])]
                arms.append((flag, [Carry(flag, False, stmt.lineno), Carry(RAISED, False, stmt.lineno), *body]))
    elsewhere = any(n.startswith(_FLAG) and n not in mine and not _known_false(v) for n, v in env.items())
    # (when every exception on its way goes to one of these handlers, the last needs no test)
    body = [] if elsewhere or not arms else arms.pop()[1]
    for flag, arm in reversed(arms):
        body = [_unguarded_if(ast.Name(flag, ast.Load()), arm, body, stmt)]
    new = _unguarded_if(stmt.test, body, orelse, stmt)
    # (after it no exception goes to these handlers, nor, when they take every one on its
    # way, is any on its way)
    settled = [Carry(flag, False, stmt.lineno) for flag in sorted(mine) if flag in env]
    block.replace_current([new, *settled, *([] if elsewhere else [Carry(RAISED, False, stmt.lineno)])])


def _unguarded_if(test: ast.expr, body: list[ast.stmt], orelse: list[ast.stmt], where: ast.AST) -> ast.If:
    new = nodes.located(ast.If(test=test, body=body, orelse=orelse), where)
    setattr(new, _UNGUARDED, True)
    return new


def _chain(arms: list[ast.stmt]):
    while arms:
        yield arms[0]
        arms = arms[0].orelse


class _Renamed(ast.NodeTransformer):
    """A handler's body reading one site's attributes."""

    def __init__(self, prefix: str, site: str):
        self.prefix, self.site = prefix + "_", site + "_"

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id.startswith(self.prefix):
            node.id = self.site + node.id[len(self.prefix):]
        return node


def _results_left(scope) -> list[str]:
    """The results of the inlined helpers an exception on its way at a statement of `scope`
    surely leaves: those up to the first `try` around it."""
    results = []
    while scope is not None and not isinstance(scope, TryScope):
        if isinstance(scope, CallScope):
            results.append(scope.result)
        scope = scope.parent
    return results


def _known_false(value) -> bool:
    return value is None or (isinstance(value, V.Const) and value.value is False)


def skipped(c, block, scope_switch: type) -> bool:
    """Before a statement: on a dead path, skip it (but for scope switches); with an
    exception possibly on its way, put the statements up to the next step that runs on
    every path (a `Catch`, a `Carry`, a scope switch) under `if not RAISED:`."""
    stmt, env = block.stmts[block.i], block.env
    if DEAD in env:
        if isinstance(stmt, scope_switch):
            return False
        block.i += 1
        return True
    if _known_false(env.get(RAISED)) or _unguarded(stmt) or isinstance(stmt, scope_switch):
        return False
    end = block.i + 1
    while end < len(block.stmts) and not (_unguarded(block.stmts[end]) or isinstance(block.stmts[end], scope_switch)):
        end += 1
    # (on the way out, the helpers this code is inlined from return nothing)
    scope = next((getattr(s, SCOPE) for s in block.stmts[block.i:end] if hasattr(s, SCOPE)), None)
    left = [Carry(result, _NOT_RETURNED_MARK, stmt.lineno, constant=True) for result in _results_left(scope)]
    guarded = _unguarded_if(ast.UnaryOp(ast.Not(), ast.Name(RAISED, ast.Load())),
                            [Carry(RAISED, False, stmt.lineno), *block.stmts[block.i:end]], left, stmt)
    block.stmts[block.i:end] = [guarded]
    return False


# ----- joins --------------------------------------------------------------------------

def dead(env: dict) -> bool:
    return DEAD in env


def for_join(branch_envs: list[dict]) -> tuple[dict, dict, set[str]]:
    """The environments a join reads, and the names it joins whatever liveness says (an
    exception's flags and attributes: what reads them, a handler's body for the site, is
    made when the `Catch` is compiled). A dead path's holds the other path's constants and
    nothing else (the join gives the other names typed placeholders there); a helper's
    result that an exception left unset is the other path's constant, or undefined; a flag
    one path never set is false there."""
    then_env, else_env = branch_envs
    if dead(then_env) != dead(else_env):
        live = else_env if dead(then_env) else then_env
        placeholder = {name: _stand_in(value) for name, value in live.items()}
        return (placeholder, else_env, set()) if dead(then_env) else (then_env, placeholder, set())
    carried = {n for env in branch_envs for n in env if n == RAISED or n.startswith((_FLAG, _PAYLOAD))}
    flags = {n for n in carried if n == RAISED or n.startswith(_FLAG)}
    then_env, else_env = ({**dict.fromkeys(flags - env.keys(), V.Const(False)), **env} for env in branch_envs)
    return _settled(then_env, else_env), _settled(else_env, then_env), carried


def _settled(env: dict, other: dict) -> dict:
    if not any(value is NOT_RETURNED for value in env.values()):
        return env
    return {name: _stand_in(other.get(name, V.UNDEF)) if value is NOT_RETURNED else value for name, value in env.items()}


def _stand_in(value):
    return value if isinstance(value, V.Const) else V.UNDEF
