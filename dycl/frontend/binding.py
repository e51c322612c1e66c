"""Binding arguments to the parameters of a function DyCL compiles, by Python's own rules.

An inlined call (`rewrite.inline_call`) and the entry method (`dycl.compile(model, example,
method=...)`) bind their arguments with `inspect.Signature.bind` and `apply_defaults` on the
signature of the function that runs: positional and keyword arguments, defaults,
positional-only and keyword-only parameters, `*args` (a tuple) and `**kwargs` (a dict).
Python's `TypeError` (a missing, unexpected or repeated argument) is a `FrontendError` at the
call's line with Python's message.

At a call site, `*xs` and `**d` are spread when their length and keys are known at import
time (a tuple or list of runtime values, a dict with known keys, a constant): each item is
read from the operand (`xs[0]`, `d["top_k"]`). Arguments are evaluated once each, in
Python's order (positional ones, starred included, then keywords): an argument gathered
into `*args`/`**kwargs` that is not a plain name is first stored in a variable of its own.

Decorators: a grad-mode decorator is transparent (`grad_mode.grad_mode_wrapped`); any other
wrapper (`def inner(self, *args, **kwargs)`, with or without `functools.wraps`) is the
function a call runs. Its body is inlined like any helper's and calls the wrapped function,
which it reaches through its closure (`fn`): a plain function called with the module as its
first argument is compiled with that module as its `self`.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

import torch

from dycl.frontend import callees, lists
from dycl.frontend import values as V
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import FrontendError
from dycl.frontend.rewrite import NO_RECEIVER, SourceFunction, parse_function

_RECEIVER = object()  # (the receiver's place among the arguments of a method)


class _Arg:
    """One argument as the call passes it: the caller's expression for its value."""

    __slots__ = ("expr",)

    def __init__(self, expr: ast.expr):
        self.expr = expr


def signature(source: SourceFunction) -> inspect.Signature:
    """The signature of the function `source` parsed (its own, not a wrapped one's)."""
    return inspect.signature(source.function, follow_wrapped=False)


def wrapped_bodies(function, libraries) -> list[ast.FunctionDef]:
    """The parsed functions a wrapper runs (`callees.wrapped`) that DyCL may compile: not
    those of `libraries` (torch's own), nor any without source."""
    bodies = []
    for inner in callees.wrapped(function):
        if (getattr(inner, "__module__", None) or "").partition(".")[0] in libraries:
            continue
        try:
            bodies.append(parse_function(inner).node)
        except FrontendError:
            continue
    return bodies


_VISITING: set[int] = set()  # (the helpers `forwards_to_compiled` is looking into)


def forwards_to_compiled(ctx, source: SourceFunction, receiver, call: ast.Call, env) -> bool:
    """Whether a helper forwards its arguments (`return self.step(*args, **kwargs)`,
    `fn(*args, **kwargs)`: a call with `*` or `**`) to a function DyCL compiles itself,
    which its `self` or an argument known at import time names: it is compiled (inlined)
    too, as that call could not run inside a captured block."""
    forwarding = [node for node in ast.walk(source.node) if isinstance(node, ast.Call)
                  and (any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords))]
    if not forwarding or id(source.node) in _VISITING:
        return False
    known = []  # (the leading positional arguments, constants where known here)
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            break
        known.append(ctx._try_constant(arg, env, quiet=True))
    try:
        bound = signature(source).bind_partial(*(() if receiver is NO_RECEIVER else (receiver,)), *known).arguments
    except TypeError:
        return False
    inner = {name: V.Const(value) for name, value in bound.items() if value is not V.MISSING and not isinstance(value, tuple)}
    _VISITING.add(id(source.node))
    try:
        return any(ctx._callee(sub, inner, nested=True) is not None for sub in forwarding)
    finally:
        _VISITING.discard(id(source.node))


