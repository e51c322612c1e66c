"""Desugarings of one statement's expressions on the Python AST (`prepare`), applied while
`rewrite.lower` walks a forward's statements, and the user's text recovered from what they
make (`source_text`).

What research code writes for training or for a GPU, and what means nothing else at
inference on the host, is rewritten to its inference meaning; everything else keeps its
Python meaning exactly:

- `E.data` -> `__dycl_data(E)`, `E.cuda(...)` / `E.cpu()` / `E.to(...)` -> `__dycl_cuda(E, ...)`
  & co.: helpers that decide on the object at run time. On a tensor, `.data` is its
  `.detach()` (the same memory: an in-place change through it changes the original), `.cuda()`/`.cpu()`
  and `.to(<device>)` are the tensor itself, `.to(dtype / other tensor, ...)` is kept (with a
  device argument dropped); on any other object the original method is called.
  (`.data` of a tensor is the tensor itself, as runs treat `.detach()`: `runs._DetachIsIdentity`;
  the same memory either way, and the functionalization of export keeps the aliasing.)
- `Variable(x)` / `torch.autograd.Variable(x)`, when the name resolves to
  `torch.autograd.Variable` in the function's globals, is `x` (Variable shares x's memory).
- A comprehension's variables get names of their own (its scope is its own).
- A `lst.pop(...)` inside a larger statement is hoisted: `__popN = lst[i]`, then the bare
  `lst.pop(i)` statement, then the statement reading `__popN` (the compiler only meets list
  mutations as statements of their own, never inside an expression it may evaluate twice).

The helpers are callable objects (never inlined by the compiler) that every source
function's namespace holds (`HELPERS`, added by `rewrite.parse_function`). Whole
statements are desugared apart: `with torch.no_grad():` and grad-mode decorators
(`grad_mode.py`), `np.where` (`np_where.py`), `del` (`deletes.py`).
"""

from __future__ import annotations

import ast
import builtins
import copy
import re
from typing import Any

import torch

from dycl.frontend import unpacking
from dycl.frontend.nodes import (
    ATTRIBUTE_PREFIX,
    COMPREHENSION_PREFIX,
    OBJECT_PREFIX,
    OPERAND_PREFIX,
    RESULT_PREFIX,
    WRITTEN,
    assign,
    fresh_id,
    located,
    map_children,
    replace_nodes,
)


# ----- run-time helpers -----------------------------------------------------------------


class _Helper:
    """A named callable the rewritten code calls; not a FunctionType, so never inlined."""

    def __init__(self, name: str, function):
        self.name = name
        self.function = function

    def __call__(self, *args, **kwargs):
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<dycl helper {self.name}>"


def _data(obj):
    if isinstance(obj, torch.Tensor):
        return obj  # at inference `.data` is the tensor itself (see runs.DetachIsIdentity)
    return obj.data


def _cuda(obj, *args, **kwargs):
    if isinstance(obj, torch.Tensor):
        return obj  # inference runs on the host: the tensor itself
    return obj.cuda(*args, **kwargs)


def _cpu(obj, *args, **kwargs):
    if isinstance(obj, torch.Tensor):
        return obj  # a CPU tensor's .cpu() is the tensor itself
    return obj.cpu(*args, **kwargs)


def is_device(value) -> bool:
    return isinstance(value, (str, torch.device)) or (isinstance(value, int) and not isinstance(value, bool))


def _to(obj, *args, **kwargs):
    if not isinstance(obj, torch.Tensor):
        return obj.to(*args, **kwargs)
    args = list(args)
    if args and is_device(args[0]):
        args.pop(0)
    kwargs.pop("device", None)
    if not args and set(kwargs) <= {"non_blocking"}:
        return obj  # only a device: the tensor itself
    return obj.to(*args, **kwargs)


