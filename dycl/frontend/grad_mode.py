"""Grad mode at inference: a `with torch.no_grad():` block (or `torch.inference_mode()`,
`torch.set_grad_enabled(False)`, no `as`) is its body, and a function that
`@torch.no_grad()` or `@torch.inference_mode()` wraps is that function (grad mode does
not change values). Other `with` stay refused.
"""

from __future__ import annotations

import ast

import torch

from dycl.frontend.desugar import _MISSING, local_names, resolve


def _constant(node: ast.expr):
    return node.value if isinstance(node, ast.Constant) else _MISSING


def _is_no_grad_item(source, item: ast.withitem, locals_) -> bool:
    if item.optional_vars is not None or not isinstance(item.context_expr, ast.Call):
        return False
    call = item.context_expr
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    func = resolve(source, call.func, locals_)
    values = [_constant(a) for a in call.args] + [_constant(k.value) for k in call.keywords]
    names = [k.arg for k in call.keywords]
    if func is torch.no_grad:
        return not values
    if func is torch.inference_mode:
        return len(values) <= 1 and all(v is True for v in values) and set(names) <= {"mode"}
    if func is torch.set_grad_enabled:
        return len(values) == 1 and values[0] is False and set(names) <= {"mode"}
    return False


def grad_mode_wrapped(function):
    """The function that `@torch.no_grad()` or `@torch.inference_mode()` wraps (torch's
    `decorate_context`: `with ctx_factory(): return func(*args, **kwargs)`), else None.
    Grad mode does not change values: at inference such a wrapper is its function."""
    code = getattr(function, "__code__", None)
    if code is None or code.co_name != "decorate_context" or not function.__closure__:
        return None
    from torch.utils import _contextlib

    if code.co_filename != _contextlib.__file__:
        return None
    cells = dict(zip(code.co_freevars, (cell.cell_contents for cell in function.__closure__)))
    context = getattr(cells.get("ctx_factory"), "__self__", None)
    if type(context) is torch.no_grad or type(context) is torch.inference_mode and context.mode is True:
        return cells.get("func")
    return None


def unwrap_grad_mode(function):
    """`function` without the grad-mode decorators around it (`grad_mode_wrapped`)."""
    while (inner := grad_mode_wrapped(function)) is not None:
        function = inner
    return function


def is_no_grad_block(source, stmt: ast.With) -> bool:
    """`with torch.no_grad():` (or inference_mode / set_grad_enabled(False)), no `as`."""
    locals_ = local_names(source.node)
    return bool(stmt.items) and all(_is_no_grad_item(source, item, locals_) for item in stmt.items)