def binder(ctx, callee: SourceFunction, receiver: Any, call: ast.Call, env: dict):
    """`bind(renamed)` for `rewrite.inline_call`: (the statements that bind the callee's
    (renamed) parameters to `call`'s arguments, at the call's line; the constants to bind
    first, renamed name -> value; the parameter that is the body's `self`, or None)."""
    name = callee.node.name
    positional, keywords = _spread(ctx, call, env, name)
    params = signature(callee)
    try:
        bound = params.bind(*(() if receiver is NO_RECEIVER else (_RECEIVER,)), *positional, **keywords)
    except TypeError as error:
        raise ctx.error(call, f"call of `{name}`: {error}", "pass the arguments its signature takes") from None
    bound.apply_defaults()

    def bind(renamed: dict[str, str]):
        return _statements(ctx, call, env, params, bound.arguments, [*positional, *keywords.values()], renamed, receiver)

    return bind


def _spread(ctx, call: ast.Call, env, name: str) -> tuple[list[_Arg], dict[str, _Arg]]:
    """The call's arguments with `*xs` and `**d` spread into their items."""
    positional: list[_Arg] = []
    for arg in call.args:
        if isinstance(arg, ast.Starred):
            positional += [_Arg(item) for _, item in _items(ctx, call, arg.value, env, mapping=False)]
        else:
            positional.append(_Arg(arg))
    keywords: dict[str, _Arg] = {}
    for keyword in call.keywords:
        pairs = [(keyword.arg, keyword.value)] if keyword.arg is not None else _items(ctx, call, keyword.value, env, mapping=True)
        for key, expr in pairs:
            if not isinstance(key, str):
                raise ctx.error(call, f"call of `{name}`: keywords must be strings (`**{source_text(keyword.value)}` has {key!r})")
            if key in keywords:
                raise ctx.error(call, f"call of `{name}`: got multiple values for keyword argument '{key}'")
            keywords[key] = _Arg(expr)
    return positional, keywords


def _items(ctx, call: ast.Call, operand: ast.expr, env, mapping: bool) -> list[tuple[Any, ast.expr]]:
    """(key or index, expression) of each item of a `*` / `**` operand known at import time."""
    window = _constant_slice(operand) if not mapping else None
    if window is not None:  # `*args[1:]`: the items of `args` it selects
        items = _items(ctx, call, operand.value, env, mapping)
        return list(enumerate(expr for _, expr in items[window]))
    value = env.get(operand.id, V.MISSING) if isinstance(operand, ast.Name) else V.MISSING
    if isinstance(value, V.Const):
        value = value.value
    elif value is V.MISSING:
        value = ctx._try_constant(operand, env, quiet=True)
    if isinstance(value, V.Tup) and isinstance(value.kind, V.DictKind) == mapping:
        keys = list(value.kind.keys) if mapping else list(range(len(value.items)))
    elif not mapping and lists.items_of(V.Const(value) if isinstance(value, (tuple, list)) else value) is not None:
        keys = list(range(len(lists.items_of(V.Const(value) if isinstance(value, (tuple, list)) else value))))
    elif mapping and isinstance(value, dict):
        keys = list(value) if mapping else list(range(len(value)))
    else:
        star = "**" if mapping else "*"
        raise ctx.error(
            call, f"`{star}{source_text(operand)}` in a call DyCL compiles, whose {'keys' if mapping else 'length'} "
            "it does not know at import time",
            "pass the arguments one by one, or spread a tuple, list or dict built with a fixed length and keys",
        )
    if isinstance(operand, ast.Name):
        return [(k, _located(ast.Subscript(ast.Name(operand.id, ast.Load()), ast.Constant(k), ast.Load()), call)) for k in keys]
    return [(k, _located(ast.Constant(value[k]), call)) for k in keys]  # (a constant: read once, here)


def _constant_slice(operand: ast.expr) -> slice | None:
    """The slice of `name[a:b:c]` with constant (or absent) bounds, else None."""
    if not (isinstance(operand, ast.Subscript) and isinstance(operand.value, ast.Name) and isinstance(operand.slice, ast.Slice)):
        return None
    bounds = [operand.slice.lower, operand.slice.upper, operand.slice.step]
    if not all(b is None or isinstance(b, ast.Constant) and type(b.value) is int for b in bounds):
        return None
    return slice(*(None if b is None else b.value for b in bounds))


