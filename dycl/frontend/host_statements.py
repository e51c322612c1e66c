"""Statements the host program runs (`host_<statement class>`: assignments of host values,
list methods, `del`), and the refusals of changes to containers that DyCL cannot follow (a
list changed inside an expression, `y is x` of runtime values). The compiler dispatches
`host_<statement class>` here; each function takes the compiler as its context.
"""

from __future__ import annotations

import ast

from torch_mlir import ir

from dycl.frontend import container_statements, host_numpy, lists, packed, structure
from dycl.frontend import values as V
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import FrontendError
from dycl.frontend.nodes import RETURN_VAR
from dycl.dialects.torch_ops import LIST_APPEND


def host_statement(c, stmt: ast.stmt, env: dict) -> None:
    """A statement the host program runs: `host_<statement class>`."""
    if c.mutates_tensor(stmt, env):
        c.compile_mutation_with_host_operands(stmt, env)
        return
    handler = getattr(c, f"host_{type(stmt).__name__}", None)
    if handler is None:
        raise c.error(stmt, f"`{type(stmt).__name__}` statement", "")
    handler(stmt, env)


def host_Expr(c, stmt: ast.Expr, env: dict) -> None:
    if isinstance(stmt.value, ast.Constant):
        return  # a docstring
    if list_method(c, stmt.value, env) is not None:
        container_statements.mutate(c, stmt.value, env)
        return
    c.expression(stmt.value, env)  # evaluated for its errors; the value is dropped


def host_Assign(c, stmt: ast.Assign, env: dict) -> None:
    value = c.expression(stmt.value, env)
    if len(stmt.targets) > 1 and all(isinstance(t, ast.Name) for t in stmt.targets):
        value = lists.bound_list(c, value, env)  # `a = b = []`: one list, two names
    for target in stmt.targets:
        _assign(c, target, value, env)


def host_AugAssign(c, stmt: ast.AugAssign, env: dict) -> None:
    binop = ast.copy_location(ast.BinOp(left=_load(stmt.target), op=stmt.op, right=stmt.value), stmt)
    value = c.expression(binop, env)
    old = env.get(stmt.target.id) if isinstance(stmt.target, ast.Name) else None
    if lists.is_list(old) and isinstance(stmt.op, (ast.Add, ast.Mult)):
        # `lst += [x]` extends the list in place: every name bound to it sees the change
        lists.rebind(c, env, stmt.target.id, old, lists.bound_list(c, value, {}), stmt, f"`{source_text(stmt)}`")
        return
    _assign(c, stmt.target, value, env)


def host_AnnAssign(c, stmt: ast.AnnAssign, env: dict) -> None:
    if stmt.value is not None:
        _assign(c, stmt.target, c.expression(stmt.value, env), env)


def host_Delete(c, stmt: ast.Delete, env: dict) -> None:
    container_statements.delete(c, stmt, env)  # one target each (deletes.split_delete)


def _assign(c, target: ast.expr, value: V.EnvValue, env: dict) -> None:
    if isinstance(target, ast.Name) and target.id == RETURN_VAR:
        host_numpy.refuse_numpy_result(c, target, value)
    c.refuse_truth_value(target, value)
    if isinstance(target, ast.Name):
        env[target.id] = lists.bound_list(c, value, env)
        return
    if isinstance(target, (ast.Tuple, ast.List)):
        if isinstance(value, V.Const):
            # `outs, confs = [], []`: each `[]` is a new list, as `outs = []` makes one
            items = [V.Tup((), "list") if type(v) is list and not v else V.Const(v) for v in value.value]
        elif isinstance(value, V.Tup):
            items = list(value.items)
        elif isinstance(value, V.Packed) and len(target.elts) == 4:  # (data, batch_sizes, sorted_indices, unsorted_indices)
            items = [packed.read(c, target, value, k) for k in range(4)]
        else:
            raise c.error(target, "unpacking a runtime value", "index it explicitly")
        if len(items) != len(target.elts):
            raise c.error(target, "unpacking a tuple of the wrong length")
        for sub, item in zip(target.elts, items):
            _assign(c, sub, item, env)
        return
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and lists.is_list(env.get(target.value.id)):
        container_statements.store(c, target, value, env)
        return
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and container_statements.is_dict(env.get(target.value.id)):
        container_statements.dict_store(c, target, value, env)
        return
    raise c.error(target, "assignment to an attribute or item", "assign to a local variable (module state cannot change in forward)")


def list_value(c, value: V.Tup) -> V.EnvValue:
    """What a Python list bound to a name becomes: constants stay one Python list; a
    list of tensors (or `[]`) becomes a runtime list, which may grow under runtime
    conditions (its items stay known while it is built in straight-line code:
    `lists.StaticList`); any other mix (`[logits, count]`) keeps its structure, like a tuple."""
    if value.items and all(isinstance(i, V.Const) for i in value.items):
        return V.Const([i.value for i in value.items])
    if all(isinstance(i, V.Dyn) and V.is_tensor_type(i.type) for i in value.items):
        return lists.static_list(c, value.items)
    return value


def list_method(c, expr: ast.expr, env) -> str | None:
    """The method of a bare `name.method(...)` (or `rows[0].method(...)`) statement that
    changes a host list (or a container the host holds: those are refused when compiled)."""
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
        holder = c.receiver_value(expr.func.value, env)
        method = expr.func.attr
        if lists.is_list(holder) and method in container_statements.LIST_METHODS:
            return method
        if isinstance(holder, V.Const) and method in container_statements.CONTAINER_MUTATORS.get(type(holder.value), ()):
            return method
    return None


