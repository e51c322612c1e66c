"""What a call runs, resolved as Python resolves it.

`block(x)` runs `nn.Module.__call__`, which calls `block.forward`: an attribute lookup, so
the instance's own `forward` comes first, then its class's. Published code relies on it:
SDN's blocks without an exit set `self.forward = self.only_forward` in `__init__`, and its
networks `self.forward = self.early_exit`. Every place of the frontend that needs the
function a call runs (to inline it, to compile an entry point, to recognise a library
module's forward) asks here, so that none of them looks at the class alone.
"""

from __future__ import annotations

import ast
import types
from typing import Any

import torch
from torch.nn.modules import module as _module

from dycl.frontend.grad_mode import unwrap_grad_mode
from dycl.frontend.helper_objects import is_helper_object
from dycl.frontend.rewrite import NO_RECEIVER, SourceFunction, parse_function


def runs_only_forward(module: torch.nn.Module) -> bool:
    """Whether calling `module` runs its `forward` and nothing else: no forward hook of
    its own or process-wide, and `nn.Module.__call__` (not a `__call__` of its class)."""
    return (
        type(module).__call__ is torch.nn.Module.__call__
        and not (module._forward_hooks or module._forward_pre_hooks)
        and not (_module._global_forward_hooks or _module._global_forward_pre_hooks)
    )


def module_forward(module: torch.nn.Module) -> Any:
    """The `forward` that `module(...)` calls: the instance's attribute when it has one
    (`self.forward = self.only_forward`), else its class's method, bound to `module`."""
    return module.forward  # (Python's own lookup: the instance's `__dict__`, then the class)


def function_of(callee: Any) -> tuple[types.FunctionType, Any] | None:
    """(function, receiver) that calling `callee` runs, for a callee DyCL may compile
    itself: a module that runs only its forward, a method bound to a module, or a plain
    function (receiver `NO_RECEIVER`: an instance attribute holding a function is not
    bound, as in Python), a method of a helper object. None for anything else (a builtin, a module with hooks, a
    callable object): such a call runs as it is, inside a captured block."""
    if isinstance(callee, torch.nn.Module):
        if not runs_only_forward(callee):
            return None
        callee = module_forward(callee)
    if isinstance(callee, types.MethodType):
        owner = callee.__self__  # (a module, or a helper object forward built: helper_objects.py)
        if (isinstance(owner, torch.nn.Module) or is_helper_object(owner)) and isinstance(callee.__func__, types.FunctionType):
            return callee.__func__, owner
        return None
    if isinstance(callee, types.FunctionType):
        return callee, NO_RECEIVER
    return None


def entry(method: Any, model: torch.nn.Module) -> tuple[SourceFunction, Any]:
    """(source, receiver) of the method `dycl.compile` compiles, `getattr(model, name)`:
    with `self.forward = self.early_exit`, the instance's method."""
    function, receiver = function_of(method) or (getattr(method, "__func__", method), model)
    source = parse_function(function)
    if receiver is NO_RECEIVER:
        raise source.error(
            source.node, f"`{source.node.name}` is a plain function set on the module (Python calls it without `self`)",
            "make it a method and set the bound method: `self.forward = self.early_exit`",
        )
    return source, receiver


def forward_is(module: torch.nn.Module, functions) -> bool:
    """Whether calling `module` runs one of `functions` (an RNN class's own forward) and
    nothing else, as `function_of` resolves it."""
    resolved = function_of(module)
    return resolved is not None and resolved[1] is module and resolved[0] in tuple(functions)


def wrapped(function: Any) -> list[types.FunctionType]:
    """The functions a wrapper runs that Python reaches only through it (`fn` of `def
    eval_decorator(fn): def inner(self, *args, **kwargs): ...`): its `__wrapped__` and the
    functions its closure holds, transitively, past grad-mode decorators (which are their
    function); none for a function that wraps nothing."""
    found: list[types.FunctionType] = []
    pending = [function]
    while pending:
        current = pending.pop()
        cells = [cell.cell_contents for cell in getattr(current, "__closure__", None) or () if _filled(cell)]
        for inner in [getattr(current, "__wrapped__", None), *cells]:
            inner = unwrap_grad_mode(inner)
            if isinstance(inner, types.FunctionType) and inner is not function and inner not in found:
                found.append(inner)
                pending.append(inner)
    return found


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # (a closure variable not assigned yet)
        return False
    return True


__all__ = ["entry", "function_of", "forward_is", "is_module_list", "module_forward", "module_named", "runs_only_forward", "wrapped"]


def module_named(expr: ast.expr, self_name: str, receiver: torch.nn.Module) -> torch.nn.Module | None:
    """The module `expr` names, as Python looks it up: `self` or a chain of submodules of it
    (`self.control`); None for anything else."""
    if isinstance(expr, ast.Name):
        return receiver if expr.id == self_name else None
    if isinstance(expr, ast.Attribute):
        parent = module_named(expr.value, self_name, receiver)
        if parent is not None:
            child = parent._modules.get(expr.attr)
            return child if isinstance(child, torch.nn.Module) else None
    return None


def is_module_list(value) -> bool:
    """A plain list (or tuple) of modules kept on a module (`self.gate_instances`, filled in
    `__init__` with modules registered elsewhere too): what forward reads of it is constant,
    as a `ModuleList` is (attributes.py, state.py); a change of it in forward is refused
    where it is compiled, as any change of a list the module holds (`lists.module_state_owner`)."""
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(v, torch.nn.Module) for v in value)
