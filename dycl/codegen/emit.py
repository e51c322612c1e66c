"""IR -> Python AST: the statements of one host function (see `dycl.codegen.host_python`).

`scf.if` becomes `if`, `scf.for` a `for ... in range`, `scf.while` a `while True` with a
`break`; calls of sub-DNNs call the compiled sub-DNN; every torch op the host keeps is
written as its `host` expression from `dycl.dialects.torch_ops`, with the operands' own
expressions in place of the parameter names (so precedence is the AST's business, not a
convention of fresh names). This module reads xDSL IR: it is imported when code is
generated, not with `dycl.codegen`.
"""

from __future__ import annotations

import ast
import builtins
import copy
import keyword
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue

from dycl.codegen.errors import CodegenError
from dycl.dialects import torch as t
from dycl.dialects.dtypes import dtype_name
from dycl.dialects.dycl import ERROR_KINDS, ErrorOp, NumpyArgsortOp, ParamOp, is_subdnn, SCALAR_CONVERTERS
from dycl.dialects.torch_ops import HostCode, op_info

RESERVED = frozenset({"np", "rt", "bind", "subdnns", "constants", "_"}) | frozenset(dir(builtins))
"""Names the generated module uses itself: no value may take one."""


# ------------------------------------------------------------------ AST helpers


def load(name: str) -> ast.Name:
    return ast.Name(name, ast.Load())


def store(name: str) -> ast.Name:
    return ast.Name(name, ast.Store())


