"""Calls of helpers that DyCL compiles itself (`callee`: control flow, module attributes forward
assigns, ...), and Python's order of evaluation around them.

Called as a statement of its own, such a helper is inlined (`expand_call`: its arguments
bound by `binding.py`, its body between two `SwitchScope`s); inside an expression, its call
becomes a statement of its own right before when Python evaluates it first and
unconditionally (`_hoist_nested_call`), and is refused otherwise. What a call runs is
`callees.py`'s. Each function takes the compiler as its context.
"""

from __future__ import annotations

import ast
import functools

import torch

from dycl.frontend import binding, callees, data_sizes, desugar, exceptions, helper_objects, library_calls, lists, nested_functions, nodes, packed, randomness
from dycl.frontend import values as V
from dycl.frontend.errors import FrontendError
from dycl.frontend.nodes import RESULT_PREFIX, replace_nodes
from dycl.frontend.rewrite import (NO_RECEIVER, SourceFunction, changes_an_argument_list, fresh_id, has_control_flow, inline_call,
                                   parse_function)



def hoist_test_call(c, stmt: ast.If, env) -> list[ast.stmt] | None:
    """`if self.decide(x):`, `if self.score(x) > t:` with a helper DyCL compiles: its
    call becomes a statement of its own right before the `if` (Python evaluates the test
    once, first); the test itself (or under `not`) is a call as a statement would be."""
    return _hoist_nested_call(c, stmt, stmt.test, env, nested=False)


def calls_compiled_helper(c, stmt: ast.stmt, env) -> bool:
    """Whether the statement calls a helper that DyCL compiles itself (`_expand_call`
    inlines it, or refuses it inside an expression): it starts a new step, not a run."""
    top = stmt.value if isinstance(stmt, (ast.Assign, ast.Expr, ast.AugAssign)) else None
    return any(
        isinstance(sub, ast.Call) and callee(c, sub, env, nested=sub is not top) is not None
        for sub in ast.walk(stmt)
    )


def expand_call(c, stmt: ast.stmt, env) -> list[ast.stmt] | None:
    """Inline `x = helper(...)`/`helper(...)` when the helper has control flow."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        value = stmt.value
    elif isinstance(stmt, (ast.Expr, ast.AugAssign)):
        value = stmt.value
    else:
        return None
    found = callee(c, value, env) if isinstance(value, ast.Call) else None
    if found is None:
        hoisted = _hoist_nested_call(c, stmt, value, env)
        if hoisted is not None:
            return hoisted
        _reject_nested_helpers(c, value, env)
        return None
    function, receiver = found
    result_var = f"{RESULT_PREFIX}{fresh_id()}"
    unbound, replaced = [], _replace_value(stmt, ast.Name(result_var, ast.Load()))
    if isinstance(receiver, helper_objects.New):  # `dispatcher = SparseDispatcher(n, gates)`: its `__init__`
        receiver, unbound, replaced = c.attributes.objects.build(c, receiver, stmt)
    bind = binding.binder(c, function, receiver, value, env)
    arguments, body, bindings = inline_call(function, value, result_var, bind, c.attributes.annotate, caller=stmt)
    binds = [nodes.BindConst(name, obj, stmt.lineno) for name, obj in bindings.items()]
    arguments = [exceptions.same_scope(nodes.written_as(argument, stmt), stmt) for argument in arguments]
    return [*binds, *arguments, *unbound, SwitchScope(function), *body, SwitchScope(c.scope.source), replaced]


def callee(c, call_node: ast.Call, env, nested: bool = False):
    """(source, receiver) of a helper that DyCL compiles (inlines) rather than running it
    inside a captured block: one with control flow or module attributes forward assigns
    (always), or, called as a statement of its own (not `nested` in an expression), one
    that uses what only DyCL's desugaring compiles (`_desugared`)."""
    func = c._try_constant(call_node.func, env, quiet=True)
    if func is V.MISSING:
        return None
    if isinstance(func, nested_functions.NestedFunction):
        return func.source, NO_RECEIVER  # (always inlined: a closure over this code's variables)
    if helper_objects.is_helper_class(func):  # (building a helper object: its `__init__`, always inlined)
        try:
            return parse_function(func.__init__), helper_objects.New(func)
        except FrontendError:
            return None
    resolved = callees.function_of(func)
    if resolved is None:
        return None
    function, receiver = resolved
    if library_calls.is_library_function(function):
        return None  # (captured whole in a run)
    try:
        source = parse_function(function)
    except FrontendError:
        return None
    bodies = [source.node, *binding.wrapped_bodies(function, library_calls.LIBRARY_PACKAGES)]  # (a wrapper runs them too)
    must = exceptions.must_inline(call_node, function, receiver) or _passes_runtime_scalars(call_node, env) or helper_objects.is_helper_object(
        receiver) or helper_objects.passes_object(call_node, env) or any(
        has_control_flow(n) or c.attributes.concerns(n) or changes_an_argument_list(n) or _packs_sequences(n)
        or data_sizes.makes_data_sizes(n) for n in bodies) or binding.forwards_to_compiled(c, source, receiver, call_node, env) \
        or _runs_attribute_writer(func) or randomness.draws_in(source)
    if not must and (nested or not any(_desugared(n) for n in bodies)):
        return None  # runs inside a captured block
    return source, receiver


