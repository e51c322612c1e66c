"""Program rewriting on the Python AST (DyCL's phase 1), before anything is captured.

- `lower`: `return`/`break`/`continue` become assignments plus forward jumps (structured form),
  `pass` is dropped; unsupported statements are rejected here with a FrontendError naming
  file and line; the desugarings are applied to each statement (no-grad blocks become
  their body: `grad_mode.py`; `del` one target per statement: `deletes.py`;
  `.data`/`.cuda()`/`.cpu()`/`.to(device)`/`Variable(x)` their inference meaning, pops
  hoisted out of expressions, comprehension variables renamed to their own scope:
  `desugar.py`).
- `inline_call`: a helper method (or a submodule's forward) that itself has control flow is
  inlined with its locals renamed, its returns becoming jumps to the end of its body.
- `unroll`: a `for` over something known at import time (ModuleList, zip/enumerate of them,
  `range` whose index is used) becomes one copy of the body per item.
"""

from __future__ import annotations

import ast
import copy
import inspect
import textwrap
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

from dycl.frontend import deletes, desugar, exceptions, grad_mode, nested_functions, nodes, np_where, randomness, unpacking
from dycl.frontend.nodes import fresh_id  # (re-exported: the frontend's modules import it from here)
from dycl.frontend.errors import FrontendError

@dataclass
class SourceFunction:
    node: ast.FunctionDef
    file: str
    globals: dict
    closure: dict
    function: Callable | None = None  # (the function parsed: its signature binds calls, binding.py)

    def error(self, node: ast.AST | None, construct: str, hint: str = "") -> FrontendError:
        return FrontendError(construct, hint, file=self.file, line=getattr(node, "lineno", 0))


@lru_cache(maxsize=None)
def parse_function(func: Callable) -> SourceFunction:
    """The AST of a Python function with line numbers of its source file. A grad-mode
    decorator is transparent; any other wrapper is the function parsed (its body runs)."""
    func = grad_mode.unwrap_grad_mode(func)
    where = getattr(func, "__code__", func)  # (inspect follows `__wrapped__` from a function, not a code object)
    file = inspect.getsourcefile(where) or "<unknown>"
    try:
        lines, first_line = inspect.getsourcelines(where)
    except (OSError, TypeError) as error:
        # (code made by exec/eval has no source file; its code object still knows where it began)
        code = getattr(func, "__code__", None)
        raise FrontendError(
            f"cannot read the source of {getattr(func, '__qualname__', func)}",
            "define the model in a .py file",
            file=code.co_filename if code is not None else file,
            line=code.co_firstlineno if code is not None else 1,
        ) from error
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except SyntaxError as error:
        # a lambda's lines hold more than the lambda (`"swish": lambda x: x * torch.sigmoid(x),`
        # in a dict): the callers run such a function as it is, inside a captured block
        raise FrontendError(
            f"cannot read the source of {getattr(func, '__qualname__', func)} on its own",
            "define it with `def`", file=file, line=first_line,
        ) from error
    ast.increment_lineno(tree, first_line - 1)
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise FrontendError("expected a function definition", file=file, line=first_line)
    closure = inspect.getclosurevars(func).nonlocals if func.__closure__ else {}
    # The helpers that desugared code calls (`__dycl_data(x)` for `x.data`, ...).
    return SourceFunction(node, file, func.__globals__, {**desugar.HELPERS, **closure}, func)


# (`assert` too: a check that may raise, which DyCL compiles; inside a captured block export
# would freeze it to the example's sizes or refuse a test of tensor values)
# (`raise` and `try`: exceptions DyCL carries to their handlers, exceptions.py)
_CONTROL = (ast.If, ast.For, ast.While, ast.Return, ast.Break, ast.Continue, ast.IfExp, ast.Assert, ast.Raise, ast.Try)


def has_control_flow(fdef: ast.FunctionDef) -> bool:
    """True unless the body is straight-line code ending in at most one `return`."""
    body = fdef.body[:-1] if fdef.body and isinstance(fdef.body[-1], ast.Return) else fdef.body
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.FunctionDef, ast.Lambda)):
                break  # nested functions (torch.cond branches) are not our control flow
            if isinstance(node, _CONTROL):
                return True
    return False


def changes_an_argument_list(fdef: ast.FunctionDef) -> bool:
    """Whether the function changes a list it was passed (`outs.append(h)`, `outs[0] = h`,
    `del outs[-1]` on a parameter): the caller sees that change, so the function is inlined
    rather than run inside a captured block, where it would change a copy."""
    from dycl.frontend.liveness import MUTATING_METHODS

    params = {a.arg for a in (*fdef.args.posonlyargs, *fdef.args.args, *fdef.args.kwonlyargs)}
    for node in ast.walk(fdef):
        target = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATING_METHODS:
            target = node.func.value
        elif isinstance(node, (ast.Assign, ast.Delete)):
            target = next((t for t in node.targets if isinstance(t, ast.Subscript)), None)
        elif isinstance(node, ast.AugAssign) and isinstance(node.value, (ast.List, ast.ListComp, ast.Tuple)):
            target = node.target  # `outs += [h]`
        while isinstance(target, ast.Subscript):
            target = target.value
        if isinstance(target, ast.Name) and target.id in params and target.id != "self":
            return True
    return False


