"""Compile a forward's (rewritten) statements into the host function.

Walks each statement list with an environment of `values.Const/Dyn/Tup/UNDEF`:
- maximal runs of tensor statements are captured (`capture.py`) and called;
- host statements (Python scalars and lists that depend on tensor data) become scalar/list ops;
- `if` on a runtime condition becomes `scf.if`; both branches are compiled on the same
  example values, and variables that differ are yielded with joined types;
- loops over things known at import time are unrolled, `for range(N)` whose index is unused
  becomes `scf.for`, bounded `while` loops and loops that `break`/`return` become `scf.while`.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import types
import warnings
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch_mlir import ir

from dycl.frontend import expressions as X
from dycl.frontend.host_expressions import HOST_EXPRESSIONS, host_tuple
from dycl.frontend import nodes
from dycl.frontend import values as V
from dycl.frontend.build import HostBuilder
from dycl.frontend.capture import RunCapturer
from dycl.frontend.errors import FrontendError
from dycl.frontend.hop import call
from dycl.frontend.liveness import live_before, names_read, written_in
from dycl.frontend.rewrite import (
    NO_RECEIVER,
    SourceFunction,
    fresh_id,
    has_control_flow,
    inline_call,
    lower,
    parse_function,
    unroll,
)

MAX_UNROLL = 512
# Functions from these packages are never inlined (their control flow is on Python values).
_LIBRARY_MODULES = {"torch", "numpy", "functools", "typing", "math"}
RETURN_VAR = "__dycl_return"
_MISSING = object()


class _Scope:
    """The source being compiled (for error locations and global names)."""

    def __init__(self, source: SourceFunction):
        self.source = source
        self.namespace = {**source.globals, **source.closure}


class FunctionCompiler:
    def __init__(self, model: torch.nn.Module, capturer: RunCapturer):
        self.model = model
        self.capturer = capturer
        self.builder = HostBuilder(capturer.context)
        self.scope: _Scope | None = None
        self._join_node: ast.AST | None = None
        self._scopes: dict[str, _Scope] = {}

    # ----- entry point -----------------------------------------------------------------

    def compile(self, method, example_inputs: tuple, name: str = "forward"):
        """Build `func.func @<name>`; returns (func op, output tree, input names)."""
        source = parse_function(method.__func__ if hasattr(method, "__func__") else method)
        self.scope = _Scope(source)
        fdef = source.node
        params = [a.arg for a in fdef.args.args]
        if fdef.args.vararg or fdef.args.kwarg or fdef.args.kwonlyargs:
            raise source.error(fdef, "forward with *args/**kwargs", "list the inputs as plain parameters")
        given = params[1 : 1 + len(example_inputs)]
        if len(example_inputs) > len(params) - 1:
            raise source.error(fdef, f"{len(example_inputs)} example inputs for {len(params) - 1} parameters")
        input_types = [V.type_of_example(e) for e in example_inputs]

        func_type = ir.FunctionType.get([self.builder.type(t) for t in input_types], [], self.builder.context)
        module_body = ir.InsertionPoint(self.capturer.module.body)
        func = ir.Operation.create(
            "func.func",
            attributes={"sym_name": ir.StringAttr.get(name), "function_type": ir.TypeAttr.get(func_type)},
            regions=1,
            ip=module_body,
        )
        entry = func.regions[0].blocks.append(*[self.builder.type(t) for t in input_types])

        env: dict[str, V.EnvValue] = {params[0]: V.Const(self.model), RETURN_VAR: V.Const(None)}
        for param, arg, example, type_ in zip(given, entry.arguments, example_inputs, input_types):
            env[param] = V.Dyn(arg, type_, example)
        defaults = fdef.args.defaults
        for param, default in zip(params[len(params) - len(defaults) :], defaults):
            if param not in env:
                env[param] = V.Const(self._eval_constant(default, {}))

        end = fresh_id()
        body = lower(source, fdef.body, nodes.ReturnTo(RETURN_VAR, end)) + [nodes.Label(end)]
        with ir.InsertionPoint(entry):
            final = self.compile_block(body, env, {RETURN_VAR})
            result = final[RETURN_VAR]
            outputs, tree = self._flatten_result(result)
            ir.Operation.create("func.return", operands=[o.value for o in outputs])
        func_type = ir.FunctionType.get(
            [self.builder.type(t) for t in input_types], [self.builder.type(o.type) for o in outputs]
        )
        func.attributes["function_type"] = ir.TypeAttr.get(func_type)
        return func, tree, given

    def _flatten_result(self, value: V.EnvValue):
        outputs: list[V.Dyn] = []

        def visit(item):
            if isinstance(item, V.Tup):
                return {item.kind: [visit(i) for i in item.items]}
            if isinstance(item, V.Const) and item.value is None:
                return None
            if isinstance(item, V.Const) and not isinstance(item.value, (bool, int, float)):
                raise self.error(None, f"forward returns a {type(item.value).__name__}", "return tensors, tuples, lists or Python scalars")
            if item is V.UNDEF:
                raise self.error(None, "forward does not return a value on every path")
            outputs.append(self.builder.materialize(item))
            return len(outputs) - 1

        return outputs, visit(value)

    # ----- statement lists -------------------------------------------------------------

    def compile_block(self, stmts: list[ast.stmt], env: dict, live_out: set[str]) -> dict:
        """Compile statements at the current insertion point; returns the environment at the end."""
        stmts = list(stmts)
        i = 0
        while i < len(stmts):
            stmt = stmts[i]
            if isinstance(stmt, nodes.Label):
                i += 1
            elif isinstance(stmt, nodes.Jump):
                i = self._label_index(stmts, stmt.id, i)
            elif isinstance(stmt, nodes.BindConst):
                env[stmt.name] = V.Const(stmt.value)
                i += 1
            elif isinstance(stmt, _SwitchScope):
                self.scope = self._scope_for(stmt.source)
                i += 1
            elif isinstance(stmt, ast.If):
                stmts, env = self.compile_if(stmts, i, env, live_out)
                i = 0
            elif isinstance(stmt, nodes.Loop):
                stmts, env = self.compile_loop(stmts, i, env, live_out)
                i = 0
            elif (expanded := self._expand_call(stmt, env)) is not None:
                stmts = expanded + stmts[i + 1 :]
                i = 0
            elif self._is_run_statement(stmt, env, set()):
                j = i + 1
                written = written_in([stmt])
                while (
                    j < len(stmts)
                    and self._is_run_statement(stmts[j], env, written)
                    and self._inlined_callee(stmts[j], env) is None
                ):
                    written |= written_in([stmts[j]])
                    j += 1
                run = stmts[i:j]
                if j < len(stmts) and isinstance(stmts[j], ast.If):
                    stmts = stmts[:j] + [self._condition_into_run(run, stmts[j], env, written)] + stmts[j + 1 :]
                self.compile_run(run, env, live_before(stmts[j:], live_out))
                i = j
            else:
                self.compile_host_statement(stmt, env)
                i += 1
        return env

    @staticmethod
    def _label_index(stmts, label: int, start: int) -> int:
        for k in range(start, len(stmts)):
            if isinstance(stmts[k], nodes.Label) and stmts[k].id == label:
                return k
        raise AssertionError(f"jump to a label outside its statement list ({label})")

    def _scope_for(self, source: SourceFunction) -> _Scope:
        scope = self._scopes.get(source.file + ":" + source.node.name + str(source.node.lineno))
        if scope is None:
            scope = self._scopes[source.file + ":" + source.node.name + str(source.node.lineno)] = _Scope(source)
        return scope

    # ----- if --------------------------------------------------------------------------

    def compile_if(self, stmts, i, env, live_out):
        stmt = stmts[i]
        condition = self.condition(stmt.test, env)
        if isinstance(condition, V.Const):  # configuration: resolved while importing
            chosen = stmt.body if condition.value else stmt.orelse
            return chosen + stmts[i + 1 :], env
        targets = nodes.jump_targets(stmt.body + stmt.orelse)
        join = i
        for target in targets:
            join = max(join, self._label_index(stmts, target, i + 1))
        tail, rest = stmts[i + 1 : join + 1], stmts[join + 1 :]
        live = live_before(rest, live_out)

        flag = self.builder.to_i1(condition)
        draft = ir.Operation.create("scf.if", results=[], operands=[flag], regions=2)
        self._join_node = stmt
        branch_envs = []
        for region, body in zip(draft.regions, (stmt.body, stmt.orelse)):
            with ir.InsertionPoint(region.blocks.append()):
                branch_envs.append(self.compile_block(body + tail, dict(env), live))
        env = self._join_if(draft, flag, branch_envs, live, env)
        return rest, env

    def _join_if(self, draft, flag, branch_envs, live, env_before):
        then_env, else_env = branch_envs
        joined = dict(env_before)
        yields: list[tuple[str, list, list]] = []  # (name, then leaves, else leaves)
        blocks = [draft.regions[0].blocks[0], draft.regions[1].blocks[0]]
        for name in sorted(live):
            a, b = then_env.get(name, _MISSING), else_env.get(name, _MISSING)
            if a is _MISSING and b is _MISSING:
                continue
            a = V.UNDEF if a is _MISSING else a
            b = V.UNDEF if b is _MISSING else b
            if _same(a, b):
                joined[name] = a
                continue
            yields.append((name, a, b))

        # Materialise both sides' leaves in their own block, then build the real scf.if.
        then_ops, else_ops, types, examples, shapes = [], [], [], [], []
        for name, a, b in yields:
            with ir.InsertionPoint(blocks[0]):
                a_leaves, structure = self._leaves_for_join(a, b, name)
            with ir.InsertionPoint(blocks[1]):
                b_leaves, _ = self._leaves_for_join(b, a, name)
            start = len(types)
            for la, lb in zip(a_leaves, b_leaves):
                types.append(self._join_type(la.type, lb.type, name))
                examples.append(la.example)
            shapes.append((name, structure, start, len(a_leaves)))
            then_ops.extend(a_leaves)
            else_ops.extend(b_leaves)
        for block, leaves in zip(blocks, (then_ops, else_ops)):
            with ir.InsertionPoint(block):
                operands = [self._cast(leaf, t).value for leaf, t in zip(leaves, types)]
                ir.Operation.create("scf.yield", operands=operands)
        if_op = ir.Operation.create(
            "scf.if",
            results=[self.builder.type(t) for t in types],
            operands=[flag],
            regions=2,
            ip=ir.InsertionPoint(draft),
        )
        for old, new in zip(blocks, if_op.regions):
            new_block = new.blocks.append()
            for op in list(old.operations):
                new_block.append(op)
        draft.erase()
        results = list(if_op.results)
        for name, structure, start, count in shapes:
            leaves = [V.Dyn(results[k], types[k], examples[k]) for k in range(start, start + count)]
            joined[name] = _rebuild(structure, leaves)
        return joined

    def _leaves_for_join(self, mine: V.EnvValue, other: V.EnvValue, name: str):
        """Leaves of `mine` as IR values, shaped like `other` where `mine` is undefined."""
        if mine is V.UNDEF:
            if other is V.UNDEF:
                raise AssertionError("both sides undefined")
            template = other
            if isinstance(template, V.Tup):
                leaves = [self._placeholder_like(l) for l in V.leaves(template)]
                return leaves, template
            return [self._placeholder_like(template)], None
        if isinstance(mine, V.Tup):
            if not isinstance(other, (V.Tup, type(V.UNDEF))) or (
                isinstance(other, V.Tup) and len(V.leaves(other)) != len(V.leaves(mine))
            ):
                raise self.error(None, f"{_describe(name)} has a different structure on different paths", "return/assign the same tuple shape on every path")
            return [self._materialize(l, name) for l in V.leaves(mine)], mine
        if isinstance(other, V.Tup):
            raise self.error(None, f"{_describe(name)} is a tuple on one path only", "use the same structure on every path")
        return [self._materialize(mine, name)], None

    def _placeholder_like(self, value: V.EnvValue) -> V.Dyn:
        if isinstance(value, V.Const):
            return self._materialize(value, "value")
        return self.builder.placeholder(value.type, value.example)

    def _materialize(self, value: V.EnvValue, name: str) -> V.Dyn:
        if isinstance(value, V.Const) and not isinstance(value.value, (bool, int, float, type(None))):
            raise self.error(
                None,
                f"{_describe(name)} holds a {type(value.value).__name__} that depends on a runtime condition",
                "only tensors, Python scalars, tuples and lists of tensors can differ between paths",
            )
        return self.builder.materialize(value)

    def _join_type(self, a: str, b: str, name: str) -> str:
        try:
            return V.join_types(a, b)
        except FrontendError as error:
            raise self.error(None, f"{_describe(name)}: {error.construct}", error.hint) from None

    def _cast(self, leaf: V.Dyn, type_: str) -> V.Dyn:
        if leaf.type == type_:
            return leaf
        if V.is_tensor_type(type_):
            return self.builder.cast(leaf, type_)
        return leaf

    # ----- loops -----------------------------------------------------------------------

    def compile_loop(self, stmts, i, env, live_out):
        loop: nodes.Loop = stmts[i]
        node = loop.node
        rest = stmts[i + 1 :]
        if isinstance(node, ast.For):
            return self._compile_for(loop, rest, env, live_out)
        return self._compile_while(loop, rest, env, live_out)

    def _compile_for(self, loop: nodes.Loop, rest, env, live_out):
        node: ast.For = loop.node
        iterable = self._try_constant(node.iter, env)
        if iterable is _MISSING:
            raise self.error(
                node,
                "`for` over a value computed at runtime",
                "loop over `range(N)` with a constant N, a ModuleList, or zip/enumerate of them",
            )
        target_names = {n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)}
        body_reads = set().union(*(names_read(s) for s in node.body))
        if isinstance(iterable, range) and not (target_names & body_reads):
            return self._compile_runtime_loop(loop, rest, env, live_out, trip=iterable)
        items = list(iterable)
        if len(items) > MAX_UNROLL:
            raise self.error(node, f"loop of {len(items)} iterations whose index is used", f"keep loops that use their index under {MAX_UNROLL} iterations")
        unrolled = unroll(self.scope.source, loop, items, lambda item: self._bind_target(node.target, item))
        return unrolled + rest, env

    def _bind_target(self, target: ast.expr, item) -> list[ast.stmt]:
        if isinstance(target, ast.Name):
            return [nodes.BindConst(target.id, item, target.lineno)]
        if isinstance(target, (ast.Tuple, ast.List)):
            items = list(item)
            if len(items) != len(target.elts):
                raise self.error(target, "loop target does not match the items")
            return [s for t, v in zip(target.elts, items) for s in self._bind_target(t, v)]
        raise self.error(target, "loop target that is not a name or tuple of names")

    def _compile_while(self, loop: nodes.Loop, rest, env, live_out):
        node: ast.While = loop.node
        if not self._is_bounded(node, env):
            raise self.error(
                node,
                "`while` loop without a bound",
                "add a counter compared to a constant (`while step < MAX and ...:` with `step += 1` "
                "in the body), or write `for _ in range(MAX): ... if not cond: break`",
            )
        return self._compile_runtime_loop(loop, rest, env, live_out, trip=None)

    def _is_bounded(self, node: ast.While, env) -> bool:
        conjuncts = node.test.values if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And) else [node.test]
        counters = written_in(node.body)
        for test in conjuncts:
            if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
                continue
            left, op, right = test.left, test.ops[0], test.comparators[0]
            if isinstance(op, (ast.Gt, ast.GtE)):
                left, right = right, left
            elif not isinstance(op, (ast.Lt, ast.LtE)):
                continue
            if isinstance(left, ast.Name) and left.id in counters and isinstance(self._try_constant(right, env), int):
                return True
        return False

    def _compile_runtime_loop(self, loop: nodes.Loop, rest, env, live_out, trip: range | None):
        """scf.for (a range whose index is unused, no break/return) or scf.while."""
        node = loop.node
        source = self.scope.source
        uid = fresh_id()
        body_end = fresh_id()
        brk, ret_flag, ret_var, counter = f"__brk{uid}", f"__returned{uid}", f"__retval{uid}", f"__count{uid}"
        has_break = any(isinstance(n, ast.Break) for n in _own_statements(node.body))
        flat_body = lower(
            source,
            node.body,
            nodes.ReturnFromLoop(ret_var, ret_flag, body_end),
            on_break=lambda line: [nodes.BindConst(brk, True, line), nodes.Jump(body_end, line)],
            on_continue=lambda line: [nodes.Jump(body_end, line)],
        ) + [nodes.Label(body_end)]
        use_for = trip is not None and not has_break and not loop.has_return
        extra: dict[str, V.EnvValue] = {}
        if has_break:
            extra[brk] = V.Const(False)
        if loop.has_return:
            extra[ret_flag] = V.Const(False)
            extra[ret_var] = V.UNDEF
        if trip is not None and not use_for:
            extra[counter] = V.Const(trip.start)
            increment = ast.parse(f"{counter} = {counter} + {trip.step}").body[0]
            increment.lineno = node.lineno
            flat_body = [increment] + flat_body

        post: list[ast.stmt] = []
        if loop.has_return:
            test = ast.Name(ret_flag, ast.Load())
            post_if = ast.If(test=test, body=loop.returns.statements(ast.Name(ret_var, ast.Load()), node.lineno), orelse=[])
            post_if.lineno = node.lineno
            post.append(post_if)
        after = post + rest
        carried = self._carried_names(flat_body, node, live_before(after, live_out) | set(extra))
        env = {**env, **extra}
        # name -> _Carried (IR-typed) or an EnvValue that has not changed in the loop so far
        state: dict[str, Any] = {name: env.get(name, V.UNDEF) for name in carried}
        for name, value in state.items():
            if isinstance(value, V.Dyn) or (isinstance(value, V.Tup) and any(isinstance(l, V.Dyn) for l in V.leaves(value))):
                state[name] = self._carried(value, value, node, name)

        for _attempt in range(6):
            if use_for:
                op, end_env = self._build_for(trip, state, env, flat_body)
            else:
                op, end_env = self._build_while(node, trip, state, env, flat_body, counter, brk, ret_flag, has_break, loop.has_return)
            changed = False
            for name in carried:
                entry, end = state[name], end_env.get(name, V.UNDEF)
                if isinstance(entry, _Carried):
                    end_types = self._loop_types(end, node, name)
                    if len(end_types) != len(entry.types):
                        raise self.error(node, f"`{name}` changes structure in a runtime loop")
                    joined = [self._join_type(a, b, name) for a, b in zip(entry.types, end_types)]
                    if joined != entry.types:
                        state[name] = _Carried(entry.initial, joined, entry.examples, entry.structure)
                        changed = True
                elif not (end is V.UNDEF or _same(end, entry)):
                    state[name] = self._carried(entry, end, node, name)
                    changed = True
            if not changed:
                break
            op.erase()
        else:
            raise self.error(node, "loop-carried values do not settle on one type", "keep each carried tensor's rank and dtype fixed")

        env = dict(env)
        results = iter(op.results)
        for name, entry in _carried_items(state):
            end = end_env.get(name)
            examples = [V.example_of(l) for l in V.leaves(end)] if end not in (None, V.UNDEF) else entry.examples
            leaves = [V.Dyn(next(results), t, e) for t, e in zip(entry.types, examples)]
            env[name] = _rebuild(entry.structure, leaves)
        return after, env

    def _carried(self, initial, typed_like, node, name) -> "_Carried":
        """`initial` before the loop, typed (and shaped) like `typed_like`."""
        structure = typed_like if isinstance(typed_like, V.Tup) else None
        return _Carried(
            initial,
            self._loop_types(typed_like, node, name),
            [V.example_of(l) for l in V.leaves(typed_like)],
            structure,
        )

    def _loop_types(self, value, node, name) -> list[str]:
        if isinstance(value, V.Tup):
            return [self._loop_type(leaf, node, name) for leaf in V.leaves(value)]
        return [self._loop_type(value, node, name)]

    def _carried_names(self, flat_body, node, live_after: set[str]) -> list[str]:
        """Names the body writes that are live at the loop header (a fixed point)."""
        written = written_in(flat_body)
        live = set(live_after)
        if isinstance(node, ast.While):
            live |= names_read(node.test)
        while True:
            grown = live | live_before(flat_body, live)
            if grown == live:
                break
            live = grown
        return sorted(written & live)

    def _loop_type(self, value, node, name) -> str:
        if isinstance(value, V.Dyn):
            return value.type
        if isinstance(value, V.Const) and isinstance(value.value, (bool, int, float)):
            return V.type_of_example(value.value)
        raise self.error(node, f"`{name}` changes in a runtime loop but is not a tensor, scalar or list of tensors")

    def _initial_values(self, state) -> list[V.Dyn]:
        values = []
        for name, entry in _carried_items(state):
            if entry.initial is V.UNDEF:
                leaves = [self.builder.placeholder(t, e) for t, e in zip(entry.types, entry.examples)]
            else:
                leaves = [self._materialize(l, name) for l in V.leaves(entry.initial)]
                if len(leaves) != len(entry.types):
                    raise self.error(None, f"`{name}` changes structure in a runtime loop")
            values.extend(self._cast(l, t) for l, t in zip(leaves, entry.types))
        return values

    def _body_env(self, env, state, block_args):
        body_env = dict(env)
        args = iter(block_args)
        for name, entry in _carried_items(state):
            leaves = [V.Dyn(next(args), t, e) for t, e in zip(entry.types, entry.examples)]
            body_env[name] = _rebuild(entry.structure, leaves)
        return body_env

    def _yield(self, end_env, state, terminator="scf.yield"):
        operands = []
        for name, entry in _carried_items(state):
            leaves = [self._materialize(l, name) for l in V.leaves(end_env[name])]
            operands.extend(self._cast(l, t).value for l, t in zip(leaves, entry.types))
        ir.Operation.create(terminator, operands=operands)

    def _build_for(self, trip: range, state, env, flat_body):
        inits = self._initial_values(state)
        index = ir.IndexType.get(self.builder.context)
        bounds = [
            ir.Operation.create("arith.constant", results=[index], attributes={"value": ir.IntegerAttr.get(index, v)}).result
            for v in (trip.start, trip.stop, trip.step)
        ]
        types = [self.builder.type(t) for _, entry in _carried_items(state) for t in entry.types]
        op = ir.Operation.create("scf.for", results=types, operands=bounds + [v.value for v in inits], regions=1)
        block = op.regions[0].blocks.append(index, *types)
        with ir.InsertionPoint(block):
            body_env = self._body_env(env, state, list(block.arguments)[1:])
            end_env = self.compile_block(flat_body, body_env, set(state))
            self._yield(end_env, state)
        return op, end_env

    def _build_while(self, node, trip, state, env, flat_body, counter, brk, ret_flag, has_break, has_return):
        inits = self._initial_values(state)
        types = [self.builder.type(t) for _, entry in _carried_items(state) for t in entry.types]
        op = ir.Operation.create("scf.while", results=types, operands=[v.value for v in inits], regions=2)
        before = op.regions[0].blocks.append(*types)
        with ir.InsertionPoint(before):
            before_env = self._body_env(env, state, list(before.arguments))
            tests = []
            if trip is not None:
                tests.append(ast.parse(f"{counter} < {trip.stop}" if trip.step > 0 else f"{counter} > {trip.stop}", mode="eval").body)
            else:
                tests.append(node.test)
            if has_break:
                tests.append(ast.parse(f"not {brk}", mode="eval").body)
            if has_return:
                tests.append(ast.parse(f"not {ret_flag}", mode="eval").body)
            test = tests[0] if len(tests) == 1 else ast.BoolOp(op=ast.And(), values=tests)
            for sub in ast.walk(test):
                if "lineno" in sub._attributes and not hasattr(sub, "lineno"):
                    ast.copy_location(sub, node)
            condition = self.condition(test, before_env)
            if isinstance(condition, V.Const):
                condition = self.builder.constant(bool(condition.value))
            flag = self.builder.to_i1(condition)
            ir.Operation.create("scf.condition", operands=[flag, *before.arguments])
        after = op.regions[1].blocks.append(*types)
        with ir.InsertionPoint(after):
            body_env = self._body_env(env, state, list(after.arguments))
            end_env = self.compile_block(flat_body, body_env, set(state))
            self._yield(end_env, state)
        return op, end_env

    # ----- runs ------------------------------------------------------------------------

    def _is_run_statement(self, stmt: ast.stmt, env, written_in_run: set[str]) -> bool:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return False  # docstring
        if isinstance(stmt, (ast.FunctionDef, ast.Lambda)):
            return True
        if not isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)):
            return False
        if isinstance(stmt, ast.Expr) and self._list_method(stmt.value, env) is not None:
            return False
        if self._needs_host(stmt, env, written_in_run):
            return False
        value = stmt.value
        if value is None or _is_packing(value):
            return False
        reads = names_read(stmt) - written_in_run
        if not isinstance(stmt, ast.AugAssign) and all(self._is_constant_name(n, env) for n in reads):
            return self._try_constant(value, env) is _MISSING
        return True

    def _condition_into_run(self, run: list, if_stmt: ast.If, env, written: set[str]) -> ast.If:
        """Compute a following `if`'s tensor condition in the same run (one export, not two)."""
        test = if_stmt.test
        if self._needs_host(test, env, written) or not (names_read(test) & written):
            return if_stmt
        name = "__dycl_condition"  # one fixed name: identical runs share an export
        assign = ast.Assign(targets=[ast.Name(name, ast.Store())], value=test)
        ast.copy_location(assign, test)
        run.append(assign)
        merged = ast.If(test=ast.Name(name, ast.Load()), body=if_stmt.body, orelse=if_stmt.orelse)
        return ast.copy_location(merged, if_stmt)

    def compile_run(self, stmts: list[ast.stmt], env: dict, live_after: set[str]) -> None:
        inputs = sorted(n for n in live_before(stmts, set()) if n in env)
        outputs = sorted(written_in(stmts) & live_after)
        returned = ast.Tuple([ast.Name(n, ast.Load()) for n in outputs], ast.Load())
        result = self._run_function(stmts, inputs, returned)
        values = self._call_run(result, stmts, {n: env[n] for n in inputs})
        for name, value in zip(outputs, values.items if isinstance(values, V.Tup) else ()):
            env[name] = value

    def tensor_expression(self, expr: ast.expr, env: dict) -> V.EnvValue:
        inputs = sorted(n for n in names_read(expr) if n in env)
        function = self._run_function([], inputs, expr, line=expr.lineno)
        return self._call_run(function, [expr], {n: env[n] for n in inputs})

    def _run_function(self, stmts, inputs, returned: ast.expr, line: int | None = None):
        line = line if line is not None else stmts[0].lineno
        args = ast.arguments(
            posonlyargs=[], args=[ast.arg("__dycl_model")] + [ast.arg(n) for n in inputs],
            kwonlyargs=[], kw_defaults=[], defaults=[],
        )
        ret = ast.Return(returned)
        fdef = ast.FunctionDef(name="__dycl_run", args=args, body=list(stmts) + [ret], decorator_list=[], type_params=[])
        module = ast.Module(body=[fdef], type_ignores=[])
        _fix_locations(module, line)
        namespace = dict(self.scope.namespace)
        exec(compile(module, self.scope.source.file, "exec"), namespace)
        return namespace["__dycl_run"]

    def _call_run(self, function, stmts, inputs: dict[str, V.EnvValue]) -> V.EnvValue:
        """Run eagerly for examples, capture, call; the returned structure holds Dyn leaves."""
        lines = sorted({s.lineno for s in stmts})
        names = list(inputs)
        for name in names:
            inputs[name] = self._scalars_as_tensors(inputs[name])
        flat_inputs = [l for name in names for l in V.leaves(inputs[name]) if isinstance(l, V.Dyn)]
        input_specs = [(name, inputs[name]) for name in names]
        for leaf in flat_inputs:
            if not (V.is_tensor_type(leaf.type) or leaf.type == V.INT):
                raise self.error(
                    stmts[0],
                    f"tensor math on a runtime Python {leaf.type.removeprefix('!torch.')}",
                    "keep data-dependent values as tensors (e.g. `t` instead of `t.item()`) or use them only in conditions",
                )

        def rebuild(flat):
            it = iter(flat)
            return {name: _substitute(value, it) for name, value in input_specs}

        examples = {name: V.example_of(value) if value is not V.UNDEF else None for name, value in input_specs}
        called: list[torch.nn.Module] | None = []
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    with _record_calls(called):
                        eager = function(self.model, **examples)
                except Exception:
                    # torch.cond/while_loop compile their branches with dynamo, which a
                    # global module hook breaks: run plainly and export the whole model.
                    called = None
                    eager = function(self.model, **examples)
        except FrontendError:
            raise
        except Exception as error:
            raise self.error(stmts[0], f"running lines {lines} on example values failed: {type(error).__name__}: {error}") from None
        out_leaves, out_spec = pytree.tree_flatten(eager)
        tensor_positions = [k for k, leaf in enumerate(out_leaves) if isinstance(leaf, torch.Tensor)]

        def run(model, *flat):
            result = function(model, **rebuild(flat))
            leaves = pytree.tree_leaves(result)
            return tuple(leaves[k] for k in tensor_positions)

        results: list = []
        if tensor_positions:
            dynamic = [self._dynamic_dims(leaf.type) for leaf in flat_inputs]
            try:
                cache_key = (
                    ast.dump(ast.Module(body=list(stmts), type_ignores=[])) if not isinstance(stmts[0], ast.expr) else ast.dump(stmts[0]),
                    tuple(
                        (name, tuple(l.type for l in V.leaves(value) if isinstance(l, V.Dyn)),
                         self.capturer.cache.signature(_substitute(value, iter(()))) if not _has_dyn(value) else None)
                        for name, value in input_specs
                    ),
                )
                captured = self.capturer.capture(run, [l.example for l in flat_inputs], dynamic, called, cache_key)
            except FrontendError:
                raise
            except Exception as error:
                raise self._capture_error(stmts, lines, error) from None
            values = call(captured.func_name, [l.value for l in flat_inputs], [self.builder.type(t) for t in captured.result_types])
            results = [V.Dyn(v, t, out_leaves[k]) for v, t, k in zip(values, captured.result_types, tensor_positions)]
        symbolic = any(leaf.type == V.INT or self._dynamic_dims(leaf.type) for leaf in flat_inputs)
        scalars = [type(l).__name__ for l in out_leaves if isinstance(l, (bool, int, float))]
        if symbolic and scalars:
            raise self.error(
                stmts[0],
                f"lines {lines} compute Python {', '.join(scalars)} values from runtime values inside tensor code",
                "compute such scalars in their own statement (e.g. `n = x.shape[1]` on its own line)",
            )
        it = iter(results)
        structured = [next(it) if isinstance(leaf, torch.Tensor) else V.Const(leaf) for leaf in out_leaves]
        return _to_env_value(pytree.tree_unflatten(structured, out_spec), self.builder)

    def _scalars_as_tensors(self, value: V.EnvValue) -> V.EnvValue:
        """A runtime float enters tensor math as a 0-d f64 tensor (same promotion as a
        Python float: 0-d tensors never widen the other operand's dtype)."""
        if isinstance(value, V.Tup):
            return V.Tup(tuple(self._scalars_as_tensors(i) for i in value.items), value.kind)
        if isinstance(value, V.Dyn) and value.type == V.FLOAT:
            example = torch.tensor(value.example, dtype=torch.float64)
            return self.builder.host_op("torch.prim.NumToTensor.Scalar", [value], V.type_of_example(example), example)
        return value

    @staticmethod
    def _dynamic_dims(type_text: str) -> list[int]:
        parsed = V.parse_vtensor(type_text)
        return [k for k, d in enumerate(parsed[0]) if d is None] if parsed else []

    def _capture_error(self, stmts, lines, error) -> FrontendError:
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        hint = "write data-dependent control flow in forward (or a helper on self) so that DyCL can see it"
        if "data-dependent" in text or "guard" in text.lower():
            hint = ("a Python `if`/`while` on a tensor inside a function DyCL does not inline "
                    "(call it from forward as `x = self.helper(x)` / `x = self.block(x)`), or "
                    "use torch.cond")
        return self.error(stmts[0], f"cannot capture lines {lines} with torch.export ({type(error).__name__}: {text})", hint)

    # ----- host statements ---------------------------------------------------------------

    def compile_host_statement(self, stmt: ast.stmt, env: dict) -> None:
        if isinstance(stmt, ast.Expr):
            if isinstance(stmt.value, ast.Constant):
                return
            method = self._list_method(stmt.value, env)
            if method is not None:
                self._list_append(stmt.value, env)
                return
            self.expression(stmt.value, env)  # evaluated for its errors; the value is dropped
            return
        if isinstance(stmt, ast.Assign):
            value = self.expression(stmt.value, env)
            for target in stmt.targets:
                self._assign(target, value, env)
            return
        if isinstance(stmt, ast.AugAssign):
            binop = ast.copy_location(ast.BinOp(left=_load(stmt.target), op=stmt.op, right=stmt.value), stmt)
            self._assign(stmt.target, self.expression(binop, env), env)
            return
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            self._assign(stmt.target, self.expression(stmt.value, env), env)
            return
        raise self.error(stmt, f"`{type(stmt).__name__}` statement", "")

    def _assign(self, target: ast.expr, value: V.EnvValue, env: dict) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, V.Tup) and value.kind == "list":
                value = self._to_host_list(value, target)
            env[target.id] = value
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, V.Const):
                items = [V.Const(v) for v in value.value]
            elif isinstance(value, V.Tup):
                items = list(value.items)
            else:
                raise self.error(target, "unpacking a runtime value", "index it explicitly")
            if len(items) != len(target.elts):
                raise self.error(target, "unpacking a tuple of the wrong length")
            for sub, item in zip(target.elts, items):
                self._assign(sub, item, env)
            return
        raise self.error(target, "assignment to an attribute or item", "assign to a local variable (module state cannot change in forward)")

    def _to_host_list(self, value: V.Tup, node) -> V.EnvValue:
        if all(isinstance(i, V.Const) for i in value.items) and value.items:
            return V.Const([i.value for i in value.items])
        items = [self._materialize(i, "list item") for i in value.items]
        if not all(V.is_tensor_type(i.type) for i in items):
            raise self.error(node, "a runtime list of non-tensors", "only lists of tensors can depend on runtime conditions")
        op = self.builder.op("torch.prim.ListConstruct", [i.value for i in items], [V.TENSOR_LIST])
        return V.Dyn(op.result, V.TENSOR_LIST, [i.example for i in items])

    def _list_method(self, expr: ast.expr, env) -> str | None:
        if (
            isinstance(expr, ast.Call)
            and isinstance(expr.func, ast.Attribute)
            and isinstance(expr.func.value, ast.Name)
            and expr.func.attr in ("append", "extend", "insert", "pop")
        ):
            holder = env.get(expr.func.value.id)
            if isinstance(holder, V.Dyn) and holder.type == V.TENSOR_LIST:
                return expr.func.attr
            if isinstance(holder, V.Const) and isinstance(holder.value, list):
                return expr.func.attr
        return None

    def _list_append(self, expr: ast.Call, env) -> None:
        name = expr.func.value.id
        if expr.func.attr != "append" or len(expr.args) != 1:
            raise self.error(expr, f"list `.{expr.func.attr}` in forward", "build lists with `.append(item)`")
        holder = env[name]
        if isinstance(holder, V.Const):
            holder = self._to_host_list(V.Tup(tuple(V.Const(v) for v in holder.value), "list"), expr)
        item = self._materialize(self.expression(expr.args[0], env), "list item")
        if not V.is_tensor_type(item.type):
            raise self.error(expr, "appending a non-tensor to a runtime list", "only lists of tensors can depend on runtime conditions")
        op = ir.Operation.create(
            "torch.aten.append.t", results=[self.builder.type(V.TENSOR_LIST)], operands=[holder.value, item.value]
        )
        env[name] = V.Dyn(op.result, V.TENSOR_LIST, holder.example + [item.example])

    # ----- expressions -------------------------------------------------------------------

    def condition(self, expr: ast.expr, env) -> V.EnvValue:
        value = self.expression(expr, env)
        if isinstance(value, V.Const):
            return V.Const(bool(value.value))
        if isinstance(value, V.Tup):
            return V.Const(bool(value.items))
        if value.type == V.TENSOR_LIST:
            raise self.error(expr, "condition on a runtime list", "test `len(lst) > 0`")
        return value

    def expression(self, expr: ast.expr, env) -> V.EnvValue:
        """Const when known at import time; host ops where needed; otherwise a captured run."""
        if isinstance(expr, ast.List) and not expr.elts:
            return V.Tup((), "list")  # becomes a runtime list once assigned
        constant = self._try_constant(expr, env)
        if constant is not _MISSING:
            return V.Const(constant)
        if isinstance(expr, ast.Name):
            value = env.get(expr.id, V.UNDEF)
            if value is V.UNDEF:
                raise self.error(expr, f"`{expr.id}` may be used before it is assigned")
            return value
        if isinstance(expr, (ast.Tuple, ast.List)):
            return host_tuple(self, expr, env)
        if not self._needs_host(expr, env, set()):
            return self.tensor_expression(expr, env)
        handler = HOST_EXPRESSIONS.get(type(expr))
        if handler is None:
            raise self.error(expr, f"`{ast.unparse(expr)}` mixes runtime Python values into an expression DyCL cannot split")
        return handler(self, expr, env)

    def _needs_host(self, node: ast.AST, env, written_in_run: set[str]) -> bool:
        for sub in ast.walk(node):
            if isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name):
                sub = ast.Name(sub.target.id, ast.Load())  # `n += 1` reads n
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id not in written_in_run:
                value = env.get(sub.id)
                if isinstance(value, V.Dyn) and not V.is_tensor_type(value.type):
                    return True
                if isinstance(value, V.Tup) and any(
                    isinstance(l, V.Dyn) and not V.is_tensor_type(l.type) for l in V.leaves(value)
                ):
                    return True
            elif isinstance(sub, ast.Call):
                if isinstance(sub.func, ast.Attribute) and sub.func.attr in X.SCALAR_METHODS:
                    return True
                func = self._try_constant(sub.func, env, quiet=True)
                if func in X.REJECTED_CALLS:
                    raise self.error(sub, *X.REJECTED_CALLS[func])
                if func in X.SCALAR_BUILTINS or func in X.HOST_TORCH_FUNCTIONS or func is builtins.len:
                    return True
            elif isinstance(sub, (ast.BoolOp, ast.IfExp)):
                return True
            elif isinstance(sub, ast.UnaryOp) and isinstance(sub.op, ast.Not):
                return True
        return False

    def _is_constant_name(self, name: str, env) -> bool:
        value = env.get(name, _MISSING)
        return value is _MISSING or isinstance(value, V.Const)

    def _try_constant(self, expr: ast.expr, env, quiet: bool = False):
        """The value of `expr` if it reads only import-time constants and is not a tensor."""
        reads = names_read(expr)
        if not all(self._is_constant_name(n, env) for n in reads):
            return _MISSING
        try:
            value = self._eval_constant(expr, env)
        except Exception:
            return _MISSING
        if any(isinstance(leaf, torch.Tensor) for leaf in pytree.tree_leaves(value)):
            return _MISSING
        return value

    def _eval_constant(self, expr: ast.expr, env):
        local = {n: v.value for n, v in env.items() if isinstance(v, V.Const)}
        code = compile(ast.Expression(_located(expr)), self.scope.source.file, "eval")
        with torch.no_grad():
            return eval(code, self.scope.namespace, local)

    # ----- inlining ----------------------------------------------------------------------

    def _inlined_callee(self, stmt: ast.stmt, env):
        if isinstance(stmt, (ast.Assign, ast.Expr, ast.AugAssign)) and isinstance(stmt.value, ast.Call):
            return self._callee(stmt.value, env)
        return None

    def _expand_call(self, stmt: ast.stmt, env) -> list[ast.stmt] | None:
        """Inline `x = helper(...)`/`helper(...)` when the helper has control flow."""
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            value = stmt.value
        elif isinstance(stmt, (ast.Expr, ast.AugAssign)):
            value = stmt.value
        else:
            return None
        callee = self._callee(value, env) if isinstance(value, ast.Call) else None
        if callee is None:
            self._reject_nested_helpers(value, env)
            return None
        function, receiver = callee
        result_var = f"__result{fresh_id()}"
        inlined, bindings = inline_call(self.scope.source, function, receiver, value, result_var)
        binds = [nodes.BindConst(name, obj, stmt.lineno) for name, obj in bindings.items()]
        replaced = _replace_value(stmt, ast.Name(result_var, ast.Load()))
        return [_SwitchScope(function), *binds, *inlined, _SwitchScope(self.scope.source), replaced]

    def _callee(self, call_node: ast.Call, env):
        func = self._try_constant(call_node.func, env, quiet=True)
        if func is _MISSING:
            return None
        if isinstance(func, torch.nn.Module):
            function, receiver = type(func).forward, func
        elif hasattr(func, "__self__") and isinstance(func.__self__, torch.nn.Module) and hasattr(func, "__func__"):
            function, receiver = func.__func__, func.__self__
        elif isinstance(func, types.FunctionType):
            function, receiver = func, NO_RECEIVER  # a plain helper function of the user's code
        else:
            return None
        if (getattr(function, "__module__", None) or "").partition(".")[0] in _LIBRARY_MODULES:
            return None
        try:
            source = parse_function(function)
        except FrontendError:
            return None
        if not has_control_flow(source.node):
            return None
        return source, receiver

    def _reject_nested_helpers(self, expr: ast.expr, env) -> None:
        for sub in ast.walk(expr):
            if isinstance(sub, ast.Call) and sub is not expr and self._callee(sub, env) is not None:
                raise self.error(
                    sub,
                    f"call of `{ast.unparse(sub.func)}` (which has control flow) inside an expression",
                    "assign its result to a variable first: `y = self.helper(x)`",
                )

    # ----- errors ------------------------------------------------------------------------

    def error(self, node, construct: str, hint: str = "") -> FrontendError:
        """Located at `node`, or at the `if` being joined when the problem is a join."""
        return self.scope.source.error(node if node is not None else self._join_node, construct, hint)