def _select_first_best(keys, items, largest: bool):
    """The item whose key is the first maximum (minimum), as Python's max/min choose it:
    Python's strict `>`/`<` on the keys (a NaN key never wins), tensors in their own dtype."""

    def tensor(value):  # (no torch.as_tensor on tensors: it traces as a dtype conversion)
        if isinstance(value, torch.Tensor):
            return value
        return torch.tensor(value, dtype=torch.float64 if isinstance(value, float) else None)

    best_key, best = tensor(keys[0]).reshape(()), tensor(items[0])
    for key, item in zip(keys[1:], items[1:]):
        key = tensor(key).reshape(())
        better = key > best_key if largest else key < best_key
        best_key = torch.where(better, key, best_key)
        best = torch.where(better, tensor(item), best)
    return best


DATA, CUDA, CPU, TO = "__dycl_data", "__dycl_cuda", "__dycl_cpu", "__dycl_to"
HELPERS: dict[str, Any] = {
    DATA: _Helper(DATA, _data),
    CUDA: _Helper(CUDA, _cuda),
    CPU: _Helper(CPU, _cpu),
    TO: _Helper(TO, _to),
    "__dycl_select": _Helper("__dycl_select", _select_first_best),
    unpacking.FIRST_OF_TWO: _Helper(unpacking.FIRST_OF_TWO, unpacking.first_of_two),
    "__dycl_torch": torch,
    "__dycl_builtins": builtins,
}
# Helpers that return a tensor argument itself or an alias of its memory (same values).
IDENTITY_ON_TENSORS = {HELPERS[DATA], HELPERS[CUDA], HELPERS[CPU]}
_METHOD_HELPERS = {"cuda": CUDA, "cpu": CPU, "to": TO}
_HELPER_METHODS = {helper: method for method, helper in _METHOD_HELPERS.items()}


# ----- name resolution ----------------------------------------------------------------


_LOCALS: dict[int, tuple[ast.FunctionDef, set[str]]] = {}


def local_names(fdef: ast.FunctionDef) -> set[str]:
    """Parameters and every name the function binds (Python makes them local); cached."""
    cached = _LOCALS.get(id(fdef))
    if cached is not None and cached[0] is fdef:
        return cached[1]
    names = _local_names(fdef)
    _LOCALS[id(fdef)] = (fdef, names)
    return names


def _local_names(fdef: ast.FunctionDef) -> set[str]:
    names = {a.arg for a in fdef.args.args + fdef.args.posonlyargs + fdef.args.kwonlyargs}
    for extra in (fdef.args.vararg, fdef.args.kwarg):
        if extra is not None:
            names.add(extra.arg)
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
    return names


_MISSING = object()