def receiver_value(c, receiver: ast.expr, env) -> V.EnvValue | None:
    """The value a list method is called on, found without running anything: a name, or
    an item of a list known here (`rows[0]`); None when it takes computing."""
    if isinstance(receiver, ast.Name):
        return env.get(receiver.id)
    if not isinstance(receiver, ast.Subscript):
        return None
    constant = c._try_constant(receiver, env, quiet=True)
    if constant is not V.MISSING:
        return V.Const(constant)
    key = c._try_constant(receiver.slice, env, quiet=True)  # `rows[i % 3]` in an unrolled loop
    if isinstance(key, int) and not isinstance(receiver.slice, ast.Constant):
        receiver = ast.copy_location(ast.Subscript(value=receiver.value, slice=ast.Constant(key), ctx=ast.Load()), receiver)
    shaped = c.try_structure(receiver, env)
    return None if shaped is V.MISSING else structure.as_env_value(shaped)


def container_changes(c, stmt: ast.stmt, env):
    """(call, receiver, held value, whether a runtime index picks it) of each list, dict
    or set method in `stmt` that changes its receiver, but a statement of its own on a list
    the frontend follows (`lst.append(x)`, `rows[0].append(x)`)."""
    top = stmt.value if isinstance(stmt, ast.Expr) and list_method(c, stmt.value, env) else None
    for node in ast.walk(stmt):
        if node is top or not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in container_statements.CONTAINER_METHOD_NAMES:
            continue
        receiver = node.func.value
        holder, picked = c.receiver_value(receiver, env), False
        if holder is None and isinstance(receiver, ast.Subscript):
            root = _root_of(receiver)
            holder, picked = (env.get(root.id) if isinstance(root, ast.Name) else None), True
        if lists.is_list(holder) or (isinstance(holder, V.Const) and isinstance(holder.value, (dict, set))):
            yield node, receiver, holder, picked


def refuse_identity_test(c, node: ast.AST, env) -> None:
    """`y is x` of runtime values: whether two names hold one object, which depends on the
    path taken and is not a value DyCL computes (`v is None` is: values.Maybe)."""
    for sub in ast.walk(node):
        if not (isinstance(sub, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in sub.ops)):
            continue
        operands = [sub.left, *sub.comparators]
        if any(isinstance(o, ast.Constant) and o.value is None for o in operands):
            continue
        if all(c._try_constant(o, env, quiet=True) is not V.MISSING for o in operands):
            continue
        raise c.error(
            sub, f"`{source_text(sub)}` tests whether two names hold one tensor or value object",
            "keep a bool that records which value was assigned (`changed = True` where the new one is)",
        )


def refuse_container_change(c, stmt: ast.stmt, env) -> None:
    """Evaluating such a change here would change the import's own copy of the list, not
    the program's (`container_changes`)."""
    for node, receiver, holder, picked in c.container_changes(stmt, env):
        text, method = source_text(node), node.func.attr
        if picked:
            raise c.error(
                node, f"`{text}` changes a list picked by a runtime index",
                f"pick it with an `if` instead, each branch changing one list at a constant index "
                f"(`if k == 0: {source_text(_root_of(receiver))}[0].{method}(...)`)",
            )
        raise c.error(
            node, f"`{text}` changes a {V.kind_of(holder)} inside an expression",
            f"bind it to a name and change it in a statement of its own: `item = {source_text(receiver)}`, "
            f"then `item.{method}(...)`",
        )


def runtime_append(c, holder: V.Dyn, item: V.EnvValue, expr: ast.Call) -> V.EnvValue:
    if isinstance(holder, lists.StaticList) and lists.list_type_of_item(item) != holder.type:
        # items known: a list of tensors meeting a Python value keeps a fixed structure
        # (`[x, 3]`); an empty one or one of Python values stays a Python list for now
        # (a join with a list of another length makes it a runtime list of its kind)
        return V.Tup(holder.items + (item,), "list")
    lists.check_item_kind(c, holder, item, expr, "`append`")
    item = c._materialize(item, "list item")
    op = ir.Operation.create(LIST_APPEND, results=[c.builder.type(holder.type)], operands=[holder.value, item.value])
    if isinstance(holder, lists.StaticList):
        return lists.StaticList(op.result, holder.type, holder.example + [item.example], items=holder.items + (item,))
    appended = V.Dyn(op.result, holder.type, holder.example + [item.example])
    if isinstance(holder, lists.KnownLengths):  # one longer, whichever length it had
        return lists.KnownLengths(appended.value, appended.type, appended.example, lengths=frozenset(n + 1 for n in holder.lengths))
    return appended


def _load(target: ast.expr) -> ast.expr:
    if isinstance(target, ast.Name):
        return ast.copy_location(ast.Name(target.id, ast.Load()), target)
    if isinstance(target, ast.Subscript):  # `lst[k] += v` on a list (`_assign` stores it)
        return ast.copy_location(ast.Subscript(value=target.value, slice=target.slice, ctx=ast.Load()), target)
    raise FrontendError("augmented assignment to an attribute or item")


def _root_of(expr: ast.expr) -> ast.expr:
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    return expr