@contextlib.contextmanager
def _record_calls(called: list):
    """Collect the modules a run calls (its wrapper then lifts only their weights)."""
    handle = torch.nn.modules.module.register_module_forward_pre_hook(
        lambda module, args: called.append(module)
    )
    try:
        yield
    finally:
        handle.remove()


# ----- small helpers -------------------------------------------------------------------


class _SwitchScope(ast.stmt):
    """Marks where inlined code of another source file starts/ends (for error locations)."""

    _fields = ()

    def __init__(self, source: SourceFunction):
        super().__init__()
        self.source = source
        self.lineno = 0


def _has_dyn(value) -> bool:
    return any(isinstance(l, V.Dyn) for l in V.leaves(value))


def _is_packing(value: ast.expr) -> bool:
    """Names and tuples of names: data movement, kept at host level (no run needed)."""
    if isinstance(value, ast.Name):
        return True
    return isinstance(value, (ast.Tuple, ast.List)) and all(
        isinstance(e, (ast.Name, ast.Constant)) for e in value.elts
    )


def _describe(name: str) -> str:
    return "the return value" if name == RETURN_VAR else f"`{name}`"


def _same(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, V.Const) and isinstance(b, V.Const):
        return type(a.value) is type(b.value) and (a.value is b.value or _safe_eq(a.value, b.value))
    if isinstance(a, V.Tup) and isinstance(b, V.Tup):
        return len(a.items) == len(b.items) and all(_same(x, y) for x, y in zip(a.items, b.items))
    return False