def resolve(source, expr: ast.expr, locals_: set[str] | None = None):
    """The object a dotted name (`torch.no_grad`, `Variable`) denotes in the function's
    module, or _MISSING when it is not a plain global/closure name."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return _MISSING
    if locals_ is None:
        locals_ = local_names(source.node)
    if expr.id in locals_:
        return _MISSING
    namespace = {**source.globals, **source.closure}
    if expr.id in namespace:
        value = namespace[expr.id]
    else:
        value = getattr(builtins, expr.id, _MISSING)
    for part in reversed(parts):
        value = getattr(value, part, _MISSING)
        if value is _MISSING:
            break
    return value


# ----- expression rewrites: .data, .cuda(), .cpu(), .to(device), Variable(x) -----------


class _InferenceNoOps(ast.NodeTransformer):
    def __init__(self, source):
        self.source = source
        self.locals = local_names(source.node)

    def visit_Attribute(self, node: ast.Attribute):
        self.generic_visit(node)
        if node.attr == "data" and isinstance(node.ctx, ast.Load):
            return _call(DATA, [node.value], [], node)
        return node

    def visit_Call(self, node: ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _METHOD_HELPERS:
            receiver = self.visit(func.value)
            args = [self.visit(a) for a in node.args]
            keywords = [self.visit(k) for k in node.keywords]
            return _call(_METHOD_HELPERS[func.attr], [receiver, *args], keywords, node)
        self.generic_visit(node)
        if (
            len(node.args) == 1
            and not isinstance(node.args[0], ast.Starred)
            and all(k.arg in ("requires_grad", "volatile") for k in node.keywords)
            and resolve(self.source, node.func, self.locals) is torch.autograd.Variable
        ):
            return node.args[0]  # Variable(x) shares x's memory: it is x
        return node


def _call(name: str, args, keywords, where: ast.AST) -> ast.Call:
    call = ast.Call(func=ast.Name(name, ast.Load()), args=list(args), keywords=list(keywords))
    ast.copy_location(call.func, where)
    return ast.copy_location(call, where)


def rewrite_expression(source, expr):
    if expr is None:
        return None
    return rename_comprehension_variables(_InferenceNoOps(source).visit(copy.deepcopy(expr)), {})


# ----- comprehension variables are local to their comprehension -------------------------------

_PREFIXED = re.compile(rf"{COMPREHENSION_PREFIX}\d+_")
_ATTRIBUTE_VARIABLE = re.compile(rf"\b(?:{ATTRIBUTE_PREFIX}|{OBJECT_PREFIX})\d+_(\w+)")


def source_text(node: ast.AST) -> str:
    """`ast.unparse` with comprehension variables under their own names again, module
    attributes that forward assigns as `self.<name>`, and `.data`/`.to(...)` as written; a
    statement the frontend made from one of the user's (`nodes.written_as`) as that one."""
    node = getattr(node, WRITTEN, node)
    text = ast.unparse(node)
    if "__dycl_" in text:  # (most statements hold no desugared helper: no copy for them)
        text = ast.unparse(_AsWritten().visit(copy.deepcopy(node)))
    return display_name(text)


class _AsWritten(ast.NodeTransformer):
    """`__dycl_to(x, d)` -> `x.to(d)`, `__dycl_data(x)` -> `x.data`: the user's spelling."""

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in (DATA, *_HELPER_METHODS) or not node.args:
            return node
        receiver, *args = node.args
        if name == DATA:
            return ast.Attribute(receiver, "data", ast.Load())
        return ast.Call(ast.Attribute(receiver, _HELPER_METHODS[name], ast.Load()), args, node.keywords)


_INLINED_LOCAL = re.compile(  # rewrite.inline_call: `__<helper><n>_<local>`
    rf"\b__(?!dycl|{ATTRIBUTE_PREFIX[2:]}\d|{OBJECT_PREFIX[2:]}\d|{COMPREHENSION_PREFIX[2:]}\d)\w*?\d+_(?=\w)"
)
_INLINED_RESULT = re.compile(rf"^{RESULT_PREFIX}\d+ = ")
_HOST_OPERAND = re.compile(rf"\b{OPERAND_PREFIX}\d+\b")
_RETURNED = re.compile(r"^__dycl_return = ")  # (the variable a `return` is lowered to)


def display_name(text: str) -> str:
    """Source text with the frontend's own names (comprehension variables, attribute
    variables, an inlined helper's locals and result) as the user wrote them."""
    text = _ATTRIBUTE_VARIABLE.sub(r"self.\1", _PREFIXED.sub("", text))
    text = _HOST_OPERAND.sub("<runtime value>", _INLINED_LOCAL.sub("", text))
    return _RETURNED.sub("return ", _INLINED_RESULT.sub("", text))


def rename_comprehension_variables(node: ast.AST, mapping: dict[str, str]) -> ast.AST:
    """Give each comprehension's variables fresh names (`l` -> `__comp7_l`), as Python scopes
    them: liveness and runs then never take them for the function's own variables (a run
    returning a comprehension's `l` raised NameError). In place; returns the node."""
    if isinstance(node, ast.Name):
        if node.id in mapping:
            return ast.copy_location(ast.Name(mapping[node.id], node.ctx), node)
        return node
    if isinstance(node, ast.Lambda):
        node.args = rename_comprehension_variables(node.args, mapping)
        params = {a.arg for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs}
        node.body = rename_comprehension_variables(node.body, {k: v for k, v in mapping.items() if k not in params})
        return node
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        inner = dict(mapping)
        for k, generator in enumerate(node.generators):
            # the first iterable is evaluated in the enclosing scope, the others inside
            generator.iter = rename_comprehension_variables(generator.iter, mapping if k == 0 else inner)
            uid = fresh_id()
            for name in {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}:
                inner[name] = f"{COMPREHENSION_PREFIX}{uid}_{name}"
            generator.target = rename_comprehension_variables(generator.target, inner)
            generator.ifs = [rename_comprehension_variables(c, inner) for c in generator.ifs]
        if isinstance(node, ast.DictComp):
            node.key = rename_comprehension_variables(node.key, inner)
            node.value = rename_comprehension_variables(node.value, inner)
        else:
            node.elt = rename_comprehension_variables(node.elt, inner)
        return node
    return map_children(node, lambda child: rename_comprehension_variables(child, mapping))


