"""Tensor predicates: calls that answer a Python bool about tensor values (issue 28).

A predicate of a tensor's metadata (`x.dim() == 2`, `x.dtype == torch.float32`,
`torch.is_tensor(x)`, `x.is_contiguous()`) is known when the model is imported: export reads
it as a constant and the `if` folds. A predicate of a tensor's values decides on the host:
`torch.any(m)`, `x.eq(y).all()` and `torch.isnan(x).any()` are 0-d bool tensors, read with
`torch.aten.Bool.Tensor`; the calls below return a Python bool that export cannot trace
(`torch.allclose` reads `.item()`), so they are computed here, in the host program:

- `torch.equal(a, b)` / `a.equal(b)`: the host op `torch.aten.equal` (numpy's `array_equal`:
  same shape, same values);
- `torch.allclose(a, b, rtol, atol, equal_nan)` / `a.allclose(b, ...)`: what PyTorch computes,
  `torch.isclose(a, b, rtol, atol, equal_nan).all()` in tensor code, read on the host;
- `torch.is_nonzero(x)` / `x.is_nonzero()`: `bool(x)` of a one-element tensor;
- `torch.is_same_size(a, b)` / `a.is_same_size(b)`: `a.shape == b.shape`;
- `torch.is_tensor(v)`, `isinstance(v, ...)` of a runtime Python scalar: False for a tensor
  class, known here (in tensor code the scalar would be a 0-d tensor).
"""

from __future__ import annotations

import ast

import torch

from dycl.frontend import host_numpy
from dycl.frontend import values as V
from dycl.frontend.desugar import source_text
from dycl.frontend.rewrite import fresh_id

FUNCTIONS = {torch.equal: "equal", torch.allclose: "allclose", torch.is_nonzero: "is_nonzero", torch.is_same_size: "is_same_size"}
METHODS = frozenset(FUNCTIONS.values())
_ALLCLOSE_DEFAULTS = {"rtol": 1e-05, "atol": 1e-08, "equal_nan": False}


def known(func) -> bool:
    try:
        return func in FUNCTIONS
    except TypeError:  # (an unhashable constant is no predicate)
        return False


def is_predicate_call(call: ast.Call, func) -> bool:
    """`torch.equal(a, b)`, or a predicate method of a value that is no import-time constant
    (`x.allclose(y)`): the host computes it."""
    if known(func):
        return True
    return func is V.MISSING and isinstance(call.func, ast.Attribute) and call.func.attr in METHODS


def host_call(c, expr: ast.Call, env: dict, func) -> V.EnvValue | None:
    """The predicate's value (a host bool, or a constant); None: `expr` is no predicate call."""
    if func is torch.is_tensor or func is isinstance:
        return _kind_test(c, expr, env, func)
    if not is_predicate_call(expr, func):
        return None
    if known(func):
        kind, operands = FUNCTIONS[func], list(expr.args)
    else:
        kind, operands = expr.func.attr, [expr.func.value, *expr.args]
    arity = 1 if kind == "is_nonzero" else 2
    if len(operands) < arity or kind != "allclose" and (len(operands) > arity or expr.keywords):
        raise c.error(expr, f"`{source_text(expr)}` with arguments `{kind}` does not take")
    tensors = [_tensor(c, node, env, expr) for node in operands[:arity]]
    if kind == "equal":
        a, b = tensors
        return c.builder.host_op("torch.aten.equal", [a, b], V.BOOL, torch.equal(a.example, b.example))
    if kind == "is_same_size":
        a, b = tensors
        return _tensor_code(c, expr, "a.shape == b.shape", {"a": a, "b": b}, c.expression)
    if kind == "is_nonzero":
        (a,) = tensors
        return c.builder.host_op("torch.aten.Bool.Tensor", [a], V.BOOL, c._eager(expr, lambda: a.example.is_nonzero()))
    options = _allclose_options(c, expr, operands[arity:], env)
    a, b = tensors
    c._eager(expr, lambda: torch.allclose(a.example, b.example, **options))  # (its errors are the program's)
    close = _tensor_code(c, expr, f"a.isclose(b, {', '.join(f'{k}={v!r}' for k, v in options.items())}).all()",
                         {"a": a, "b": b}, c.tensor_expression)
    return c.builder.host_op("torch.aten.Bool.Tensor", [close], V.BOOL, bool(close.example))


def _kind_test(c, expr: ast.Call, env: dict, func) -> V.Const | None:
    """`torch.is_tensor(v)`, `isinstance(v, float)`: what kind of value `v` is, known here. (A
    runtime Python scalar enters tensor code as a 0-d tensor: there the test would be wrong.)"""
    if len(expr.args) != (1 if func is torch.is_tensor else 2) or expr.keywords:
        return None
    value = c.expression(expr.args[0], env)
    classes = () if func is torch.is_tensor else (c._try_constant(expr.args[1], env, quiet=True),)
    if V.MISSING in classes or isinstance(value, V.Maybe) or host_numpy.is_numpy(value) or V.holds_maybe(value):
        return None
    return V.Const(bool(func(V.example_of(value), *classes)))


def _tensor(c, node: ast.expr, env: dict, expr: ast.Call) -> V.Dyn:
    value = c.expression(node, env)
    if not (isinstance(value, V.Dyn) and V.is_tensor_type(value.type)):
        raise c.error(expr, f"`{source_text(expr)}` of `{source_text(node)}`, which is not a tensor",
                      "pass tensors (`torch.as_tensor(v)`)")
    return value


def _allclose_options(c, expr: ast.Call, extra: list[ast.expr], env: dict) -> dict:
    """rtol, atol and equal_nan, positional or by keyword: import-time constants."""
    nodes = dict(zip(_ALLCLOSE_DEFAULTS, extra))
    for keyword in expr.keywords:
        if keyword.arg not in _ALLCLOSE_DEFAULTS or keyword.arg in nodes:
            raise c.error(expr, f"`{source_text(expr)}`: argument `{keyword.arg}`")
        nodes[keyword.arg] = keyword.value
    options = dict(_ALLCLOSE_DEFAULTS)
    for name, node in nodes.items():
        value = c._try_constant(node, env, quiet=True)
        if value is V.MISSING:
            raise c.error(node, f"`{source_text(expr)}` with a `{name}` known only at run time",
                          f"give `{name}` a value known when the model is imported")
        options[name] = value
    return options


def _tensor_code(c, expr: ast.Call, code: str, operands: dict, compile_expression):
    """`code`, its names bound to `operands` (under fresh names), compiled at `expr`'s line."""
    uid = fresh_id()
    tree = ast.parse(code, mode="eval").body
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in operands:
            node.id = f"__{node.id}{uid}"
        ast.copy_location(node, expr)
    return compile_expression(tree, {f"__{name}{uid}": value for name, value in operands.items()})
