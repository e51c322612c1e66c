"""`del` statements: `del a, b[k]` becomes one `del` per target, and a name read (or
deleted again) on some path after its `del`, before it is assigned again, is refused at
the read.
"""

from __future__ import annotations

import ast
import copy

from dycl.frontend.desugar import describe_call, mutator_receiver, rewrite_expression, source_text
from dycl.frontend.errors import FrontendError


def split_delete(source, stmt: ast.Delete) -> list[ast.stmt]:
    """One `del` per target (in order); only names and items of named lists can be deleted."""
    out = []
    stack = list(stmt.targets)
    flat = []
    while stack:
        target = stack.pop(0)
        if isinstance(target, (ast.Tuple, ast.List)):
            stack = list(target.elts) + stack
        else:
            flat.append(target)
    for target in flat:
        text = f"`del {source_text(target)}`"
        if isinstance(target, ast.Attribute) or (
            isinstance(target, ast.Subscript) and isinstance(_root(target), ast.Attribute)
        ):
            raise source.error(
                target, f"{text} in forward",
                "module state must not change in forward: keep values in local variables and return them",
            )
        if isinstance(target, ast.Subscript) and not isinstance(target.value, ast.Name):
            inner = source_text(target.value)
            raise source.error(
                target, f"{text} (an item of `{inner}`, not of a variable)",
                f"bind it to a variable first: `inner = {inner}` then `del inner[{source_text(target.slice)}]`",
            )
        if not isinstance(target, (ast.Name, ast.Subscript)):
            raise source.error(target, f"{text}", "`del` a variable or an item of a list variable")
        if isinstance(target, ast.Subscript):
            for node in ast.walk(target.slice):
                if mutator_receiver(node) is not None:
                    raise source.error(node, f"{describe_call(node)} inside `del`", f"compute it first: `k = {source_text(node)}`")
            target = copy.deepcopy(target)
            target.slice = rewrite_expression(source, target.slice)
        new = ast.Delete(targets=[target])
        out.append(ast.copy_location(new, target))
    return out


def _root(expr: ast.expr) -> ast.expr:
    while isinstance(expr, ast.Subscript):
        expr = expr.value
    return expr


# ----- names used after `del` -------------------------------------------------------------


class _Dead:
    pass


DEAD = _Dead()  # the state after `return`/`break`/`continue`: no path continues