# ----- list mutations inside expressions ----------------------------------------------

LIST_MUTATORS = ("append", "extend", "insert", "pop", "remove", "clear")
"""The list methods a statement may call inside an expression (`y = rows.pop()`); `sort` and
`reverse` are refused where they stand (`container_statements.LIST_METHODS`)."""


def mutator_receiver(node: ast.AST) -> str | None:
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in LIST_MUTATORS
        and isinstance(node.func.value, ast.Name)
    ):
        return node.func.value.id
    return None


def describe_call(node: ast.Call) -> str:
    return f"`{source_text(node)}`"


class _PopHoister:
    """Finds `name.pop(...)` calls in one statement's expressions, in evaluation order."""

    def __init__(self, source, stmt):
        self.source = source
        self.stmt = stmt
        self.found: list[ast.Call] = []

    def scan(self, node: ast.AST, conditional: str | None = None) -> None:
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            conditional = "a lambda or comprehension"
        children = list(ast.iter_child_nodes(node))
        if isinstance(node, ast.IfExp):
            self.scan(node.test, conditional)
            for branch in (node.body, node.orelse):
                self.scan(branch, conditional or "a conditional expression")
            children = []
        elif isinstance(node, ast.BoolOp):
            self.scan(node.values[0], conditional)
            for value in node.values[1:]:
                self.scan(value, conditional or f"an `{'and' if isinstance(node.op, ast.And) else 'or'}`")
            children = []
        for child in children:
            self.scan(child, conditional)
        name = mutator_receiver(node)
        if name is None:
            return
        if node.func.attr != "pop":
            raise self.source.error(
                node,
                f"{describe_call(node)} used as a value (it changes `{name}` and returns None)",
                f"call `{source_text(node)}` as a statement of its own",
            )
        if conditional is not None:
            raise self.source.error(
                node,
                f"{describe_call(node)} inside {conditional}",
                f"pop into a variable first (`item = {source_text(node)}`) where it always runs, "
                "or write the condition as an `if` statement",
            )
        if len(node.args) > 1 or node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise self.source.error(
                node, f"{describe_call(node)} inside an expression",
                f"pop into a variable first: `item = {source_text(node)}`",
            )
        self.found.append(node)