# Statements that cannot be compiled, with what to write instead.
_REJECTED = {
    ast.With: (
        "`with` statement (only `torch.no_grad()`, `torch.inference_mode()` and "
        "`torch.set_grad_enabled(False)` blocks are compiled)",
        "move the `with` block out of forward, or call what it guards before the model",
    ),
    ast.Global: ("`global` statement", "keep state on the module as attributes"),
    ast.Nonlocal: ("`nonlocal` statement", "keep state on the module as attributes"),
    ast.Yield: ("generator (`yield`)", "return a list or tuple instead"),
    ast.YieldFrom: ("generator (`yield from`)", "return a list or tuple instead"),
    ast.Await: ("`await`", "forward must be a plain function"),
    ast.AsyncFor: ("`async for`", "forward must be a plain function"),
    ast.AsyncWith: ("`async with`", "forward must be a plain function"),
    ast.Match: ("`match` statement", "write it as `if`/`elif`/`else`"),
    ast.NamedExpr: ("assignment expression (`:=`)", "assign the value in a statement of its own before it is used (`s = x.sum()`, then `if s > 0:`)"),
}


def check_supported(source: SourceFunction, stmt: ast.stmt) -> None:
    for node in ast.walk(stmt):
        rejected = _REJECTED.get(type(node))
        if rejected is not None and not (isinstance(node, ast.With) and grad_mode.is_no_grad_block(source, node)):
            raise source.error(node, *rejected)
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and any(
            isinstance(t, ast.Attribute) and not getattr(t, "dycl_local", None) for t in targets
        ):
            # (a module attribute that forward assigns is a variable: attributes.py)
            raise source.error(
                node,
                "assignment to an attribute of something that is not the module or a submodule "
                "(or to a weight or submodule)",
                "keep values in local variables and return them; weights and submodules must not change in forward",
            )
        if isinstance(node, (ast.For, ast.While)) and node.orelse:
            raise source.error(
                node, "`else` clause on a loop", "set a flag before `break` and test it after the loop"
            )


def lower(
    source: SourceFunction,
    stmts: list[ast.stmt],
    returns: nodes.ReturnTo,
    on_break: Callable[[int], list[ast.stmt]] | None = None,
    on_continue: Callable[[int], list[ast.stmt]] | None = None,
) -> list[ast.stmt]:
    """Rewrite `return`/`break`/`continue` of this body (not of nested loops) into jumps;
    apply the desugarings (no-grad blocks, inference no-ops, `del`, pops, `np.where`)."""
    if stmts is source.node.body:
        deletes.check_deletes(source)  # the whole function, once: names read after `del`
    lowered: list[ast.stmt] = []
    for original in stmts:
        if isinstance(original, ast.Pass):
            continue  # a no-op; dropping it keeps the runs around it one run
        if isinstance(original, ast.With) and grad_mode.is_no_grad_block(source, original):
            # grad mode does not change values: the block is its body
            lowered.extend(lower(source, original.body, returns, on_break, on_continue))
            continue
        if isinstance(original, ast.Delete):
            lowered.extend(deletes.split_delete(source, original))
            continue
        unpacked = unpacking.expand(source, original)
        if unpacked is not None:  # `first, *rest = xs`: indexing (unpacking.py)
            lowered.extend(lower(source, unpacked, returns, on_break, on_continue))
            continue
        where = np_where.expand_np_where(source, original)
        if where is not None:  # `hits = np.where(cond)[0]`: a loop that gathers the indices
            lowered.extend(lower(source, where, returns, on_break, on_continue))
            continue
        if isinstance(original, ast.Try):  # (exceptions.py)
            lowered.extend(exceptions.lower_try(
                source, original, returns, lambda body, inner: lower(source, body, inner, on_break, on_continue)))
            continue
        if nested_functions.is_definition(original):  # `def decode(x): ...` inside the method
            lowered.append(nested_functions.define(source, original))
            continue
        original = randomness.lower_draws(source, original)  # (`random.random()`: a host draw)
        prepared = desugar.prepare(source, original)
        lowered.extend(_lower_simple(source, prepared[:-1]))
        stmt = prepared[-1]
        if isinstance(stmt, ast.Return):
            value = stmt.value if stmt.value is not None else ast.Constant(None)
            lowered.extend(returns.statements(value, stmt.lineno))
        elif isinstance(stmt, ast.Break):
            if on_break is None:
                raise source.error(stmt, "`break` outside a loop")
            lowered.extend(on_break(stmt.lineno))
        elif isinstance(stmt, ast.Continue):
            if on_continue is None:
                raise source.error(stmt, "`continue` outside a loop")
            lowered.extend(on_continue(stmt.lineno))
        elif isinstance(stmt, ast.If):
            check_supported(source, ast.Expr(stmt.test))  # (its bodies are lowered below)
            new = ast.If(
                test=stmt.test,
                body=lower(source, stmt.body, returns, on_break, on_continue),
                orelse=lower(source, stmt.orelse, returns, on_break, on_continue),
            )
            new.lineno = stmt.lineno
            lowered.append(new)
        elif isinstance(stmt, (ast.For, ast.While)):
            check_supported(source, stmt)
            lowered.append(nodes.Loop(stmt, returns))
        else:
            check_supported(source, stmt)
            lowered.append(stmt)
    return exceptions.mark(lowered, returns.raises)


