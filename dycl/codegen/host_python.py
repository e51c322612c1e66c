"""Host func of an HCFG -> readable Python source that needs numpy and dycl.runtime only.

`scf.if` becomes `if`, `scf.for` a `for ... in range`, `scf.while` a `while True` with a
`break`; calls of sub-DNNs call the compiled sub-DNN; hoisted computation-free ops become
numpy; host ints, bools and lists stay Python values. An `scf.if` whose results go
straight to the function's return turns into early `return`s, as the original program
was written.

The generated module defines `bind(subdnns, constants) -> forward`: the sub-DNN callables
and host constants become closure variables, so each call looks them up in one step.
"""

from __future__ import annotations

import builtins
import keyword
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import (
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    UnregisteredOp,
)
from xdsl.ir import Block, Operation, SSAValue

from dycl.backends.subdnn import is_subdnn
from dycl.dialects import torch as t
from dycl.dialects.dycl import ParamOp
from dycl.interpreter import literal_value


class CodegenError(ValueError):
    """A host op that has no Python/numpy translation."""


@dataclass
class HostProgram:
    source: str  # the text of host.py
    entry: str  # the function `bind` returns
    constants: dict[str, np.ndarray]  # constants["key"] the host reads: tensor literals
    weight_names: list[str]  # weights the host reads directly (also constants["name"])
    subdnn_names: list[str]  # sub-DNNs the host calls, in first-call order
    arg_names: list[str]


_RESERVED = frozenset({"np", "rt", "bind", "subdnns", "constants"}) | frozenset(dir(builtins))


class _Names:
    """Python identifiers for SSA values: the IR's name hint when usable, else v<n>."""

    def __init__(self, taken: Sequence[str] = ()):
        self.used: set[str] = set(_RESERVED) | set(taken)
        self.counter = 0

    def fresh(self, hint: str | None = None) -> str:
        if hint:
            hint = re.sub(r"\W", "_", hint)
            if hint[0].isdigit():
                hint = f"v{hint}"
        if hint and not keyword.iskeyword(hint) and hint not in self.used:
            self.used.add(hint)
            return hint
        while True:
            name = f"v{self.counter}"
            self.counter += 1
            if name not in self.used:
                self.used.add(name)
                return name