class DeleteChecker:
    """Forward may-analysis over a function's structured AST: which names may be deleted
    (`del name`, not assigned since) at each point. Reading such a name, or deleting it
    again, raises NameError on that path in Python: refused at the read."""

    def __init__(self, source):
        self.source = source
        self.loops: list[tuple[list, list]] = []  # (break states, continue states)

    def check(self) -> None:
        fdef = self.source.node
        if not any(isinstance(n, ast.Delete) for n in ast.walk(fdef)):
            return
        self.block(fdef.body, {})

    # state: dict name -> line of the `del`, or DEAD

    def block(self, stmts, state):
        for stmt in stmts:
            if state is DEAD:
                return DEAD
            state = self.statement(stmt, state)
        return state

    def reads(self, node: ast.AST | None, state) -> None:
        if node is None or state is DEAD:
            return
        for name, where in _loads(node):
            if name in state:
                raise self.source.error(
                    where, f"`{name}` is used after `del`",
                    f"the `del {name}` on line {state[name]} unbinds it on this path: "
                    f"remove that `del`, or assign `{name}` again before this line",
                )

    @staticmethod
    def stores(targets, state):
        if state is DEAD:
            return state
        state = dict(state)
        for target in targets:
            if target is None:
                continue
            for node in ast.walk(target):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    state.pop(node.id, None)
        return state

    def statement(self, stmt, state):
        if isinstance(stmt, ast.Delete):
            for target in stmt.targets:
                names = [target] if isinstance(target, ast.Name) else (
                    [e for e in target.elts if isinstance(e, ast.Name)] if isinstance(target, (ast.Tuple, ast.List)) else []
                )
                if not names:
                    self.reads(target, state)
                for name in names:
                    if name.id in state:
                        raise self.source.error(
                            name, f"`{name.id}` is used after `del` (deleted again)",
                            f"the `del {name.id}` on line {state[name.id]} already unbinds it on this path: remove one of them",
                        )
                    state = {**state, name.id: stmt.lineno}
            return state
        if isinstance(stmt, ast.If):
            self.reads(stmt.test, state)
            return _join(self.block(stmt.body, dict(state)), self.block(stmt.orelse, dict(state)))
        if isinstance(stmt, (ast.For, ast.While)):
            return self.loop(stmt, state)
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                self.reads(item.context_expr, state)
                state = self.stores([item.optional_vars], state)
            return self.block(stmt.body, state)
        if isinstance(stmt, ast.Try):
            end = self.block(stmt.body, dict(state))
            for handler in stmt.handlers:
                end = _join(end, self.block(handler.body, dict(state)))
            return self.block(stmt.finalbody, _join(end, self.block(stmt.orelse, dict(state))))
        if isinstance(stmt, ast.Return):
            self.reads(stmt.value, state)
            return DEAD
        if isinstance(stmt, (ast.Break, ast.Continue)):
            if self.loops:
                self.loops[-1][0 if isinstance(stmt, ast.Break) else 1].append(state)
            return DEAD
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            self.reads(stmt, state)
            return self.stores([ast.Name(stmt.name, ast.Store())], state)
        if isinstance(stmt, ast.Assign):
            self.reads(stmt.value, state)
            for target in stmt.targets:
                self.reads(target, state)
            return self.stores(stmt.targets, state)
        if isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
            self.reads(stmt.value, state)
            target = stmt.target
            if isinstance(stmt, ast.AugAssign) and isinstance(target, ast.Name):
                self.reads(ast.Name(target.id, ast.Load(), lineno=target.lineno, col_offset=0), state)
            else:
                self.reads(target, state)
            return self.stores([target], state)
        self.reads(stmt, state)
        return state

    def loop(self, stmt, entry):
        header = entry
        for _ in range(len(entry) + 64):
            self.loops.append(([], []))
            if isinstance(stmt, ast.For):
                self.reads(stmt.iter, header)
                body_entry = self.stores([stmt.target], header)
            else:
                self.reads(stmt.test, header)
                body_entry = header
            end = self.block(stmt.body, dict(body_entry))
            breaks, continues = self.loops.pop()
            again = header
            for state in [end, *continues]:
                again = _join(again, state)
            if again == header:
                break
            header = again
        after = header
        for state in breaks:
            after = _join(after, state)
        return self.block(stmt.orelse, after) if stmt.orelse else after


def _join(a, b):
    if a is DEAD:
        return b
    if b is DEAD:
        return a
    return {**b, **a}


def _loads(node: ast.AST):
    """(name, node) for every name a node reads, lambda/comprehension variables excluded."""
    bound: set[str] = set()
    stack = [(node, bound)]
    while stack:
        current, bound = stack.pop()
        if isinstance(current, ast.Lambda):
            inner = bound | {a.arg for a in current.args.args + current.args.kwonlyargs + current.args.posonlyargs}
            stack.append((current.body, inner))
            stack.extend((d, bound) for d in current.args.defaults)
            continue
        if isinstance(current, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            inner = set(bound)
            for gen in current.generators:
                stack.append((gen.iter, set(inner)))
                inner |= {n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
                stack.extend((cond, inner) for cond in gen.ifs)
            elements = [current.key, current.value] if isinstance(current, ast.DictComp) else [current.elt]
            stack.extend((e, inner) for e in elements)
            continue
        if isinstance(current, ast.Name) and isinstance(current.ctx, ast.Load) and current.id not in bound:
            yield current.id, current
        for child in ast.iter_child_nodes(current):
            stack.append((child, bound))


def check_deletes(source) -> None:
    try:
        DeleteChecker(source).check()
    except FrontendError:
        raise
    except RecursionError:  # pragma: no cover - absurdly deep code
        raise source.error(source.node, "function too deeply nested to check its `del` statements")