def literal(value: object) -> ast.expr:
    """A Python constant; a negative number as a negation, so that the unparser puts
    parentheses where precedence needs them (`(-2) ** 2`)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and (value < 0 or repr(value)[0] == "-"):
        return ast.UnaryOp(ast.USub(), ast.Constant(-value))
    return ast.Constant(value)


def assign(targets: Sequence[str], values: Sequence[ast.expr]) -> ast.Assign:
    """`a = x` or `a, b = x, y`."""
    if len(targets) == 1:
        return ast.Assign([store(targets[0])], values[0])
    return ast.Assign(
        [ast.Tuple([store(n) for n in targets], ast.Store())], ast.Tuple(list(values), ast.Load())
    )


def unpack(targets: Sequence[str], value: ast.expr) -> ast.Assign:
    """`[a, b] = value`: a sub-DNN's results, a list's items (one target unpacks too)."""
    return ast.Assign([ast.List([store(n) for n in targets], ast.Store())], value)


class _Substitute(ast.NodeTransformer):
    """A `HostCode` expression with operand expressions for its parameter names; the
    name `operands` becomes the tuple of all (remaining) operands."""

    def __init__(self, code: HostCode, operands: Sequence[ast.expr], dtype: Callable[[], ast.expr]):
        self.bindings: dict[str, ast.expr] = {}
        for k, param in enumerate(code.params):
            if param.startswith("*"):
                self.bindings[param[1:]] = ast.Tuple(list(operands[k:]), ast.Load())
            elif k < len(operands):
                self.bindings[param] = operands[k]
        self.unbound = {p for p in code.params if not p.startswith("*")} - set(self.bindings)
        self.dtype = dtype

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if node.id in self.unbound:  # never left free: it could name a variable of the program
            raise CodegenError(f"host code `{ast.unparse(node)}` has no operand for `{node.id}`")
        if node.id in self.bindings:
            return copy.deepcopy(self.bindings[node.id])
        if node.id == "dtype":
            return self.dtype()
        return node

    def visit_Starred(self, node: ast.Starred) -> ast.AST | list[ast.expr]:
        # `[*operands]`: the operands themselves, spliced into the enclosing list.
        value = self.visit(node.value)
        return list(value.elts) if isinstance(value, ast.Tuple) and isinstance(node.value, ast.Name) \
            and node.value.id == "operands" else ast.Starred(value, node.ctx)


def instantiate(code: HostCode, operands: Sequence[ast.expr], dtype: Callable[[], ast.expr]) -> ast.expr:
    return _Substitute(code, operands, dtype).visit(code.expression)


# ------------------------------------------------------------------ names, scopes


# The casts the host writes as their operand (`_same_value`).
_CASTS = (arith.IndexCastOp, arith.ExtUIOp, arith.ExtSIOp, arith.TruncIOp)


def _same_expression(value: SSAValue) -> list[SSAValue]:
    """`value` and every value the host program writes as the same variable (casts, and
    ops whose host code is their operand)."""
    found, work = [], [value]
    while work:
        v = work.pop()
        found.append(v)
        for use in v.uses:
            op = use.operation
            info = op_info(op)
            if isinstance(op, _CASTS) or (info.host is not None and not info.unpacks and info.host.is_operand):
                work.extend(op.results)
    return found


class Names:
    """Python identifiers for SSA values: the IR's name hint when usable (numbered when a
    variable is bound again), else v<n>."""

    def __init__(self, taken: Sequence[str] = ()):
        self.used: set[str] = set(RESERVED) | set(taken)
        self.counter = 0

    def fresh(self, hint: str | None = None) -> str:
        if hint:
            hint = re.sub(r"\W", "_", hint)
            if hint[0].isdigit():
                hint = f"v{hint}"
        if hint and not keyword.iskeyword(hint):
            name, k = hint, 0
            while name in self.used:  # a variable the user rebinds: h, h_1, h_2 ...
                k += 1
                name = f"{hint}_{k}"
            self.used.add(name)
            return name
        while True:
            name = f"v{self.counter}"
            self.counter += 1
            if name not in self.used:
                self.used.add(name)
                return name


@dataclass
class Scope:
    """Emission state of one Python function."""

    names: Names
    values: dict[SSAValue, ast.expr] = field(default_factory=dict)
    carried: dict[SSAValue, str] = field(default_factory=dict)
    """Values a loop yields that take their carry's variable when defined: the next
    iteration then reads them without a copy."""
    owned: frozenset[SSAValue] = frozenset()
    """Arguments whose arrays the runtime owns (a tensor state slot's value, in the entry
    function): see `HostEmitter.ownership`."""


Tail = Callable[[list[ast.expr]], ast.stmt] | None  # terminator operands -> `return ...`
OnYield = Callable[[list[ast.stmt], list[ast.expr]], None] | None


def is_terminator(op: Operation) -> bool:
    return isinstance(op, (func.ReturnOp, scf.YieldOp, scf.ConditionOp))


def has_work(block: Block) -> bool:
    return any(not is_terminator(op) for op in block.ops)


# ---------------------------------------------------------------------- emitter


class HostEmitter:
    def __init__(self, module: ModuleOp, writable: Mapping[str, Collection[int]] | None = None):
        self.module = module
        self.writable = {name: frozenset(positions) for name, positions in (writable or {}).items()}
        """sub-DNN -> the argument positions its compiled form may write an output into (the
        backend's `in_place` pairs): the only arguments a call may give it."""
        self.funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
        self.subdnns = [name for name, op in self.funcs.items() if is_subdnn(op)]
        self.constants: dict[str, np.ndarray] = {}
        self.weight_names: list[str] = []
        self.constant_vars: dict[str, str] = {}  # constant key -> closure variable
        self.helpers: list[str] = []  # non-sub-DNN funcs the host calls, emitted as defs
        self.called_subdnns: list[str] = []
        self.in_place_calls: dict[str, tuple[str, tuple[int, ...]]] = {}
        """variable -> (sub-DNN, positions of the arguments given to it): `rt.in_place`."""
        self.owned_results: list[int] = []
        """Positions of the entry's results that are arrays the runtime made and nothing else
        holds (`ownership`, returned once): a state slot's new value there needs no check."""
        self.given_arguments_of_entry: set[int] = set()
        """Positions of the entry's arguments whose arrays some call may give to a sub-DNN
        (directly, or carried into a loop or returned by an in-place call)."""
        self._asked: set[SSAValue] = set()  # (the values `ownership` is deciding: a loop's carry passed on unchanged)
        self.scope: Scope

    # ---------------------------------------------------------------- values

    def expr(self, value: SSAValue) -> ast.expr:
        try:
            return copy.deepcopy(self.scope.values[value])
        except KeyError:
            raise CodegenError(f"value {value} used before it is defined") from None

    def bind_new(self, value: SSAValue) -> str:
        name = self.scope.carried.pop(value, None) or self.scope.names.fresh(value.name_hint)
        self.scope.values[value] = load(name)
        return name

    def assign(self, out: list[ast.stmt], op: Operation, expression: ast.expr) -> None:
        """`result = expression` for a one-result op."""
        (result,) = op.results
        out.append(assign([self.bind_new(result)], [expression]))

    def alias(self, op: Operation, expression: ast.expr) -> None:
        """The result *is* this expression (a literal, or an operand seen anew)."""
        self.scope.values[op.results[0]] = expression

    def constant(self, key: str, value: np.ndarray | None) -> ast.Name:
        """The closure variable holding constants[key]; `None` marks a store weight."""
        var = self.constant_vars.get(key)
        if var is None:
            var = "c_" + re.sub(r"\W", "_", key)
            # (a variable of the function being written may already have that name: the
            # forward's own names are kept)
            while var in self.constant_vars.values() or var in self.scope.names.used:
                var += "_"
            self.scope.names.used.add(var)
            self.constant_vars[key] = var
            if value is None:
                self.weight_names.append(key)
            else:
                self.constants[key] = value
        return load(var)

    # ------------------------------------------------------------- blocks

    def emit_block(self, block: Block, out: list[ast.stmt], tail: Tail, on_yield: OnYield = None) -> list[ast.stmt]:
        start = len(out)
        ops = list(block.ops)
        for i, op in enumerate(ops):
            nxt = ops[i + 1] if i + 1 < len(ops) else None
            if isinstance(op, scf.IfOp) and nxt is not None and self.is_tail(nxt, tail):
                self.emit_tail_if(op, nxt, out, tail)
                break
            if is_terminator(op):
                self.emit_terminator(op, out, tail, on_yield)
                continue
            self.emit_op(op, out)
        if len(out) == start:
            out.append(ast.Pass())
        return out

    @staticmethod
    def is_tail(op: Operation, tail: Tail) -> bool:
        return tail is not None and isinstance(op, (func.ReturnOp, scf.YieldOp))

    def emit_terminator(self, op: Operation, out: list[ast.stmt], tail: Tail, on_yield: OnYield) -> None:
        values = [self.expr(v) for v in op.operands]
        if tail is not None:
            out.append(tail(values))
        elif on_yield is not None:
            on_yield(out, values)
        elif op.operands:
            raise CodegenError(f"{op.name} with results outside a region op")

    def emit_tail_if(self, op: scf.IfOp, terminator: Operation, out: list[ast.stmt], tail: Tail) -> None:
        """`scf.if` followed by the return: each branch returns on its own."""
        outer = [
            (r.index if isinstance(r.owner, scf.IfOp) and r.owner is op else None, r)
            for r in terminator.operands
        ]
        for v in terminator.operands:
            if not (isinstance(v.owner, scf.IfOp) and v.owner is op):
                self.expr(v)  # defined before the if: resolvable now

        def branch_tail(yielded: list[ast.expr]) -> ast.stmt:
            return tail([yielded[k] if k is not None else self.expr(v) for k, v in outer])

        test = self.expr(op.cond)
        then = self.emit_block(op.true_region.block, [], branch_tail)
        orelse = self.emit_block(op.false_region.block, [], branch_tail) if op.false_region.blocks else []
        out.append(ast.If(test, then, orelse))

    # --------------------------------------------------------------- ops

    def emit_op(self, op: Operation, out: list[ast.stmt]) -> None:
        emitter = _OP_EMITTERS.get(type(op))
        if emitter is not None:
            emitter(self, op, out)
            return
        info = op_info(op)
        if info.host is None:
            raise CodegenError(
                f"host op {t.op_name(op)} has no Python translation (only control flow, sub-DNN "
                "calls, scalar/list ops and computation-free tensor ops may stay in the host)"
            )
        value = instantiate(info.host, [self.expr(v) for v in op.operands], lambda: _result_dtype(op))
        if info.unpacks:
            out.append(unpack([self.bind_new(r) for r in op.results], value))
        elif info.host.is_operand:
            self.alias(op, value)  # a copy or a cast: tensors have value semantics
        else:
            self.assign(out, op, value)

    def emit_call(self, op: func.CallOp, out: list[ast.stmt]) -> None:
        callee = op.callee.root_reference.data
        args = [self.expr(v) for v in op.arguments]
        if callee in self.subdnns:
            if callee not in self.called_subdnns:
                self.called_subdnns.append(callee)
        elif callee in self.funcs:
            if callee not in self.helpers:
                self.helpers.append(callee)
        else:
            raise CodegenError(f"call of unknown function @{callee}")
        given = self.given_arguments(op) if callee in self.subdnns else ()
        for k in given:
            self.given_arguments_of_entry |= self.ownership(op.arguments[k]) or set()
        call = ast.Call(load(self.in_place_variant(callee, given) if given else callee), args, [])
        targets = [self.bind_new(r) for r in op.results]
        out.append(unpack(targets, call) if targets else ast.Expr(call))

    def given_arguments(self, op: func.CallOp) -> tuple[int, ...]:
        """Positions of the call's arguments whose buffers the sub-DNN may take over: arrays
        the runtime made that nothing else holds (`ownership`) and that nothing reads after
        this call: the call reads the value once, no other op reads it or a variable the host
        writes as it (`_same_expression`), and no loop lies between the call and where the
        value is defined (the loop would read it again)."""
        writable = self.writable.get(op.callee.root_reference.data, frozenset())
        return tuple(k for k, value in enumerate(op.arguments)
                     if k in writable and _only_reader(op, value) and not _loop_between(op, value)
                     and self.ownership(value) is not None)

    def ownership(self, value: SSAValue) -> set[int] | None:
        """None unless the runtime made `value`'s array and nothing but the variables the
        host writes as it holds it; else the entry arguments whose arrays it may be. Such a
        value is an argument in `Scope.owned` (a tensor state slot's value), a sub-DNN's
        result (a runner returns arrays of its own, or the argument given to it), an
        `scf.if` result each arm yields such a value to (read by that yield alone), or a
        loop's carry whose initial value and yielded value are such values, each read by
        the loop or the yield alone (a `while` carry as its condition forwards it).

        A carry that an iteration passes on unchanged (an arm yielding the loop's own block
        argument) leads back to the value being decided: it adds no array (by induction over
        the iterations, it holds what the initial and the other yielded values hold), and
        asking again would not end (fuzz seed 410039)."""
        if value in self._asked:
            return set()
        self._asked.add(value)
        try:
            return self._ownership(value)
        finally:
            self._asked.discard(value)

    def _ownership(self, value: SSAValue) -> set[int] | None:
        owner = value.owner
        if value in self.scope.owned:
            return {value.index}
        if isinstance(owner, func.CallOp):
            return set() if owner.callee.root_reference.data in self.subdnns else None
        if isinstance(owner, scf.IfOp):
            yields = [region.block.last_op for region in owner.regions if region.blocks]
            return self._yielded(yields, value.index) if len(yields) == 2 else None
        if isinstance(owner, scf.ForOp):  # a loop's result: its carry's last value
            return self._carried(owner, owner.iter_args[value.index], owner.body.block.last_op, value.index)
        if isinstance(owner, scf.WhileOp):
            return self._forwarded(owner, value.index)
        if not isinstance(owner, Block):
            return None
        loop, k = owner.parent_op(), value.index
        if isinstance(loop, scf.ForOp) and k > 0:  # (0: the induction variable)
            return self._carried(loop, loop.iter_args[k - 1], loop.body.block.last_op, k - 1)
        if isinstance(loop, scf.WhileOp) and owner is loop.after_region.block:
            return self._forwarded(loop, k)
        return None

    def _forwarded(self, loop: scf.WhileOp, k: int) -> set[int] | None:
        """A `while`'s k-th forwarded value (an after-region argument, a result): a carry as
        the condition forwards it, read by nothing else there."""
        condition = loop.before_region.block.last_op
        forwarded = condition.args[k]
        if forwarded.owner is not loop.before_region.block or not _only_reader(condition, forwarded):
            return None
        return self._carried(loop, loop.arguments[forwarded.index], loop.after_region.block.last_op, forwarded.index)

    def _carried(self, loop: Operation, initial: SSAValue, yield_op: Operation, k: int) -> set[int] | None:
        if not _only_reader(loop, initial) or _loop_between(loop, initial):
            return None
        before, after = self.ownership(initial), self._yielded([yield_op], k)
        return None if before is None or after is None else before | after

    def _yielded(self, yields: Sequence[Operation], k: int) -> set[int] | None:
        roots: set[int] = set()
        for yield_op in yields:
            if _raises(yield_op.parent_block()):
                continue  # (never reached: the arm raises first)
            value = yield_op.operands[k]
            found = self.ownership(value) if _only_reader(yield_op, value) else None
            if found is None:
                return None
            roots |= found
        return roots

    def in_place_variant(self, callee: str, given: tuple[int, ...]) -> str:
        for name, call in self.in_place_calls.items():
            if call == (callee, given):
                break
        else:
            name = self.scope.names.fresh(f"{callee}_in_place")
            self.in_place_calls[name] = (callee, given)
        return name

    def emit_if(self, op: scf.IfOp, out: list[ast.stmt]) -> None:
        results = [self.bind_new(r) for r in op.results]
        assigner = self.assigner(results)
        test = self.expr(op.cond)
        then = self.emit_block(op.true_region.block, [], None, assigner)
        orelse: list[ast.stmt] = []
        if op.false_region.blocks and (results or has_work(op.false_region.block)):
            orelse = self.emit_block(op.false_region.block, [], None, assigner)
        out.append(ast.If(test, then, orelse))

    def emit_for(self, op: scf.ForOp, out: list[ast.stmt]) -> None:
        results = [self.bind_new(r) for r in op.results]
        if results:
            out.append(assign(results, [self.expr(v) for v in op.iter_args]))
        body = op.body.block
        induction, *carried = body.args
        for arg, name in zip(carried, results):
            self.scope.values[arg] = load(name)
        self.carry_in_place(body, results, carried)
        target = store(self.bind_new(induction)) if induction.uses else store("_")
        bounds = [self.expr(op.lb), self.expr(op.ub)]
        step = self.expr(op.step)
        if not (isinstance(step, ast.Constant) and step.value == 1):
            bounds.append(step)
        loop_body = self.emit_block(body, [], None, self.assigner(results))
        out.append(ast.For(target, ast.Call(load("range"), bounds, []), loop_body, []))

    def emit_while(self, op: scf.WhileOp, out: list[ast.stmt]) -> None:
        before, after = op.before_region.block, op.after_region.block
        carried = [self.bind_new(a) for a in before.args]
        if carried:
            out.append(assign(carried, [self.expr(v) for v in op.arguments]))
        results = [self.bind_new(r) for r in op.results]
        for arg, name in zip(after.args, results):
            self.scope.values[arg] = load(name)
        # The after region cannot read the before region's values: nothing reads the
        # carries' variables there.
        self.carry_in_place(after, carried)
        condition = before.last_op
        assert isinstance(condition, scf.ConditionOp)
        loop_body: list[ast.stmt] = []
        for inner in list(before.ops)[:-1]:
            self.emit_op(inner, loop_body)
        forwarded = [self.expr(v) for v in condition.args]
        if results:
            loop_body.append(assign(results, forwarded))
        test = ast.UnaryOp(ast.Not(), self.expr(condition.condition))
        loop_body.append(ast.If(test, [ast.Break()], []))
        self.emit_block(after, loop_body, None, self.assigner(carried))
        out.append(ast.While(ast.Constant(True), loop_body, []))

    def carry_in_place(self, body: Block, names: Sequence[str], old: Sequence[SSAValue] = ()) -> None:
        """Let a value the loop body yields as carry k be defined straight into carry k's
        variable `names[k]` (`h = f(h)`), so that the yield copies nothing: when the body
        defines it by an op of its own and reads `old[k]`, the value the variable holds
        until then (or any value the host writes as the same expression), no later than
        that op; before a loop that defines it, which writes the variable at its start and
        on every iteration while its body may still read the old value."""
        yield_op = body.last_op
        assert yield_op is not None
        yielded = list(yield_op.operands)
        position = {o: i for i, o in enumerate(body.ops)}
        for k, (value, name) in enumerate(zip(yielded, names)):
            definer = value.owner
            if not isinstance(definer, Operation) or definer.parent_block() is not body:
                continue
            if yielded.count(value) > 1:
                continue
            loop = isinstance(definer, (scf.ForOp, scf.WhileOp))
            readers = [body.find_ancestor_op_in_block(use.operation) for v in (_same_expression(old[k]) if old else []) for use in v.uses]
            if all(r is not None and (position[r] < position[definer] or (r is definer and not loop)) for r in readers):
                self.scope.carried[value] = name

    def assigner(self, targets: list[str]) -> OnYield:
        def on_yield(out: list[ast.stmt], values: list[ast.expr]) -> None:
            pairs = [
                (target, value)
                for target, value in zip(targets, values)
                if not (isinstance(value, ast.Name) and value.id == target)
            ]
            if pairs:
                out.append(assign([p[0] for p in pairs], [p[1] for p in pairs]))

        return on_yield

    # ---------------------------------------------------------- functions

    def function(self, function: func.FuncOp, py_name: str, arg_names: Sequence[str | None],
                 owned: Sequence[int] = ()) -> ast.FunctionDef:
        """`owned`: positions of arguments whose buffers the runtime owns (`Scope.owned`)."""
        taken = [*self.subdnns, *self.funcs, *self.constant_vars.values(), *self.in_place_calls]
        args = function.body.block.args
        self.scope = Scope(Names(taken=taken), owned=frozenset(args[k] for k in owned))
        params = []
        for arg, hint in zip(function.body.block.args, arg_names):
            params.append(self.scope.names.fresh(hint))
            self.scope.values[arg] = load(params[-1])

        def return_all(values: list[ast.expr]) -> ast.stmt:
            return ast.Return(ast.Tuple(values, ast.Load()))

        body = self.emit_block(function.body.block, [], return_all)
        if owned:
            returned = function.body.block.last_op
            self.owned_results = [j for j, v in enumerate(returned.operands)
                                  if _readers(v) == [returned] and self.ownership(v) is not None]
        return function_def(py_name, params, body)


def _loop_between(op: Operation, value: SSAValue) -> bool:
    """Whether a loop nested where `value` is defined holds `op` (it runs `op` again)."""
    home = value.owner if isinstance(value.owner, Block) else value.owner.parent_block()
    block = op.parent_block()
    while block is not home:
        parent = block.parent_op() if block is not None else None
        if parent is None or isinstance(parent, (func.FuncOp, scf.ForOp, scf.WhileOp)):
            return True
        block = parent.parent_block()
    return False


def _only_reader(op: Operation, value: SSAValue) -> bool:
    """`op` reads `value`, and every other op that does is in another arm of an `scf.if`
    that holds `op` (gpt-fast's `generate`: the cache a prefill made is returned where the
    first token is the end token, and carried into the decode loop otherwise): whatever
    path a call takes, nothing else reads the value. (The callers rule out a loop between
    `value` and `op`, which could run the other arm after `op`.)"""
    readers = _readers(value)
    return op in readers and all(r is op or _exclusive(r, op) for r in readers)


def _exclusive(a: Operation, b: Operation) -> bool:
    """`a` and `b` are in different arms of one `scf.if`: no run executes both."""
    arms_b = _arms(b)
    return any(arms_b.get(if_op, region) is not region for if_op, region in _arms(a).items())


def _arms(op: Operation) -> dict[Operation, Region]:
    """The `scf.if`s that hold `op`, each with the arm (region) it is in."""
    arms: dict[Operation, Region] = {}
    region = op.parent_region()
    while region is not None and (parent := region.parent_op()) is not None:
        if isinstance(parent, scf.IfOp):
            arms[parent] = region
        region = parent.parent_region()
    return arms


def _raises(block: Block | None) -> bool:
    """The block raises before its terminator: a `dycl.error` at its top level (an arm the
    frontend could not compile for a size, `raise` in the model)."""
    return block is not None and any(isinstance(op, ErrorOp) for op in block.ops)


def _readers(value: SSAValue) -> list[Operation]:
    """The ops that read `value` or a variable the host writes as it (a cast's result): an
    op that only makes such a variable is not a reader itself."""
    same = _same_expression(value)
    members = set(same)
    return [use.operation for v in same for use in v.uses
            if not (use.operation.results and all(r in members for r in use.operation.results))]


def function_def(name: str, params: Sequence[str], body: list[ast.stmt]) -> ast.FunctionDef:
    arguments = ast.arguments(
        posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[], kw_defaults=[], defaults=[]
    )
    fields = {"decorator_list": [], "returns": None, "type_params": []}  # (type_params: 3.12+)
    return ast.FunctionDef(name, arguments, body, **{k: v for k, v in fields.items() if k in ast.FunctionDef._fields})


def _result_dtype(op: Operation) -> ast.expr:
    """`np.float32` & co. for the op's tensor result; None when it has no known dtype."""
    result_type = op.results[0].type
    if not isinstance(result_type, t.ValueTensorType):
        return ast.Constant(None)
    return ast.Attribute(load("np"), dtype_name(result_type.element_type), ast.Load())


def translates(op: Operation) -> bool:
    """Whether the host program can run `op`: an op with an emitter here, a terminator of a
    region codegen writes, or a torch op with a `host` expression in the op registry. The
    HCFG contract (`dycl.hcfg.contract_violations`) asks this of every host op."""
    return type(op) in _OP_EMITTERS or is_terminator(op) or op_info(op).host is not None


# ------------------------------------------------------------ op emitters


def _scalar_constant(gen: HostEmitter, op: Operation, out: list[ast.stmt]) -> None:
    gen.alias(op, literal(op.python_value))


def _arith_constant(gen: HostEmitter, op: arith.ConstantOp, out: list[ast.stmt]) -> None:
    attr = op.value
    if isinstance(attr, IntegerAttr):
        width = getattr(attr.type, "width", None)
        value = attr.value.data
        gen.alias(op, literal(value != 0 if width is not None and width.data == 1 else value))
    elif isinstance(attr, FloatAttr):
        gen.alias(op, literal(float(attr.value.data)))
    else:
        raise CodegenError(f"arith.constant: unsupported value {attr}")


def _error(gen: HostEmitter, op: ErrorOp, out: list[ast.stmt]) -> None:
    # `raise RuntimeError("...")`; `raise AssertionError("... {0} ...".format(int(n)))`, each
    # part as the Python value eager formats (dialects/dycl.py: `error_arguments`)
    kind = op.kind.data if op.kind is not None else "RuntimeError"
    if kind not in (*ERROR_KINDS, "RuntimeError"):
        raise CodegenError(f"dycl.error: unknown kind {kind!r}")
    arguments: list[ast.expr] = []
    if op.message is not None:
        message: ast.expr = ast.Constant(op.message.data)
        if op.parts:
            converted = []
            for part in op.parts:
                converter = SCALAR_CONVERTERS.get(str(part.type))
                if converter is None:
                    raise CodegenError(f"dycl.error: a message part of type {part.type}")
                converted.append(ast.Call(ast.Name(converter.__name__, ast.Load()), [gen.expr(part)], []))
            message = ast.Call(ast.Attribute(message, "format", ast.Load()), converted, [])
        arguments.append(message)
    out.append(ast.Raise(exc=ast.Call(ast.Name(kind, ast.Load()), arguments, []), cause=None))


def _numpy_argsort(gen: HostEmitter, op: NumpyArgsortOp, out: list[ast.stmt]) -> None:
    call = ast.Call(ast.Attribute(ast.Name("np", ast.Load()), "argsort", ast.Load()), [gen.expr(op.input)],
                    [ast.keyword("kind", ast.Constant(op.kind.data))])
    gen.assign(out, op, call)


def _param(gen: HostEmitter, op: ParamOp, out: list[ast.stmt]) -> None:
    # Weights normally stay in sub-DNNs; one that the host reads is shipped beside host.py.
    gen.alias(op, gen.constant(op.weight_name, None))


def _tensor_literal(gen: HostEmitter, op: t.ValueTensorLiteralOp, out: list[ast.stmt]) -> None:
    try:
        array = op.raw_array().astype(dtype_name(op.value.get_element_type()))
    except ValueError as err:
        raise CodegenError(str(err)) from None
    gen.alias(op, gen.constant(f"literal_{len(gen.constants)}", array))


def _same_value(gen: HostEmitter, op: Operation, out: list[ast.stmt]) -> None:
    gen.alias(op, gen.expr(op.operands[0]))


def _binary(operator: ast.operator):
    def emit(gen: HostEmitter, op: Operation, out: list[ast.stmt]) -> None:
        lhs, rhs = (gen.expr(v) for v in op.operands)
        gen.assign(out, op, ast.BinOp(lhs, operator, rhs))

    return emit


def _select(gen: HostEmitter, op: arith.SelectOp, out: list[ast.stmt]) -> None:
    condition, if_true, if_false = (gen.expr(v) for v in op.operands)
    gen.assign(out, op, ast.IfExp(condition, if_true, if_false))


_CMPI = {0: ast.Eq, 1: ast.NotEq, 2: ast.Lt, 3: ast.LtE, 4: ast.Gt, 5: ast.GtE,
         6: ast.Lt, 7: ast.LtE, 8: ast.Gt, 9: ast.GtE}


def _cmpi(gen: HostEmitter, op: arith.CmpiOp, out: list[ast.stmt]) -> None:
    comparison = _CMPI[op.predicate.value.data]()
    gen.assign(out, op, ast.Compare(gen.expr(op.lhs), [comparison], [gen.expr(op.rhs)]))


_OP_EMITTERS: dict[type[Operation], Callable[[HostEmitter, Operation, list[ast.stmt]], None]] = {
    func.CallOp: HostEmitter.emit_call,
    scf.IfOp: HostEmitter.emit_if,
    scf.ForOp: HostEmitter.emit_for,
    scf.WhileOp: HostEmitter.emit_while,
    arith.ConstantOp: _arith_constant,
    **dict.fromkeys(_CASTS, _same_value),
    arith.AddiOp: _binary(ast.Add()),
    arith.SubiOp: _binary(ast.Sub()),
    arith.MuliOp: _binary(ast.Mult()),
    arith.AndIOp: _binary(ast.BitAnd()),
    arith.OrIOp: _binary(ast.BitOr()),
    arith.XOrIOp: _binary(ast.BitXor()),
    arith.SelectOp: _select,
    arith.CmpiOp: _cmpi,
    **{
        constant: _scalar_constant
        for constant in (
            t.ConstantIntOp, t.ConstantFloatOp, t.ConstantBoolOp, t.ConstantNoneOp,
            t.ConstantStrOp, t.ConstantDeviceOp,
        )
    },
    ParamOp: _param,
    ErrorOp: _error,
    NumpyArgsortOp: _numpy_argsort,
    t.ValueTensorLiteralOp: _tensor_literal,
}