def _lower_simple(source: SourceFunction, stmts: list[ast.stmt]) -> list[ast.stmt]:
    for stmt in stmts:
        check_supported(source, stmt)
    return stmts


class _Renamer(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]):
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.names:
            return ast.copy_location(ast.Name(self.names[node.id], node.ctx), node)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        # A nested function's own names are its own; its free names are the enclosing
        # function's (renamed with them), and so is its name.
        args = node.args
        own = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a is not None}
        own |= {n.id for s in node.body for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        node.name = self.names.get(node.name, node.name)
        node.args = self.visit(node.args)
        outer = self.names
        self.names = {k: v for k, v in outer.items() if k not in own}
        try:
            node.body = [self.visit(stmt) for stmt in node.body]
        finally:
            self.names = outer
        return node

    def visit_Lambda(self, node: ast.Lambda) -> ast.Lambda:
        # A lambda's parameters are its own names: `lambda k: s[k]` keeps `k` inside.
        node.args = self.visit(node.args)
        params = {a.arg for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs}
        outer = self.names
        self.names = {k: v for k, v in outer.items() if k not in params}
        try:
            node.body = self.visit(node.body)
        finally:
            self.names = outer
        return node


NO_RECEIVER = object()


def inline_call(
    callee: SourceFunction,
    call: ast.Call,
    result_var: str,
    bind: Callable[[dict[str, str]], tuple[list[ast.stmt], dict[str, Any], str | None]],
    annotate: Callable[[list[ast.stmt], str, Any], None] | None = None,
    caller: ast.stmt | None = None,
) -> tuple[list[ast.stmt], list[ast.stmt], dict[str, Any]]:
    """The statements of `callee` bound to `call`'s arguments, storing the result in `result_var`.

    Returns the statements that bind the arguments (at the call's line; they evaluate the
    caller's expressions, in the caller's scope), the callee's statements, and the constants
    to bind first (`self` -> the receiver, defaults). `bind(renamed)` binds the renamed
    parameters (`binding.binder`: Python's rules) and says which one is `self`;
    `annotate(body, self_name, receiver)` marks the renamed body's module attributes first.
    An exception leaving the body goes where one raised at `caller` (the call's statement)
    goes (exceptions.py).
    """
    fdef = callee.node
    deletes.check_deletes(callee)
    args = fdef.args
    params = [a.arg for a in (*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg) if a is not None]
    prefix = f"__{fdef.name}{fresh_id()}_"
    local_names = set(params)
    for stmt in fdef.body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                local_names.add(node.id)
            elif isinstance(node, ast.FunctionDef):
                local_names.add(node.name)  # (a nested function's name is a local too)
    renamed = {name: prefix + name for name in local_names}
    body = [_Renamer(renamed).visit(copy.deepcopy(stmt)) for stmt in fdef.body]
    prologue, bindings, self_param = bind(renamed)
    if annotate is not None and self_param is not None:
        annotate(body, renamed[self_param], bindings[renamed[self_param]])

    nested_functions.prepare(callee, body)
    end = fresh_id()
    returns = exceptions.within(nodes.ReturnTo(result_var, end), exceptions.call_scope(result_var, caller))
    result_init = ast.Assign(targets=[ast.Name(result_var, ast.Store())], value=ast.Constant(None))
    result_init.lineno = call.lineno
    return [result_init, *prologue], [*lower(callee, body, returns), nodes.Label(end, call.lineno)], bindings


def unroll(
    source: SourceFunction,
    loop: nodes.Loop,
    items: list[Any],
    bind_target: Callable[[Any], list[ast.stmt]],
) -> list[ast.stmt]:
    """One copy of the loop body per item; `break`/`continue` jump to the right copy's end."""
    node = loop.node
    end = fresh_id()
    unrolled: list[ast.stmt] = []
    for item in items:
        next_iteration = fresh_id()
        body = lower(
            source,
            copy.deepcopy(node.body),
            loop.returns,
            on_break=lambda line: [nodes.Jump(end, line)],
            on_continue=lambda line, target=next_iteration: [nodes.Jump(target, line)],
        )
        unrolled.extend(bind_target(item))
        unrolled.extend(body)
        unrolled.append(nodes.Label(next_iteration, node.lineno))
    unrolled.append(nodes.Label(end, node.lineno))
    return unrolled
