"""Backward liveness over the frontend's statement lists (Python AST plus `nodes.py` markers).

Liveness decides what a captured run returns, what an `scf.if` yields and what a loop
carries. It must never be smaller than the truth; for loops not yet expanded it is a safe
over-approximation (everything the loop reads stays live), which only costs extra yields.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from dycl.frontend import nodes


def _comprehension_locals(node: ast.AST) -> set[str]:
    """Names bound by the comprehensions inside `node`: local to them, as Python scopes
    them (desugar gives them names of their own), never variables of the function."""
    return {
        n.id
        for sub in ast.walk(node) if isinstance(sub, ast.comprehension)
        for n in ast.walk(sub.target) if isinstance(n, ast.Name)
    }


def names_read(node: ast.AST) -> set[str]:
    """Every name loaded anywhere inside `node` (comprehension variables excluded)."""
    return _names(node, _read_by) - _comprehension_locals(node)


def names_written(stmt: ast.stmt) -> set[str]:
    """Names a statement (re)binds, including inside nested blocks (comprehension
    variables excluded)."""
    return _names(stmt, _written_by) - _comprehension_locals(stmt)


def _names(node: ast.AST, names_of) -> set[str]:
    found = set()
    for sub in ast.walk(node):
        found |= names_of(sub)
    return found


def _read_by(sub: ast.AST) -> set[str]:
    """The names `sub` itself loads (not its children)."""
    if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
        return {sub.id}
    if isinstance(sub, ast.Call) and hasattr(sub, "dycl_closure_reads"):
        return set(sub.dycl_closure_reads)  # (calling a nested function reads its free variables)
    if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Load) and _attribute_variable(sub):
        return {sub.dycl_local}  # a module attribute forward assigns (attributes.py)
    if isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
        return {sub.target.id}
    if isinstance(sub, ast.AugAssign) and _attribute_variable(sub.target):
        return {sub.target.dycl_local}
    if isinstance(sub, nodes.Loop):
        return _names(sub.node, _read_by)
    return set()


def _written_by(sub: ast.AST) -> set[str]:
    """The names `sub` itself binds or changes in place (not its children)."""
    found = names_mutated(sub)
    if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
        found.add(sub.id)
    elif isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store) and _attribute_variable(sub):
        found.add(sub.dycl_local)
    elif isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
        found.add(sub.name)
    elif isinstance(sub, nodes.BindConst):
        found.add(sub.name)
    elif isinstance(sub, nodes.Loop):
        found |= _names(sub.node, _written_by)
        if sub.has_return:
            # Its early return is lowered (when the loop is compiled) into assignments
            # of the enclosing return target: a loop around it must carry those.
            found |= sub.returns.written()
    elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr in MUTATING_METHODS:
        # `outputs.append(t)` rebinds the host list value; `rows[0].append(t)` the value of
        # `rows`, which holds the changed list
        root = sub.func.value
        while isinstance(root, ast.Subscript):
            root = root.value
        if isinstance(root, ast.Name) or _attribute_variable(root):
            found.add(_attribute_variable(root) or root.id)
    return found


def names_mutated(node: ast.AST) -> set[str]:
    """Variables a node may change in place, by its syntax alone: the root name of a
    subscript or attribute store (`p[m] = 1`, `t[i] += v`), the receiver of a method whose
    name ends in `_` (`y.relu_()`, `y.data.mul_(2)`), an `out=` argument. A mutation is a
    definition of the variable: liveness makes it a run output, a join or loop result.
    (Aliases of these, and mutations inside calls, are found when the run executes: runs.py.)
    """
    targets: list[ast.expr] = []
    if isinstance(node, (ast.Assign, ast.Delete)):
        # (`self.hidden = h` rebinds the attribute's variable: names_written; the items of
        # a tuple target are stored one by one: `hx[idx], cx[idx] = cell(x, (hx, cx))`)
        flat = [e for t in node.targets for e in _target_items(t)]
        targets = [t for t in flat if isinstance(t, (ast.Subscript, ast.Attribute)) and not _attribute_variable(t)]
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    elif isinstance(node, ast.Call):
        if isinstance(node.func, ast.Attribute) and node.func.attr.endswith("_") and not node.func.attr.startswith("_"):
            # `y.relu_()` changes its receiver, `torch.relu_(x)` its first argument: syntax
            # cannot tell a tensor from a module, so both count (runs.py keeps only variables)
            targets = [node.func.value, *node.args[:1]]
        targets += [k.value for k in node.keywords if k.arg == "out"]
    found = set()
    for target in targets:
        while isinstance(target, (ast.Subscript, ast.Attribute, ast.Starred)) and not _attribute_variable(target):
            target = target.value
        if _attribute_variable(target):
            found.add(target.dycl_local)
        if isinstance(target, ast.Name):
            found.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            found |= {e.id for e in target.elts if isinstance(e, ast.Name)}
    return found


def names_item_stored(node: ast.AST) -> set[str]:
    """Variables an assignment or `del` stores or deletes items of and nothing deeper
    (`outputs["final"] = y`, `del outs["tmp"]`, `hx[idx], cx[idx] = ...`): a change in place
    of a tensor, but of no tensor's memory where the variable is a dict or a list (its item
    is rebound)."""
    if not isinstance(node, (ast.Assign, ast.Delete)):
        return set()
    item, deeper = set(), set()
    for target in (e for t in node.targets for e in _target_items(t)):
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            item.add(target.value.id)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            deeper |= names_mutated(ast.Delete(targets=[target]))
    return item - deeper


def _attribute_variable(node: ast.AST) -> str | None:
    """The variable of a module attribute that forward may assign (`attributes.annotate`)."""
    return getattr(node, "dycl_local", None) if isinstance(node, ast.Attribute) else None


# Methods that change a list or dict in place (their receiver is written): on host lists and
# dicts they produce a new value.
MUTATING_METHODS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "popitem"}


def names_rebound(stmts: Iterable[ast.stmt]) -> set[str]:
    """Variables bound anew somewhere in `stmts` (`h = ...`, `h += ...`, a `for` target), not
    only changed through (`h[idx] = ...`)."""
    return {n.id for stmt in stmts for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def written_in(stmts: Iterable[ast.stmt]) -> set[str]:
    found = set()
    for stmt in stmts:
        found |= names_written(stmt)
    return found


def live_before(stmts: list[ast.stmt], live_after: set[str], labels: dict | None = None) -> set[str]:
    """Names whose value may be read after this point, given what is live at the end."""
    labels = {} if labels is None else labels
    live = set(live_after)
    for stmt in reversed(stmts):
        live = _live_before_stmt(stmt, live, labels)
    return live


def _live_before_stmt(stmt, live: set[str], labels: dict) -> set[str]:
    if isinstance(stmt, nodes.Label):
        labels[stmt.id] = set(live)
        return live
    if isinstance(stmt, nodes.Jump):
        return set(labels.get(stmt.id, live))
    if isinstance(stmt, nodes.BindConst):
        return live - {stmt.name}
    if isinstance(stmt, ast.If):
        then_live = live_before(stmt.body, live, labels)
        else_live = live_before(stmt.orelse, live, labels)
        return then_live | else_live | names_read(stmt.test)
    if isinstance(stmt, (nodes.Loop, ast.For, ast.While)):
        return _live_before_loop(stmt.node if isinstance(stmt, nodes.Loop) else stmt, live, labels)
    return (live - names_written(stmt)) | names_read(stmt)


class _Unmodelled(Exception):
    """A statement in a loop body that `_live_in_body` does not model."""


def _live_before_loop(node: ast.For | ast.While, live: set[str], labels: dict) -> set[str]:
    """A loop not expanded yet: the least fixed point of its header's liveness, through the
    body's own kills (a name the body assigns before reading it is not carried in). A jump
    out of it (its early return, once lowered) may need whatever any label needs."""
    exit_live = live | (set().union(*labels.values()) if labels else set())
    target = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)} if isinstance(node, ast.For) else set()
    header = names_read(node.iter if isinstance(node, ast.For) else node.test)
    try:
        if node.orelse:
            raise _Unmodelled
        head = set(exit_live)
        while True:
            body = _live_in_body(node.body, head, exit_live, head)
            # a `for` binds its target before each run of the body
            grown = exit_live | (body - target) | (header if isinstance(node, ast.While) else set())
            if grown == head:
                break
            head = grown
    except _Unmodelled:  # whatever it reads (`for head in heads:` binds `head` itself)
        body_reads = set().union(*(names_read(s) for s in node.body)) - target
        return exit_live | header | body_reads
    return head | header


def _live_in_body(stmts: list[ast.stmt], live: set[str], at_break: set[str], at_continue: set[str]) -> set[str]:
    for stmt in reversed(stmts):
        if isinstance(stmt, ast.Break):
            live = set(at_break)
        elif isinstance(stmt, ast.Continue):
            live = set(at_continue)
        elif isinstance(stmt, ast.Return):
            live = at_break | names_read(stmt)  # (the function's exit: as much as after the loop)
        elif isinstance(stmt, ast.If):
            live = (
                _live_in_body(stmt.body, live, at_break, at_continue)
                | _live_in_body(stmt.orelse, live, at_break, at_continue)
                | names_read(stmt.test)
            )
        elif isinstance(stmt, (ast.For, ast.While, nodes.Loop)):
            inner = stmt.node if isinstance(stmt, nodes.Loop) else stmt
            live = _live_before_loop(inner, live, {"exits": at_break | at_continue})
        elif isinstance(stmt, ast.With):  # `with torch.no_grad():` runs its body once
            bound = {n.id for i in stmt.items if i.optional_vars for n in ast.walk(i.optional_vars) if isinstance(n, ast.Name)}
            entered = set().union(*(names_read(i.context_expr) for i in stmt.items))
            live = (_live_in_body(stmt.body, live, at_break, at_continue) - bound) | entered
        elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Pass, ast.Delete, ast.Assert)):
            live = (live - names_written(stmt)) | names_read(stmt)
        else:  # `try`, nested definitions, the rewrite's markers
            raise _Unmodelled
    return live


def _target_items(target: ast.expr) -> list[ast.expr]:
    """The single targets an assignment target stores to (a tuple's items, in order)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [item for e in target.elts for item in _target_items(e)]
    if isinstance(target, ast.Starred):
        return _target_items(target.value)
    return [target]