def _safe_eq(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _rebuild(structure, leaves):
    if structure is None:
        return leaves[0]
    it = iter(leaves)

    def visit(value):
        if isinstance(value, V.Tup):
            return V.Tup(tuple(visit(i) for i in value.items), value.kind)
        return next(it)

    return visit(structure)


def _substitute(value, it):
    if isinstance(value, V.Tup):
        items = [_substitute(i, it) for i in value.items]
        return items if value.kind == "list" else tuple(items)
    if isinstance(value, V.Dyn):
        return next(it)
    if isinstance(value, V.Const):
        return value.value
    return None


def _to_env_value(structured, builder) -> V.EnvValue:
    if isinstance(structured, (V.Dyn, V.Const)):
        return structured
    if isinstance(structured, tuple):
        return V.Tup(tuple(_to_env_value(s, builder) for s in structured))
    if isinstance(structured, list):
        return V.Tup(tuple(_to_env_value(s, builder) for s in structured), "list")
    if isinstance(structured, dict):
        if all(isinstance(v, V.Const) for v in structured.values()):
            return V.Const({k: v.value for k, v in structured.items()})
        raise FrontendError("a dict of tensors", "use tuples")
    return V.Const(structured)


class _Carried:
    """A variable carried by a runtime loop: its value before the loop, the IR types and
    examples of its leaves, and its tuple structure (None for a single value)."""

    def __init__(self, initial, types: list[str], examples: list, structure):
        self.initial = initial
        self.types = types
        self.examples = examples
        self.structure = structure


def _carried_items(state):
    return [(name, entry) for name, entry in state.items() if isinstance(entry, _Carried)]


def _own_statements(stmts):
    """Statements of this loop body, not of nested loops or functions."""
    stack = list(stmts)
    while stack:
        stmt = stack.pop()
        yield stmt
        if isinstance(stmt, ast.If):
            stack.extend(stmt.body + stmt.orelse)


def _load(target: ast.expr) -> ast.expr:
    if isinstance(target, ast.Name):
        return ast.copy_location(ast.Name(target.id, ast.Load()), target)
    raise FrontendError("augmented assignment to an attribute or item")


def _replace_value(stmt: ast.stmt, value: ast.expr) -> ast.stmt:
    value = ast.copy_location(value, stmt)
    if isinstance(stmt, ast.Assign):
        new = ast.Assign(targets=stmt.targets, value=value)
    elif isinstance(stmt, ast.AugAssign):
        new = ast.AugAssign(target=stmt.target, op=stmt.op, value=value)
    else:
        new = ast.Expr(value=ast.Constant(None))
    return ast.copy_location(new, stmt)


def _located(expr: ast.expr) -> ast.expr:
    _fix_locations(expr, getattr(expr, "lineno", 1))
    return expr


def _fix_locations(tree: ast.AST, line: int) -> None:
    """Give synthetic nodes a location compile() accepts (copies keep their own)."""
    for node in ast.walk(tree):
        if "lineno" not in node._attributes:
            continue
        if getattr(node, "lineno", None) is None:
            node.lineno = line
        if getattr(node, "col_offset", None) is None:
            node.col_offset = 0
        if getattr(node, "end_lineno", None) is None or node.end_lineno < node.lineno:
            node.end_lineno = node.lineno
        if getattr(node, "end_col_offset", None) is None:
            node.end_col_offset = 0


__all__ = ["FunctionCompiler"]