def _runs_attribute_writer(called) -> bool:
    """Whether the module `called` holds a module whose forward (of the user's) assigns
    module attributes (a block owning a gate that stores `self.saved_action = action`): run
    inside a captured block, that store would be the example run's (and refused), so the
    block's forward is inlined, down to the gate."""
    if not isinstance(called, torch.nn.Module):
        return False
    for module in called.modules():
        resolved = callees.function_of(module) if module is not called else None
        if resolved is not None and not library_calls.is_library_function(resolved[0]) and _assigns_attributes(resolved[0]):
            return True
    return False


@functools.lru_cache(maxsize=512)
def _assigns_attributes(function) -> bool:
    try:
        fdef = parse_function(function).node
    except FrontendError:
        return False
    return any(isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) for n in ast.walk(fdef))


def _passes_runtime_scalars(call: ast.Call, env) -> bool:
    """Whether a call passes Python numbers known only at run time (`ks(x, lengths)` with
    `lengths` a list argument), or a list whose length is known only at run time (`read(x,
    groups)` where a branch appended to `groups[0]`): inlined, numbers stay numbers (a size,
    an index) where a captured block would take them as tensors, and the list's `len` and
    `[-1]` are read in the host, where a captured block cannot take the list at all."""
    def runtime_scalar(leaf) -> bool:
        return isinstance(leaf, V.Dyn) and not V.is_tensor_type(leaf.type) and not V.is_list_type(leaf.type) and leaf.type != V.NONE
    arguments = [*call.args, *(k.value for k in call.keywords)]
    names = [a.id for a in arguments if isinstance(a, ast.Name)]
    if any(runtime_scalar(leaf) for n in names if n in env for leaf in V.leaves(env[n])):
        return True
    inside = {n.id for a in arguments for n in ast.walk(a) if isinstance(n, ast.Name)}  # (`read(outs)`, `read([outs, [x]])`)
    return any(lists.is_runtime_list(leaf) for n in inside if n in env for leaf in V.leaves(env[n]))


def _hoist_nested_call(c, stmt: ast.stmt, expr: ast.expr, env, nested: bool = True) -> list[ast.stmt] | None:
    """`return self.forward_single(x, p), p`: a call of a helper DyCL compiles, inside an
    expression, becomes a statement of its own right before (`__hoist = ...`) when Python
    evaluates it unconditionally and calls nothing before it (so that the order of effects
    is kept); None otherwise."""
    call, _ = _evaluation_order_search(c, expr, env, nested)
    if not isinstance(call, ast.Call):
        return None
    name = f"__hoist{fresh_id()}"
    assign = ast.copy_location(ast.Assign(targets=[ast.Name(name, ast.Store())], value=call), stmt)
    return [exceptions.same_scope(assign, stmt), replace_nodes(stmt, {id(call): name})]