def hoist_pops(source, stmt: ast.stmt, exprs: list[ast.expr]) -> tuple[list[ast.stmt], dict[int, str]]:
    """Statements computing each `lst.pop(i)` found in `exprs` (in evaluation order) and the
    temporary name that replaces each call (by id of the call node)."""
    hoister = _PopHoister(source, stmt)
    for expr in exprs:
        hoister.scan(expr)
    prelude: list[ast.stmt] = []
    replaced: dict[int, str] = {}
    for call in hoister.found:
        name = call.func.value.id
        own = {id(n) for a in call.args for n in ast.walk(a)} | {id(call.func.value)}
        others = [
            n for expr in exprs for n in ast.walk(expr)
            if isinstance(n, ast.Name) and n.id == name and id(n) not in own
        ]
        if others:
            raise source.error(
                call,
                f"{describe_call(call)} in a statement that also uses `{name}`",
                f"pop into a variable first (`item = {source_text(call)}`), then use `item` and `{name}`",
            )
        uid = fresh_id()
        index = call.args[0] if call.args else ast.Constant(-1)
        if not isinstance(index, (ast.Constant, ast.Name)) and not (
            isinstance(index, ast.UnaryOp) and isinstance(index.operand, ast.Constant)
        ):
            index_name = f"__popindex{uid}"
            prelude.append(assign(index_name, index, call))
            index = ast.Name(index_name, ast.Load())
        temp = f"__pop{uid}"
        read = ast.Subscript(value=ast.Name(name, ast.Load()), slice=copy.deepcopy(index), ctx=ast.Load())
        prelude.append(assign(temp, read, call))
        pop = ast.Call(
            func=ast.Attribute(value=ast.Name(name, ast.Load()), attr="pop", ctx=ast.Load()),
            args=[copy.deepcopy(index)] if call.args else [],
            keywords=[],
        )
        prelude.append(located(ast.Expr(value=pop), call))
        replaced[id(call)] = temp
    return prelude, replaced


# ----- one statement -----------------------------------------------------------------


def _expression_fields(stmt: ast.stmt) -> list[str]:
    """The fields of a statement holding expressions evaluated when it runs (not bodies)."""
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return)):
        return ["value"]
    if isinstance(stmt, (ast.If, ast.While)):
        return ["test"]
    if isinstance(stmt, ast.For):
        return ["iter"]
    return []


def prepare(source, stmt: ast.stmt) -> list[ast.stmt]:
    """`stmt` with its expressions rewritten (inference no-ops) and its nested pops hoisted:
    the statements that replace it (bodies of compound statements are left for `lower`)."""
    fields = _expression_fields(stmt)
    if not fields:
        return [stmt]
    new = copy.copy(stmt)
    for field in fields:
        setattr(new, field, rewrite_expression(source, getattr(stmt, field)))
    # Targets of assignments keep their syntax, but `.data` etc. in their indices are rewritten.
    if isinstance(stmt, ast.Assign):
        new.targets = [_rewrite_target(source, t) for t in stmt.targets]
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        new.target = _rewrite_target(source, stmt.target)

    exprs = [getattr(new, f) for f in fields if getattr(new, f) is not None]
    if isinstance(new, ast.Expr) and mutator_receiver(new.value) is not None:
        exprs = list(new.value.args) + [k.value for k in new.value.keywords]  # the call itself stays
    targets = new.targets if isinstance(new, ast.Assign) else [getattr(new, "target", None)]
    for target in targets:
        if target is None:
            continue
        for node in ast.walk(target):
            if mutator_receiver(node) is not None:
                raise source.error(
                    node, f"{describe_call(node)} inside an assignment target",
                    f"compute it first: `item = {source_text(node)}`",
                )
    if isinstance(new, ast.While):
        for expr in exprs:
            for node in ast.walk(expr):
                if mutator_receiver(node) is not None:
                    raise source.error(
                        node, f"{describe_call(node)} in a `while` condition",
                        "change the list inside the loop body and test a variable in the condition",
                    )
        return [new]
    prelude, replaced = hoist_pops(source, new, exprs)
    if not replaced:
        return [new]
    for field in fields:
        setattr(new, field, replace_nodes(getattr(new, field), replaced))
    return prelude + [new]


def _rewrite_target(source, target: ast.expr) -> ast.expr:
    if isinstance(target, ast.Name):
        return target
    if isinstance(target, ast.Subscript):
        rewritten = copy.copy(target)
        rewritten.value = _rewrite_target(source, target.value) if isinstance(target.value, ast.Subscript) else rewrite_expression(source, target.value)
        rewritten.slice = rewrite_expression(source, target.slice)
        return rewritten
    if isinstance(target, (ast.Tuple, ast.List, ast.Starred)):
        rewritten = copy.copy(target)
        if isinstance(target, ast.Starred):
            rewritten.value = _rewrite_target(source, target.value)
        else:
            rewritten.elts = [_rewrite_target(source, e) for e in target.elts]
        return rewritten
    return target