def _statements(ctx, call, env, params: inspect.Signature, arguments: dict, order: list[_Arg], renamed, receiver):
    """The statements binding each parameter, the arguments evaluated in `order`."""
    first = next(iter(params.parameters), None)
    target: dict[int, tuple[str, Any]] = {}  # id(_Arg) -> (parameter, key in *args/**kwargs or None)
    gathered: dict[str, dict] = {}
    for name, value in arguments.items():
        kind = params.parameters[name].kind
        if kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            items = dict(enumerate(value)) if kind is inspect.Parameter.VAR_POSITIONAL else value
            gathered[name] = {}
            for key, item in items.items():
                target[id(item)] = (name, key)
        elif isinstance(value, _Arg):
            target[id(value)] = (name, None)
    statements: list[ast.stmt] = []
    bindings: dict[str, Any] = {}
    self_param = None
    if arguments.get(first) is _RECEIVER:
        bindings[renamed[first]], self_param = receiver, first
    for name, items in gathered.items():
        for key, item in _items_of(arguments[name]):
            if item is _RECEIVER:  # (`def inner(*args, **kwargs)` on a method: `args[0]` is `self`)
                bindings[f"{renamed[name]}__self"] = receiver
                items[key] = ast.Name(f"{renamed[name]}__self", ast.Load())
    for k, arg in enumerate(order):
        name, key = target[id(arg)]
        module = _module_argument(arg.expr, env)
        if key is None and name == first and receiver is NO_RECEIVER and module is not None:
            bindings[renamed[name]], self_param = module, name  # (`fn(self, *args, **kwargs)` in a wrapper)
            continue
        if key is None:
            statements.append(_assign(renamed[name], arg.expr, call))
        elif _plain(arg.expr):
            gathered[name][key] = arg.expr
        else:  # (evaluated in its place among the arguments)
            statements.append(_assign(f"{renamed[name]}__{k}", arg.expr, call))
            gathered[name][key] = ast.Name(f"{renamed[name]}__{k}", ast.Load())
    for name, value in arguments.items():
        kind = params.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            items = [gathered[name][k] for k in range(len(value))]
            statements.append(_assign(renamed[name], ast.Tuple(items, ast.Load()), call))
        elif kind is inspect.Parameter.VAR_KEYWORD:
            items = gathered[name]
            display = ast.Dict([ast.Constant(k) for k in value], [items[k] for k in value])
            statements.append(_assign(renamed[name], display, call))
        elif not isinstance(value, _Arg) and value is not _RECEIVER:
            bindings[renamed[name]] = value  # a default: the object the `def` made
    return statements, bindings, self_param


def _items_of(value) -> list[tuple[Any, Any]]:
    return list(enumerate(value)) if isinstance(value, tuple) else list(value.items())


def _plain(expr: ast.expr) -> bool:
    """An argument whose reading has no effect and that later arguments cannot change."""
    if isinstance(expr, ast.Subscript):
        return isinstance(expr.value, ast.Name) and isinstance(expr.slice, ast.Constant)
    return isinstance(expr, (ast.Name, ast.Constant))


def _module_argument(expr: ast.expr, env) -> torch.nn.Module | None:
    """The module an argument names when it is known here (`self`, `args[0]` of a tuple
    holding it), else None."""
    value = env.get(expr.id) if isinstance(expr, ast.Name) else None
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name) and isinstance(expr.slice, ast.Constant):
        holder = env.get(expr.value.id)
        if isinstance(holder, V.Tup) and not isinstance(holder.kind, V.DictKind) and isinstance(expr.slice.value, int):
            value = holder.items[expr.slice.value] if -len(holder.items) <= expr.slice.value < len(holder.items) else None
    if isinstance(value, V.Const) and isinstance(value.value, torch.nn.Module):
        return value.value
    return None


