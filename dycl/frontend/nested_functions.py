"""Functions defined inside a method and called later: `def decode(x): ...` in a `generate`,
`step = lambda h: self.cell(h, memory)`.

Python makes a closure: the function's free names are the enclosing function's variables,
read when it is called (late binding), not when it is defined. DyCL inlines the function
where it is called, as it inlines a helper method, in the environment of that point, which
holds exactly the values those variables have then; `self` is the enclosing method's. The
definition binds the name to a `NestedFunction` (known at import), so each call resolves to
it. A function (or a lambda bound to a name) is compiled so when every use of its name calls
it; one also passed on as a value (`while_loop(cond, body, carries)`, `sorted(xs, key=f)`)
stays what it was before: code of the captured run that defines it, which that run can call
or pass on (a call in a later run then fails, at that line, as before).

Liveness must see that calling the function reads its free variables: `prepare` marks each
call with them (`CLOSURE_READS`, read by `liveness`).
"""

from __future__ import annotations

import ast
import copy
import dataclasses

from dycl.frontend import nodes
from dycl.frontend.desugar import source_text

CLOSURE_READS = "dycl_closure_reads"  # on a call: the free names of the function it calls
_DEFINED = "dycl_nested_function"  # on a definition `prepare` accepted


class NestedFunction:
    """A function defined in the code being compiled: its parsed source (`SourceFunction`,
    whose `function` is a stub of the same signature, for binding the calls' arguments)."""

    def __init__(self, source):
        self.source = source

    def __deepcopy__(self, memo):
        return self

    def __repr__(self) -> str:
        return f"<nested function {self.source.node.name}>"


def prepare(source, body: list[ast.stmt]) -> None:
    """Mark, in a function's (lowered later) body, the nested functions and lambdas bound to
    a name that `define` compiles, and each call of them with the names the call reads."""
    definitions = {}
    for node in _walk_own(body):
        if isinstance(node, ast.FunctionDef):
            definitions.setdefault(node.name, []).append(node)
        elif _lambda_binding(node) is not None:
            definitions.setdefault(node.targets[0].id, []).append(node)
    for name, defs in definitions.items():
        uses = [n for n in _walk_own(body) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load)]
        calls = [n for n in _walk_own(body) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]
        called = {id(n.func) for n in calls}
        if any(id(n) not in called for n in uses):
            continue  # (passed on, `while_loop(cond, body, ...)`: it stays code of the run that defines it)
        reads = set().union(*(_free_names(d) for d in defs))
        for definition in defs:
            setattr(definition, _DEFINED, True)
        for call in calls:
            setattr(call, CLOSURE_READS, reads)


def _walk_own(body: list[ast.stmt]):
    for stmt in body:
        yield from ast.walk(stmt)


def _lambda_binding(node: ast.AST) -> ast.Lambda | None:
    if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Lambda)):
        return node.value
    return None


def is_definition(stmt: ast.stmt) -> bool:
    """Whether `define` compiles this statement (a `def`, or a lambda bound to a name, that
    `prepare` accepted)."""
    return getattr(stmt, _DEFINED, False)


def _free_names(definition: ast.AST) -> set[str]:
    function = _as_function(definition)
    args = function.args
    own = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a is not None}
    for node in _walk_own(function.body):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            own.add(node.id)
    return {n.id for n in _walk_own(function.body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - own


def _as_function(definition: ast.AST) -> ast.FunctionDef:
    lam = _lambda_binding(definition)
    if lam is None:
        return definition
    body = [nodes.located(ast.Return(lam.body), lam.body)]
    function = ast.FunctionDef(name=definition.targets[0].id, args=lam.args, body=body, decorator_list=[], type_params=[])
    return ast.copy_location(function, definition)


def define(source, stmt: ast.stmt) -> ast.stmt:
    """`def name(...): ...` (or `name = lambda ...:`): `name` bound to the function, known at import."""
    function = _as_function(stmt)
    if function.decorator_list:
        raise source.error(function, f"decorated nested function `{function.name}`", "define it without a decorator, or as a method")
    args = function.args
    for default in (*args.defaults, *(d for d in args.kw_defaults if d is not None)):
        if not isinstance(default, ast.Constant):
            raise source.error(default, f"the default `{source_text(default)}` of the nested function `{function.name}` (evaluated where it is defined)",
                               "pass the value at each call")
    stub = ast.FunctionDef(name=function.name, args=copy.deepcopy(args), body=[ast.Pass()], decorator_list=[], type_params=[])
    module = ast.fix_missing_locations(ast.Module(body=[stub], type_ignores=[]))
    namespace: dict = {}
    exec(compile(module, source.file, "exec"), {}, namespace)
    nested = NestedFunction(dataclasses.replace(source, node=function, function=namespace[function.name]))
    return nodes.BindConst(function.name, nested, stmt.lineno)