@dataclass
class _Function:
    """Emission state of one Python function."""

    names: _Names
    exprs: dict[SSAValue, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


Tail = Callable[[list[str]], str] | None  # terminator operands -> `return ...` line


class HostCodegen:
    def __init__(self, module: ModuleOp):
        self.module = module
        self.funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
        self.subdnns = [name for name, op in self.funcs.items() if is_subdnn(op)]
        self.constants: dict[str, np.ndarray] = {}
        self.weight_names: list[str] = []
        self.constant_vars: dict[str, str] = {}  # constant key -> closure variable
        self.helpers: list[str] = []  # non-sub-DNN funcs the host calls, emitted as defs
        self.called_subdnns: list[str] = []
        self.fn: _Function

    # ---------------------------------------------------------------- values

    def expr(self, value: SSAValue) -> str:
        try:
            return self.fn.exprs[value]
        except KeyError:
            raise CodegenError(f"value {value} used before it is defined") from None

    def bind_new(self, value: SSAValue) -> str:
        name = self.fn.names.fresh(value.name_hint)
        self.fn.exprs[value] = name
        return name

    def assign(self, indent: int, op: Operation, expression: str) -> None:
        """`result = expression` for a one-result op."""
        (result,) = op.results
        self.fn.emit(indent, f"{self.bind_new(result)} = {expression}")

    def alias(self, op: Operation, expression: str) -> None:
        """The result *is* this expression (a literal, or an operand seen anew)."""
        self.fn.exprs[op.results[0]] = expression

    def constant(self, key: str, value: np.ndarray | None) -> str:
        """The closure variable holding constants[key]; `None` marks a store weight."""
        var = self.constant_vars.get(key)
        if var is None:
            var = "c_" + re.sub(r"\W", "_", key)
            while var in self.constant_vars.values():
                var += "_"
            self.constant_vars[key] = var
            if value is None:
                self.weight_names.append(key)
            else:
                self.constants[key] = value
        return var

    # ------------------------------------------------------------- blocks

    def emit_block(self, block: Block, indent: int, tail: Tail, on_yield=None) -> None:
        start = len(self.fn.lines)
        ops = list(block.ops)
        for i, op in enumerate(ops):
            nxt = ops[i + 1] if i + 1 < len(ops) else None
            if isinstance(op, scf.IfOp) and nxt is not None and self._is_tail(nxt, tail):
                self.emit_tail_if(op, nxt, indent, tail)
                break
            if _is_terminator(op):
                self.emit_terminator(op, indent, tail, on_yield)
                continue
            self.emit_op(op, indent)
        if len(self.fn.lines) == start:
            self.fn.emit(indent, "pass")

    def _is_tail(self, op: Operation, tail: Tail) -> bool:
        return tail is not None and isinstance(op, (func.ReturnOp, scf.YieldOp))

    def emit_terminator(self, op: Operation, indent: int, tail: Tail, on_yield) -> None:
        values = [self.expr(v) for v in op.operands]
        if tail is not None:
            self.fn.emit(indent, tail(values))
        elif on_yield is not None:
            on_yield(indent, values)
        elif op.operands:
            raise CodegenError(f"{op.name} with results outside a region op")

    def emit_tail_if(self, op: scf.IfOp, terminator: Operation, indent: int, tail: Tail) -> None:
        """`scf.if` followed by the return: each branch returns on its own."""
        outer = [
            (r.index if isinstance(r.owner, scf.IfOp) and r.owner is op else None, r)
            for r in terminator.operands
        ]
        for v in terminator.operands:
            if not (isinstance(v.owner, scf.IfOp) and v.owner is op):
                self.expr(v)  # defined before the if: resolvable now

        def branch_tail(yielded: list[str]) -> str:
            return tail([yielded[k] if k is not None else self.expr(v) for k, v in outer])

        self.fn.emit(indent, f"if {self.expr(op.cond)}:")
        self.emit_block(op.true_region.block, indent + 1, branch_tail)
        if op.false_region.blocks:
            self.fn.emit(indent, "else:")
            self.emit_block(op.false_region.block, indent + 1, branch_tail)

    # --------------------------------------------------------------- ops

    def emit_op(self, op: Operation, indent: int) -> None:
        handler = _OP_EMITTERS.get(type(op))
        if handler is not None:
            handler(self, op, indent)
            return
        if isinstance(op, UnregisteredOp):
            name = op.op_name.data
            emitter = _NAMED_EMITTERS.get(name) or _scalar_binary(name)
            if emitter is not None:
                emitter(self, op, indent)
                return
            raise CodegenError(
                f"host op {name} has no Python translation (only control flow, sub-DNN calls, "
                "scalar/list ops and computation-free tensor ops may stay in the host)"
            )
        raise CodegenError(f"host op {op.name} has no Python translation")

    def emit_call(self, op: func.CallOp, indent: int) -> None:
        callee = op.callee.root_reference.data
        args = ", ".join(self.expr(v) for v in op.arguments)
        if callee in self.subdnns:
            if callee not in self.called_subdnns:
                self.called_subdnns.append(callee)
        elif callee in self.funcs:
            if callee not in self.helpers:
                self.helpers.append(callee)
        else:
            raise CodegenError(f"call of unknown function @{callee}")
        targets = [self.bind_new(r) for r in op.results]
        if not targets:
            self.fn.emit(indent, f"{callee}({args})")
        else:
            self.fn.emit(indent, f"[{', '.join(targets)}] = {callee}({args})")

    def emit_if(self, op: scf.IfOp, indent: int) -> None:
        results = [self.bind_new(r) for r in op.results]
        assign = _assigner(self, results)
        self.fn.emit(indent, f"if {self.expr(op.cond)}:")
        self.emit_block(op.true_region.block, indent + 1, None, assign)
        if op.false_region.blocks and (results or _has_work(op.false_region.block)):
            self.fn.emit(indent, "else:")
            self.emit_block(op.false_region.block, indent + 1, None, assign)

    def emit_for(self, op: scf.ForOp, indent: int) -> None:
        results = [self.bind_new(r) for r in op.results]
        if results:
            inits = [self.expr(v) for v in op.iter_args]
            self.fn.emit(indent, f"{', '.join(results)} = {', '.join(inits)}")
        body = op.body.block
        induction, *carried = body.args
        for arg, name in zip(carried, results):
            self.fn.exprs[arg] = name
        iv = self.bind_new(induction) if induction.uses else "_"
        bounds = [self.expr(op.lb), self.expr(op.ub)]
        step = self.expr(op.step)
        if step != "1":
            bounds.append(step)
        self.fn.emit(indent, f"for {iv} in range({', '.join(bounds)}):")
        self.emit_block(body, indent + 1, None, _assigner(self, results))

    def emit_while(self, op: scf.WhileOp, indent: int) -> None:
        before, after = op.before_region.block, op.after_region.block
        carried = [self.bind_new(a) for a in before.args]
        if carried:
            inits = [self.expr(v) for v in op.arguments]
            self.fn.emit(indent, f"{', '.join(carried)} = {', '.join(inits)}")
        results = [self.bind_new(r) for r in op.results]
        for arg, name in zip(after.args, results):
            self.fn.exprs[arg] = name
        self.fn.emit(indent, "while True:")
        condition = before.last_op
        assert isinstance(condition, scf.ConditionOp)
        for inner in list(before.ops)[:-1]:
            self.emit_op(inner, indent + 1)
        forwarded = [self.expr(v) for v in condition.args]
        if results:
            self.fn.emit(indent + 1, f"{', '.join(results)} = {', '.join(forwarded)}")
        self.fn.emit(indent + 1, f"if not {self.expr(condition.condition)}:")
        self.fn.emit(indent + 2, "break")
        self.emit_block(after, indent + 1, None, _assigner(self, carried))

    # ---------------------------------------------------------- functions

    def function_source(self, function: func.FuncOp, py_name: str, arg_names: Sequence[str]) -> list[str]:
        self.fn = _Function(_Names(taken=[*self.subdnns, *self.funcs, *self.constant_vars.values()]))
        params = []
        for arg, hint in zip(function.body.block.args, arg_names):
            params.append(self.fn.names.fresh(hint))
            self.fn.exprs[arg] = params[-1]
        self.fn.emit(1, f"def {py_name}({', '.join(params)}):")

        def return_line(values: list[str]) -> str:
            return f"return ({', '.join(values)}{',' if len(values) == 1 else ''})"

        self.emit_block(function.body.block, 2, return_line)
        return self.fn.lines


def _is_terminator(op: Operation) -> bool:
    return isinstance(op, (func.ReturnOp, scf.YieldOp, scf.ConditionOp))


def _has_work(block: Block) -> bool:
    return any(not _is_terminator(op) for op in block.ops)


def _assigner(gen: HostCodegen, targets: list[str]):
    def assign(indent: int, values: list[str]) -> None:
        pairs = [(t_, v) for t_, v in zip(targets, values) if t_ != v]
        if pairs:
            lhs = ", ".join(p[0] for p in pairs)
            rhs = ", ".join(p[1] for p in pairs)
            gen.fn.emit(indent, f"{lhs} = {rhs}")

    return assign


# ------------------------------------------------------------ op tables


def _literal(op: Operation) -> str:
    attr = op.value
    if isinstance(op, t.ConstantBoolOp):
        return repr(op.bool_value)
    if isinstance(attr, IntegerAttr):
        return repr(attr.value.data)
    if isinstance(attr, FloatAttr):
        return repr(float(attr.value.data))
    if isinstance(attr, StringAttr):
        return repr(attr.data)
    raise CodegenError(f"{op.name}: unsupported constant {attr}")


def _arith_constant(gen: HostCodegen, op: arith.ConstantOp, indent: int) -> None:
    attr = op.value
    if isinstance(attr, IntegerAttr):
        width = getattr(attr.type, "width", None)
        value = attr.value.data
        gen.alias(op, repr(value != 0) if width is not None and width.data == 1 else repr(value))
    elif isinstance(attr, FloatAttr):
        gen.alias(op, repr(float(attr.value.data)))
    else:
        raise CodegenError(f"arith.constant: unsupported value {attr}")


def _param(gen: HostCodegen, op: ParamOp, indent: int) -> None:
    # Weights normally stay in sub-DNNs; one that the host reads is shipped beside host.py.
    gen.alias(op, gen.constant(op.weight_name, None))


def _tensor_literal(gen: HostCodegen, op: t.ValueTensorLiteralOp, indent: int) -> None:
    key = f"literal_{len(gen.constants)}"
    gen.alias(op, gen.constant(key, literal_value(op.value).numpy()))


def _identity(gen: HostCodegen, op: Operation, indent: int) -> None:
    gen.alias(op, gen.expr(op.operands[0]))


def _template(pattern: str):
    """An emitter writing `result = pattern.format(*operands)`."""

    def emit(gen: HostCodegen, op: Operation, indent: int) -> None:
        gen.assign(indent, op, pattern.format(*(gen.expr(v) for v in op.operands)))

    return emit


def _list_construct(gen: HostCodegen, op: Operation, indent: int) -> None:
    gen.assign(indent, op, "[" + ", ".join(gen.expr(v) for v in op.operands) + "]")


def _unpack(gen: HostCodegen, op: Operation, indent: int) -> None:
    targets = [gen.bind_new(r) for r in op.results]
    gen.fn.emit(indent, f"[{', '.join(targets)}] = {gen.expr(op.operands[0])}")


def _tuple(gen: HostCodegen, op: Operation, indent: int) -> None:
    values = [gen.expr(v) for v in op.operands]
    gen.assign(indent, op, f"({', '.join(values)}{',' if len(values) == 1 else ''})")


def _scalar_to_tensor(gen: HostCodegen, op: Operation, indent: int) -> None:
    """A host scalar becoming a 0-d tensor (a sub-DNN argument): dtype from the result type."""
    from dycl.dialects.dtypes import dtype_name

    result_type = op.results[0].type
    dtype = dtype_name(result_type.element_type) if isinstance(result_type, t.ValueTensorType) else None
    value = gen.expr(op.operands[0])
    gen.assign(indent, op, f"np.array({value}, dtype=np.{dtype})" if dtype else f"np.array({value})")


_CMPI = {0: "==", 1: "!=", 2: "<", 3: "<=", 4: ">", 5: ">=", 6: "<", 7: "<=", 8: ">", 9: ">="}


def _cmpi(gen: HostCodegen, op: arith.CmpiOp, indent: int) -> None:
    symbol = _CMPI[op.predicate.value.data]
    gen.assign(indent, op, f"{gen.expr(op.lhs)} {symbol} {gen.expr(op.rhs)}")


_OP_EMITTERS: dict[type[Operation], Callable[[HostCodegen, Operation, int], None]] = {
    func.CallOp: HostCodegen.emit_call,
    scf.IfOp: HostCodegen.emit_if,
    scf.ForOp: HostCodegen.emit_for,
    scf.WhileOp: HostCodegen.emit_while,
    arith.ConstantOp: _arith_constant,
    arith.IndexCastOp: _identity,
    arith.ExtUIOp: _identity,
    arith.ExtSIOp: _identity,
    arith.TruncIOp: _identity,
    arith.AddiOp: _template("{0} + {1}"),
    arith.SubiOp: _template("{0} - {1}"),
    arith.MuliOp: _template("{0} * {1}"),
    arith.AndIOp: _template("{0} & {1}"),
    arith.OrIOp: _template("{0} | {1}"),
    arith.XOrIOp: _template("{0} ^ {1}"),
    arith.SelectOp: _template("{1} if {0} else {2}"),
    arith.CmpiOp: _cmpi,
    t.ConstantIntOp: lambda g, op, i: g.alias(op, _literal(op)),
    t.ConstantFloatOp: lambda g, op, i: g.alias(op, _literal(op)),
    t.ConstantBoolOp: lambda g, op, i: g.alias(op, _literal(op)),
    t.ConstantStrOp: lambda g, op, i: g.alias(op, _literal(op)),
    t.ConstantDeviceOp: lambda g, op, i: g.alias(op, _literal(op)),
    t.ConstantNoneOp: lambda g, op, i: g.alias(op, "None"),
    t.ListConstructOp: _list_construct,
    t.BoolTensorOp: _template("bool({0})"),
    t.TensorStaticInfoCastOp: _identity,
    t.ToI1Op: _identity,
    t.FromI1Op: _identity,
    t.ToI64Op: _identity,
    t.FromI64Op: _identity,
    ParamOp: _param,
    t.ValueTensorLiteralOp: _tensor_literal,
}

_NAMED_EMITTERS: dict[str, Callable[[HostCodegen, Operation, int], None]] = {
    # host lists and scalars (semantics: dycl.dialects.host_ops)
    "torch.aten.len.t": _template("len({0})"),
    "torch.aten.__getitem__.t": _template("{0}[{1}]"),
    "torch.aten.append.t": _template("[*{0}, {1}]"),
    "torch.aten.neg.int": _template("-{0}"),
    "torch.aten.neg.float": _template("-{0}"),
    "torch.aten.__not__": _template("not {0}"),
    "torch.aten.Bool.int": _template("bool({0})"),
    "torch.aten.Bool.float": _template("bool({0})"),
    "torch.aten.Int.bool": _template("int({0})"),
    "torch.aten.Int.float": _template("int({0})"),
    "torch.aten.Int.Tensor": _template("int({0}.item())"),
    "torch.aten.Float.Tensor": _template("float({0}.item())"),
    "torch.aten.Float.Scalar": _template("float({0})"),
    "torch.aten.item": _template("{0}.item()"),
    "torch.prim.max.int": _template("max({0}, {1})"),
    "torch.prim.min.int": _template("min({0}, {1})"),
    "torch.prim.ListUnpack": _unpack,
    "torch.prim.TupleUnpack": _unpack,
    "torch.prim.TupleConstruct": _tuple,
    "torch.prim.NumToTensor.Scalar": _scalar_to_tensor,
    "torch.aten.tensor.int": _scalar_to_tensor,
    "torch.aten.tensor.float": _scalar_to_tensor,
    "torch.aten.tensor.bool": _scalar_to_tensor,
    # computation-free tensor ops (hoisted by dycl-hoist-free) on numpy
    "torch.aten.view": _template("{0}.reshape({1})"),
    "torch.aten.reshape": _template("{0}.reshape({1})"),
    "torch.aten._unsafe_view": _template("{0}.reshape({1})"),
    "torch.aten.flatten.using_ints": _template("rt.flatten({0}, {1}, {2})"),
    "torch.aten.unflatten.int": _template("rt.unflatten({0}, {1}, {2})"),
    "torch.aten.squeeze": _template("np.squeeze({0})"),
    "torch.aten.squeeze.dim": _template("rt.squeeze_dim({0}, {1})"),
    "torch.aten.squeeze.dims": _template("rt.squeeze_dims({0}, {1})"),
    "torch.aten.unsqueeze": _template("np.expand_dims({0}, {1})"),
    "torch.aten.permute": _template("{0}.transpose({1})"),
    "torch.aten.transpose.int": _template("{0}.swapaxes({1}, {2})"),
    "torch.aten.t": _template("{0}.T"),
    "torch.aten.expand": _template("rt.expand({0}, {1})"),
    "torch.aten.select.int": _template("rt.select({0}, {1}, {2})"),
    "torch.aten.slice.Tensor": _template("rt.slice_tensor({0}, {1}, {2}, {3}, {4})"),
    # stores at a runtime int index (a tensor op reading a host int stays in the host)
    "torch.aten.select_scatter": _template("rt.select_scatter({0}, {1}, {2}, {3})"),
    "torch.aten.slice_scatter": _template("rt.slice_scatter({0}, {1}, {2}, {3}, {4}, {5})"),
    "torch.aten.stack": _template("rt.stack({0}, {1})"),
    "torch.aten.cat": _template("rt.cat({0}, {1})"),
    "torch.aten.split.Tensor": _template("rt.split({0}, {1}, {2})"),
    "torch.aten.split_with_sizes": _template("rt.split_with_sizes({0}, {1}, {2})"),
    "torch.aten.chunk": _template("rt.chunk({0}, {1}, {2})"),
    "torch.aten.unbind.int": _template("rt.unbind({0}, {1})"),
    "torch.aten.size.int": _template("{0}.shape[{1}]"),
    "torch.aten.dim": _template("{0}.ndim"),
    "torch.aten.numel": _template("{0}.size"),
    # value semantics: nobody mutates a host tensor, so a copy is the value itself
    "torch.aten.clone": _identity,
    "torch.aten.contiguous": _identity,
    "torch.aten.detach": _identity,
    "torch.aten.alias": _identity,
    "torch.aten.lift_fresh_copy": _identity,
}

_SCALAR_BINARY = {
    "add": "{0} + {1}", "sub": "{0} - {1}", "mul": "{0} * {1}", "div": "{0} / {1}",
    "floordiv": "{0} // {1}", "remainder": "{0} % {1}",
    "eq": "{0} == {1}", "ne": "{0} != {1}", "lt": "{0} < {1}", "le": "{0} <= {1}",
    "gt": "{0} > {1}", "ge": "{0} >= {1}",
    "__and__": "{0} & {1}", "__or__": "{0} | {1}", "__is__": "{0} is {1}", "__isnot__": "{0} is not {1}",
}


def _scalar_binary(name: str):
    """`torch.aten.<op>.int|float|bool|...` on host scalars (as in dycl.dialects.host_ops)."""
    parts = name.split(".")
    if len(parts) == 4 and parts[3] in ("int", "float", "bool", "float_int", "int_float"):
        pattern = _SCALAR_BINARY.get(parts[2])
        return _template(pattern) if pattern else None
    return None


# ---------------------------------------------------------------- module


_HEADER = '''\
"""Host program of `{entry}`, generated by DyCL from the HCFG.

Control flow runs here in Python; tensor work runs in the compiled sub-DNNs
({subdnns}). Needs numpy and dycl.runtime only.
"""
import numpy as np

from dycl.runtime import host_support as rt


def bind(subdnns, constants):
    """`{entry}` with the compiled sub-DNNs and host constants bound as closure variables."""
'''


def generate_host(module: ModuleOp, entry: str = "forward") -> HostProgram:
    gen = HostCodegen(module)
    if entry not in gen.funcs:
        raise CodegenError(f"no function @{entry} in the module")
    function = gen.funcs[entry]
    arg_names = _input_names(function)
    body = gen.function_source(function, entry, arg_names)
    helper_bodies = []
    emitted = set()
    while len(emitted) < len(gen.helpers):  # helpers may call helpers
        for name in list(gen.helpers):
            if name not in emitted:
                emitted.add(name)
                helper = gen.funcs[name]
                hints = [a.name_hint for a in helper.body.block.args]
                helper_bodies.append(gen.function_source(helper, name, hints))
    called = gen.called_subdnns
    listed = ", ".join(called) if len(called) <= 6 else f"{len(called)} of them: {called[0]} ... {called[-1]}"
    lines = [_HEADER.format(entry=entry, subdnns=listed or "none")]
    for name in gen.called_subdnns:
        lines.append(f'    {name} = subdnns["{name}"]')
    for key, var in gen.constant_vars.items():
        lines.append(f"    {var} = constants[{key!r}]")
    for helper_lines in helper_bodies:
        lines.append("")
        lines.extend(helper_lines)
    lines.append("")
    lines.extend(body)
    lines.append("")
    lines.append(f"    return {entry}")
    source = "\n".join(lines) + "\n"
    compile(source, "host.py", "exec")  # a codegen bug surfaces here, not at deploy time
    return HostProgram(source, entry, gen.constants, gen.weight_names, gen.called_subdnns, arg_names)


def _input_names(function: func.FuncOp) -> list[str]:
    from xdsl.dialects.builtin import ArrayAttr

    attr = function.attributes.get("dycl.input_names")
    n = len(function.body.block.args)
    if isinstance(attr, ArrayAttr) and len(attr.data) == n:
        return [a.data for a in attr.data]
    return [a.name_hint or f"arg{i}" for i, a in enumerate(function.body.block.args)]