def _assign(name: str, value: ast.expr, call: ast.AST) -> ast.stmt:
    return _located(ast.Assign(targets=[ast.Name(name, ast.Store())], value=value), call)


def _located(node, where):
    """`node` and its parts without a location at `where` (the call)."""
    for child in ast.walk(node):
        if isinstance(child, (ast.expr, ast.stmt)) and not hasattr(child, "lineno"):
            ast.copy_location(child, where)
    return node


# ----- the entry method -----------------------------------------------------------------


class Entry:
    """The entry method's parameters bound to the example inputs (positional only): the
    parameters they do not reach take their defaults, `*args` the examples past the named
    parameters (a tuple) and `**kwargs` nothing (an empty dict). Which example is which input
    is named by the signature Python shows (through `functools.wraps`: `generate(idx, n)`,
    not `inner(*args)`)."""

    def __init__(self, source: SourceFunction, receiver, examples: tuple):
        self.source = source
        fdef = source.node
        params = signature(source)
        placeholders = [_Arg(ast.Constant(k)) for k in range(len(examples))]
        try:
            bound = params.bind(_RECEIVER, *placeholders)
        except TypeError as error:
            raise source.error(fdef, f"`{fdef.name}` called with the {len(examples)} example input(s): {error}",
                               "give one example per parameter it needs (examples are positional)") from None
        bound.apply_defaults()
        self.params, self.arguments, self.receiver = params, bound.arguments, receiver
        self.self_name = next(iter(params.parameters))
        if self.arguments.get(self.self_name) is not _RECEIVER:
            raise source.error(fdef, f"`{fdef.name}` takes no `self` as its first positional parameter")
        self.names = _shown_names(source, receiver, len(examples))

    def trailing_defaults(self) -> list:
        """The defaults of the last parameters the examples bind, where each of them has one
        a manifest can hold (None, a bool, an int, a float, a str): a call of the compiled
        model may leave them out, as a call of the method may (`model(x)` for `forward(self,
        x, hx=None)`)."""
        defaults: list = []
        for name, item in reversed(list(self.arguments.items())):
            parameter = self.params.parameters[name]
            if not isinstance(item, _Arg):
                if parameter.kind is inspect.Parameter.VAR_POSITIONAL and item:
                    break  # (examples past the named parameters)
                continue  # (keyword-only, `**kwargs`, or past the examples: compiled with its default)
            default = parameter.default
            if parameter.kind not in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) \
                    or default is inspect.Parameter.empty or not (default is None or type(default) in (bool, int, float, str)):
                break
            defaults.insert(0, default)
        return defaults

    def env(self, inputs: list) -> dict[str, V.EnvValue]:
        """The parameters' values, `inputs` being the examples' values."""
        def value(item):
            if item is _RECEIVER:
                return V.Const(self.receiver)
            return inputs[item.expr.value] if isinstance(item, _Arg) else V.Const(item)

        env: dict[str, V.EnvValue] = {}
        for name, item in self.arguments.items():
            kind = self.params.parameters[name].kind
            if kind is inspect.Parameter.VAR_POSITIONAL:
                env[name] = V.Tup(tuple(value(i) for i in item)) if item else V.Const(())
            elif kind is inspect.Parameter.VAR_KEYWORD:
                env[name] = V.Const({})
            else:
                env[name] = value(item)
        return env


def _shown_names(source: SourceFunction, receiver, count: int) -> list[str]:
    """The names of the parameters the examples bind, as `inspect.signature` shows the
    method (following `functools.wraps`); `args_<k>` for those `*args` takes."""
    try:
        shown = inspect.signature(source.function.__get__(receiver))
        bound = shown.bind(*range(count)).arguments
    except (TypeError, ValueError):
        shown, bound = signature(source), signature(source).bind(None, *range(count)).arguments
    names = {}
    for name, value in bound.items():
        if isinstance(value, tuple):
            names.update({v: f"{name}_{k}" for k, v in enumerate(value)})
        elif isinstance(value, int):
            names[value] = name
    return [names.get(k, f"input_{k}") for k in range(count)]