def _evaluation_order_search(c, node: ast.AST, env, nested: bool = True):
    """(the compiled helper call evaluated first, or None, or False when one exists but
    cannot move; whether any call is evaluated in `node`), in Python's evaluation order
    through the expressions whose order is fixed and unconditional. `nested=False`: `node`
    (or the operand of a `not` at its top) is a call at statement level (`_callee`)."""
    if isinstance(node, ast.Call) and callee(c, node, env, nested=nested) is not None:
        return node, True
    if isinstance(node, (ast.Tuple, ast.List)):
        children = node.elts
    elif isinstance(node, ast.BinOp):
        children = [node.left, node.right]
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) and not nested:
        return _evaluation_order_search(c, node.operand, env, nested)
    elif isinstance(node, (ast.UnaryOp, ast.Starred)):
        children = [getattr(node, "operand", None) or node.value]
    elif isinstance(node, (ast.Attribute, ast.Subscript)):
        children = [node.value] + ([node.slice] if isinstance(node, ast.Subscript) else [])
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        children = [node.left, *node.comparators]
    elif isinstance(node, ast.Call):
        children = [node.func, *node.args, *(k.value for k in node.keywords)]
    else:  # conditional or scoped evaluation (`a if c else b`, `and`, comprehensions)
        inner = any(isinstance(n, ast.Call) and callee(c, n, env, nested=True) is not None for n in ast.walk(node))
        return (False if inner else None), any(isinstance(n, ast.Call) for n in ast.walk(node))
    called = False
    for child in children:
        found, child_called = _evaluation_order_search(c, child, env)
        if found is not None:
            return (False if called or found is False else found), True
        called |= child_called
    return None, called or isinstance(node, ast.Call)


def _reject_nested_helpers(c, expr: ast.expr, env) -> None:
    for sub in ast.walk(expr):
        if isinstance(sub, ast.Call) and sub is not expr and callee(c, sub, env, nested=True) is not None:
            raise c.error(
                sub,
                f"call of `{desugar.source_text(sub.func)}` inside an expression (DyCL compiles that "
                "helper itself: it has control flow, uses module attributes that forward assigns, or is "
                "passed values known only at run time)",
                "assign its result to a variable first: `y = self.helper(x)`",
            )


class SwitchScope(nodes.FrontendStmt):
    """Marks where inlined code of another source file starts/ends (for error locations)."""

    _fields = ()
    _shared = ("source",)

    def __init__(self, source: SourceFunction):
        super().__init__()
        self.source = source
        self.lineno = 0


def _desugared(fdef: ast.FunctionDef) -> bool:
    """A helper using what DyCL's own rewriting compiles and torch.export alone may not:
    `with torch.no_grad():`, `.data`, `.numpy()`, a call of a picked module (`heads[k](x)`),
    subscript stores (a masked read-modify-write `x[m] = x[m] * 0.5` has a data-dependent
    size inside export)."""
    for n in ast.walk(fdef):
        if isinstance(n, ast.With) or isinstance(n, ast.Attribute) and n.attr in ("data", "numpy"):
            return True  # (`.numpy()`: numpy on a tensor is host code, never a captured block)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript):
            return True  # `self.experts[k](x)`: a pick by a runtime index is DyCL's (dispatch.py)
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
        if any(isinstance(t, ast.Subscript) for t in targets):
            return True
    return False


def _packs_sequences(fdef: ast.FunctionDef) -> bool:
    """A helper that packs sequences: their lengths may be runtime values, which only DyCL's
    lowering of packed sequences (packed.py) compiles, never one captured block."""
    return any(isinstance(n, ast.Call) and packed.called_name(n) in packed.PACKING for n in ast.walk(fdef))


def _replace_value(stmt: ast.stmt, value: ast.expr) -> ast.stmt:
    value = ast.copy_location(value, stmt)
    if isinstance(stmt, ast.Assign):
        new = ast.Assign(targets=stmt.targets, value=value)
    elif isinstance(stmt, ast.AugAssign):
        new = ast.AugAssign(target=stmt.target, op=stmt.op, value=value)
    else:
        new = ast.Expr(value=ast.Constant(None))
    return ast.copy_location(new, stmt)
