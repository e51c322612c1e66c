"""Rebuild a sub-DNN func as a `torch.fx.GraphModule` that the exporters take.

Every torch-dialect op `torch.aten.<name>.<overload>` becomes a call of
`torch.ops.aten.<name>.<overload>`, resolved by `dycl.dialects.torch_ops.TorchOpCall`
(schema-driven: keyword-only arguments become keywords); list and tuple ops stay Python
structure. Constants become Python literals, `dycl.param` weights become buffers of the
root module, so the exported program carries them as initializers / bound constants.

An `scf.if` kept inside the sub-DNN (`dycl.keep`) becomes `torch.ops.higher_order.cond` in
the form torch.export itself produces, which both exporters take (docs/keep-branches.md):
each arm is a `GraphModule` of placeholders and ops only, and the cond passes both arms the
same operands, namely the tensors the arms read from outside and the weights they use
(`get_attr`ed in the root graph: a `get_attr` inside an arm fails to export). An operand
that is a view, and an arm output that is an input, a view, or yielded twice, is a
contiguous copy (torch.cond rejects aliasing and arms whose strides differ). The
condition, read with `Bool.Tensor`, becomes a 0-d bool tensor.
"""

from __future__ import annotations

import itertools
import math
import operator
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
import torch
import torch.fx
from torch.export import Dim
from xdsl.dialects import func, scf
from xdsl.dialects.builtin import UnregisteredOp
from xdsl.ir import Block, Operation, SSAValue

from dycl.backends.errors import BackendError
from dycl.backends.subdnn import SubDNN, only_func
from dycl.dialects import torch as t
from dycl.dialects.dtypes import dtype_name
from dycl.dialects.dycl import ParamOp
from dycl.dialects.torch_ops import SIZE_ARITHMETIC, SIZE_QUERY, TorchOpCall, literal_tensor, op_info
from dycl.ir import parse_module

# torch-mlir writes enum arguments as their integer codes (c10 ScalarType, MemoryFormat).
_SCALAR_TYPES = {
    0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32, 4: torch.int64,
    5: torch.float16, 6: torch.float32, 7: torch.float64, 11: torch.bool, 15: torch.bfloat16,
}
_MEMORY_FORMATS = {
    0: torch.contiguous_format, 1: torch.preserve_format,
    2: torch.channels_last, 3: torch.channels_last_3d,
}
_LAYOUTS = {0: torch.strided}
_ENUM_DECODERS = {"ScalarType": _SCALAR_TYPES, "MemoryFormat": _MEMORY_FORMATS, "Layout": _LAYOUTS}

# The Python operator of each size op a sub-DNN may compute (`SIZE_ARITHMETIC`).
_SIZE_OPERATORS = {
    "torch.aten.add.int": operator.add, "torch.aten.sub.int": operator.sub,
    "torch.aten.mul.int": operator.mul, "torch.aten.neg.int": operator.neg,
}
assert _SIZE_OPERATORS.keys() == SIZE_ARITHMETIC


class _Builder:
    """Walks one func body once, mapping each SSA value to an fx node or a literal."""

    def __init__(self, subdnn: SubDNN, weights: Mapping[str, Any], backend: str, parent: _Builder | None = None):
        self.subdnn = subdnn
        self.weights = weights
        self.backend = backend
        self.root = torch.nn.Module()  # the owner of this graph's get_attr targets
        self.graph = torch.fx.Graph()
        self.values: dict[SSAValue, Any] = {}
        self.parent = parent
        # Weights are buffers of the top builder's root only; names are unique throughout.
        self.buffer_names: dict[str, str] = {} if parent is None else parent.buffer_names
        self.arm_names = itertools.count() if parent is None else parent.arm_names
        self.attr_nodes: dict[str, torch.fx.Node] = {}

    def fail(self, reason: str, op: str | None = None) -> BackendError:
        return BackendError(self.backend, self.subdnn.name, reason, op)

    # -------------------------------------------------------------------- handlers

    def literal(self, op: Operation, value: Any) -> None:
        self.values[op.results[0]] = value

    def param(self, op: ParamOp) -> None:
        if op.result in self.values:  # inside an arm: an operand of the cond
            return
        assert self.parent is None, "an arm's weights are get_attr'd in the root graph"
        name = op.weight_name
        if name not in self.weights:
            raise self.fail(f"no weight named '{name}' in the weight store")
        attr = self.buffer_names.get(name)
        if attr is None:
            attr = self.buffer_names[name] = f"weight_{len(self.buffer_names)}"
            self.root.register_buffer(attr, _as_tensor(self.weights[name]))
        # One get_attr node per weight: a cond given two nodes of one buffer fails to export.
        node = self.attr_nodes.get(attr)
        if node is None:
            node = self.attr_nodes[attr] = self.graph.get_attr(attr)
        self.values[op.result] = node

    def tensor_literal(self, op: t.ValueTensorLiteralOp) -> None:
        if op.result in self.values:  # inside an arm: an operand of the cond
            return
        assert self.parent is None, "an arm's literals are get_attr'd in the root graph"
        attr = f"literal_{len(self.buffer_names)}"
        self.buffer_names[attr] = attr
        self.root.register_buffer(attr, literal_tensor(op))
        self.values[op.result] = self.graph.get_attr(attr)

    def list_construct(self, op: t.ListConstructOp) -> None:
        self.values[op.result] = [self.values[v] for v in op.elements]

    def identity(self, op: Operation) -> None:
        self.values[op.results[0]] = self.values[op.operands[0]]

    def unpack(self, op: UnregisteredOp) -> None:
        """An unpack of a list-valued op (a split) or of a ListConstruct."""
        source = self.values[op.operands[0]]
        for i, result in enumerate(op.results):
            if isinstance(source, (list, tuple)):
                self.values[result] = source[i]
            else:
                self.values[result] = self.graph.call_function(operator.getitem, (source, i))

    def torch_op(self, op: UnregisteredOp) -> None:
        name = op.op_name.data
        info = op_info(name)
        if info.unpacks:
            self.unpack(op)
            return
        if name == SIZE_QUERY or name in SIZE_ARITHMETIC:
            self.size(op)
            return
        if (python := info.python) is not None:
            # A host list/tuple op is Python structure around the graph's nodes.
            self.values[op.results[0]] = python(*(self.values[v] for v in op.operands))
            return
        try:
            call = TorchOpCall(name)
        except (AttributeError, RuntimeError, ValueError) as err:
            raise self.fail(f"no torch op of that name ({err})", name) from None
        args = [self.values[v] for v in op.operands]
        if name == "torch.prim.NumToTensor.Scalar" and isinstance(args[0], torch.fx.Node):
            # (`len(rows) * h` of a runtime size: export specialises the size NumToTensor
            # reads, and fails on a dynamic dim; `scalar_tensor` keeps it symbolic)
            dtype = getattr(torch, dtype_name(op.results[0].type.element_type))
            self.values[op.results[0]] = self.graph.call_function(torch.ops.aten.scalar_tensor.default, (args[0],),
                                                                  {"dtype": dtype})
            return
        if info.empty_dim_list_means_all and args[1] == []:
            # torch.onnx cannot convert a reduction over `dim=[]` (= all dims); spell them out.
            args[1] = list(range(op.operands[0].type.rank))
        schema_args = call.fn._schema.arguments
        args = [_decode_enum(arg, a) for arg, a in zip(schema_args, args)] + args[len(schema_args):]
        if name == "torch.aten.slice.Tensor":
            args = self._slice_bounds(op, args)
        if name in ("torch.aten.squeeze.dim", "torch.aten.squeeze.dims") and not _squeezes_anything(op, args):
            # (a squeeze of dims of a static size other than 1 is the tensor itself; torch.onnx
            # writes a Squeeze for it when another dim is a runtime dim, which ONNX Runtime rejects)
            self.values[op.results[0]] = args[0]
            return
        on_bools = bool(info.bools_as_uint8) and len(op.results) == 1 and _is_bool_tensor(op.results[0])
        if on_bools:  # (ONNX has no bool `Add`, ONNX Runtime no bool `Where`)
            args = [self._cast(a, torch.uint8) if k in info.bools_as_uint8 and _is_bool_tensor(v) else a
                    for k, (v, a) in enumerate(zip(op.operands, args))]
        positional = tuple(args[: call.n_positional])
        keywords = dict(zip(call.kwarg_names, args[call.n_positional :]))
        node = self.graph.call_function(call.fn, positional, keywords)
        if on_bools:
            node = self._cast(node, torch.bool)
        if name == "torch.aten.slice.Tensor" and _cut_to_a_static_shape(op):
            # (`seq[:, -4:]` of a sequence the host holds at least 4 long: export's length
            # `n - max(0, n - 4)` is one TVM cannot match with 4; a reshape states the IR's)
            node = self.graph.call_function(torch.ops.aten.reshape.default, (node, list(op.results[0].type.shape)))
        if len(op.results) == 1:
            self.values[op.results[0]] = node
        else:
            for i, result in enumerate(op.results):
                self.values[result] = self.graph.call_function(operator.getitem, (node, i))

    def size(self, op: UnregisteredOp) -> None:
        """A size the sub-DNN computes (dycl-outline moved it in with the ops that read it):
        a runtime dim's size is a symbolic int (`sym_size`), and arithmetic on one a node of
        the same operator, which export traces as SymInt arithmetic; a static size is a
        Python int."""
        name = op.op_name.data
        args = [self.values[v] for v in op.operands]
        if name == SIZE_QUERY:
            source, dim = args
            shape = op.operands[0].type.shape
            static = None if shape is None else shape[dim]
            node = static if static is not None else self.graph.call_function(torch.ops.aten.sym_size.int, (source, dim))
        elif any(isinstance(a, torch.fx.Node) for a in args):
            node = self.graph.call_function(_SIZE_OPERATORS[name], tuple(args))
        else:
            node = _SIZE_OPERATORS[name](*args)
        self.values[op.results[0]] = node

    def _slice_bounds(self, op: UnregisteredOp, args: list[Any]) -> list[Any]:
        """`x[:4]` of a dim known only at run time, with the bounds clamped to the dim's size
        as symbolic ints (`min(4, n)`). Left as constants, export compares them with the
        dim's example size and assumes the answer: it takes `x[:4]` of 3 rows for all of
        them, bounds the dim by 3 and drops the slice (5 rows gave 5, not 4)."""
        shape = op.operands[0].type.shape
        dim = args[1]
        if shape is None or not isinstance(dim, int) or shape[dim % len(shape)] is not None:
            return args
        size = self.graph.call_function(torch.ops.aten.sym_size.int, (args[0], dim % len(shape)))
        clamped = list(args)
        for k in (2, 3):
            bound = args[k]
            if type(bound) is int and abs(bound) < TO_THE_END:  # (`x[2:]` ends at INT64_MAX: no bound to assume)
                clamped[k] = (self.graph.call_function(torch.sym_min, (bound, size)) if bound >= 0 else
                              self.graph.call_function(torch.sym_max, (self.graph.call_function(operator.add, (size, bound)), 0)))
        return clamped

    def _cast(self, node: Any, dtype: torch.dtype) -> torch.fx.Node:
        return self.graph.call_function(torch.ops.aten._to_copy.default, (node,), {"dtype": dtype})

    def condition(self, op: t.BoolTensorOp) -> None:
        """`Bool.Tensor(%p)` of a kept if's condition: `%p` as a 0-d bool tensor."""
        node = self.values[op.a]
        type_ = op.a.type
        if type_.rank:
            node = self.graph.call_function(torch.ops.aten.reshape.default, (node, []))
        if dtype_name(type_.element_type) != "bool":  # Bool.Tensor is "nonzero"
            node = self.graph.call_function(torch.ops.aten.ne.Scalar, (node, 0))
        self.values[op.result] = node

    def scf_if(self, op: scf.IfOp) -> None:
        """A kept if -> `higher_order.cond(pred, true_arm, false_arm, operands)`."""
        inner_constants = [
            inner for inner in op.walk() if isinstance(inner, (ParamOp, t.ValueTensorLiteralOp))
        ]
        for inner in inner_constants:  # get_attr'd in the root graph (only it is not an arm)
            _HANDLERS[type(inner)](self, inner)
        free = _free_values(op)
        operands = list(dict.fromkeys(
            [v for v in free if isinstance(v.type, t.ValueTensorType)]
            + [inner.results[0] for inner in inner_constants]
        ))
        literals = {v: self.values[v] for v in free if not isinstance(v.type, t.ValueTensorType)}
        # One operand per node: two references to one weight are one buffer (an operand
        # passed twice fails torch.export).
        nodes = list(dict.fromkeys(self.values[v] for v in operands))
        # A view operand is passed as a contiguous copy: torch.cond fails on operands that
        # share memory (`a, b = t.chunk(2)` with `a` and `t`), and on arms whose outputs'
        # strides differ (one arm yields a transposed operand, the other a new tensor).
        passed = [_contiguous_copy(self.graph, n) if _may_alias(n) and n.op != "placeholder" else n for n in nodes]
        k = next(self.arm_names)
        arms = []
        for side, region in zip(("true", "false"), (op.true_region, op.false_region)):
            child = _Builder(self.subdnn, self.weights, self.backend, parent=self)
            child.values.update(literals)
            placeholders = {node: child.graph.placeholder(f"arg{i}") for i, node in enumerate(nodes)}
            for value in operands:
                child.values[value] = placeholders[self.values[value]]
            child.build_block(region.block)
            name = f"cond{k}_{side}"
            self.root.add_module(name, torch.fx.GraphModule(child.root, child.graph, class_name=name))
            arms.append(self.graph.get_attr(name))
        node = self.graph.call_function(
            torch.ops.higher_order.cond,
            (self.values[op.cond], *arms, tuple(passed)),
        )
        for i, result in enumerate(op.results):
            self.values[result] = self.graph.call_function(operator.getitem, (node, i))

    def arm_output(self, op: scf.YieldOp) -> None:
        """An arm's outputs, each a fresh tensor: torch.cond rejects an output that is an
        input, a view of something or another output. Those are contiguous copies, so that
        both arms' strides agree (an operand passed through in one arm, a new tensor in the
        other); a computed output is left as it is (forcing it through `aten.contiguous`
        made torch.cond see an alias: fuzz seed 105009)."""
        outputs = []
        for value in op.operands:
            node = self.values[value]
            if node in outputs or _may_alias(node):
                node = _contiguous_copy(self.graph, node)
            outputs.append(node)
        self.graph.output(tuple(outputs))

    def build_block(self, block: Block) -> None:
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                self.graph.output(tuple(self.values[v] for v in op.operands))
                return
            if isinstance(op, scf.YieldOp):
                self.arm_output(op)
                return
            handler = _HANDLERS.get(type(op))
            if handler is not None:
                handler(self, op)
            elif isinstance(op, UnregisteredOp):
                self.torch_op(op)
            else:
                raise self.fail("this op cannot appear in a sub-DNN", op.name)

    def build(self, function: func.FuncOp) -> torch.fx.GraphModule:
        for i, arg in enumerate(function.body.block.args):
            self.values[arg] = self.graph.placeholder(f"in{i}")
        self.build_block(function.body.block)
        return torch.fx.GraphModule(self.root, self.graph, class_name=self.subdnn.name)


_HANDLERS: dict[type[Operation], Callable[[_Builder, Any], None]] = {
    **{
        constant: lambda b, op: b.literal(op, op.python_value)
        for constant in (
            t.ConstantIntOp, t.ConstantFloatOp, t.ConstantBoolOp, t.ConstantNoneOp,
            t.ConstantStrOp, t.ConstantDeviceOp,
        )
    },
    t.ListConstructOp: _Builder.list_construct,
    t.ValueTensorLiteralOp: _Builder.tensor_literal,
    t.TensorStaticInfoCastOp: _Builder.identity,
    ParamOp: _Builder.param,
    t.BoolTensorOp: _Builder.condition,
    t.ToI1Op: _Builder.identity,
    scf.IfOp: _Builder.scf_if,
}


def _cut_to_a_static_shape(op: Operation) -> bool:
    """A slice of a dim known only at run time whose result the IR declares static."""
    source, result = op.operands[0].type.shape, op.results[0].type.shape
    return source is not None and result is not None and None in source and None not in result


def _squeezes_anything(op: UnregisteredOp, args: list[Any]) -> bool:
    """Whether `squeeze(x, dim)` / `squeeze(x, dims)` may drop a dim: one of them is 1 or
    known only at run time (a rank or a dim the type does not know: it may)."""
    shape = op.operands[0].type.shape
    dims = args[1] if isinstance(args[1], (list, tuple)) else [args[1]]
    if shape is None or not all(isinstance(d, int) for d in dims):
        return True
    if not shape:
        return False  # (a 0-d tensor: squeeze is the tensor itself)
    return any(shape[d % len(shape)] in (1, None) for d in dims)


def _is_bool_tensor(value: SSAValue) -> bool:
    type_ = value.type
    return isinstance(type_, t.ValueTensorType) and type_.element_type is not None and dtype_name(type_.element_type) == "bool"


def _free_values(op: Operation) -> list[SSAValue]:
    """The values `op`'s regions read that are defined outside `op`, in first-use order."""
    inner: set[SSAValue] = set()
    for nested in _nested(op):
        inner.update(nested.results)
        for region in nested.regions:
            for block in region.blocks:
                inner.update(block.args)
    for region in op.regions:
        for block in region.blocks:
            inner.update(block.args)
    return list(dict.fromkeys(v for nested in _nested(op) for v in nested.operands if v not in inner))


def _nested(op: Operation) -> Iterator[Operation]:
    return (nested for nested in op.walk() if nested is not op)


def _contiguous_copy(graph: torch.fx.Graph, node: Any) -> torch.fx.Node:
    return graph.call_function(torch.ops.aten.clone.default, (node,), {"memory_format": torch.contiguous_format})


def _may_alias(node: Any) -> bool:
    """An fx node whose tensor may share memory with an arm input or another value."""
    if not isinstance(node, torch.fx.Node):
        return True
    if node.op == "placeholder":
        return True
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        return _may_alias(node.args[0])
    return bool(getattr(node.target, "is_view", False))


def _decode_enum(schema_arg, value: Any) -> Any:
    if not isinstance(value, int) or isinstance(value, bool):
        return value
    real = str(getattr(schema_arg, "real_type", ""))
    for enum_name, table in _ENUM_DECODERS.items():
        if enum_name in real:
            return table.get(value, value)
    return value


def _as_tensor(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.detach()
    # (not np.ascontiguousarray: it makes a 0-d weight 1-d, and a (1,) float64 buffer
    # promotes a float32 operand to float64 where a 0-d one does not: `h * self.scale`)
    array = np.asarray(value)
    return torch.from_numpy(array if array.flags.c_contiguous else array.copy(order="C"))


# The example size of a dim known only at run time: export specializes a dim whose example
# is 0 or 1, and 3 is unlikely to equal a static dim by chance.
_RUNTIME_DIM_EXAMPLE = 3
# Larger ones, tried in turn when export fails at 3: a sub-DNN the frontend calls only for
# sizes from some bound on (`x[:, -6:]` is declared 6 wide: the host tested the size) does
# not trace at 3 columns. Export keeps the range the ops' declared sizes imply, which the
# host's tests hold.
_LARGER_RUNTIME_DIM_EXAMPLES = (17, 65)


def example_inputs(subdnn: SubDNN, size: int = _RUNTIME_DIM_EXAMPLE,
                   sizes: Mapping[tuple[int, int], int] | None = None) -> tuple[torch.Tensor, ...]:
    """Zeros of the argument signature: enough for export (no sub-DNN reads tensor values
    to decide anything). Each runtime dim is `size` long, or `sizes[(input, dim)]`."""
    sizes = sizes or {}
    return tuple(
        torch.zeros([sizes.get((i, k), size) if d is None else d for k, d in enumerate(spec.shape)],
                    dtype=getattr(torch, spec.dtype))
        for i, spec in enumerate(subdnn.inputs)
    )


def dynamic_shapes(subdnns: list[SubDNN]) -> dict[str, Any]:
    """`torch.export`'s `dynamic_shapes` for the dims known only at run time (none: {}).
    `Dim.DYNAMIC` refuses to specialize them, so a graph that needs a fixed size fails to
    compile instead of failing on another size at run time."""
    specs = [{k: Dim.DYNAMIC for k, d in enumerate(spec.shape) if d is None} or None for s in subdnns for spec in s.inputs]
    return {"dynamic_shapes": tuple(specs)} if any(specs) else {}


def rebuild(subdnn: SubDNN, weights: Mapping[str, Any], backend: str) -> torch.fx.GraphModule:
    function = only_func(parse_module(subdnn.ir_text, source_name=f"@{subdnn.name}"))
    return _Builder(subdnn, weights, backend).build(function)


def exports(subdnn: SubDNN, weights: Mapping[str, Any], backend: str) -> Iterator[torch.export.ExportedProgram]:
    """The sub-DNN as `torch.export` programs (what both exporters start from), one per
    example size that exports, best first: those that take each dim known only at run time
    as a size of its own come first. At one size, sizes the sub-DNN computes with can meet
    by chance and export ties them: `x[:3 - len(a) - len(b)]` with `a` and `b` of 3 rows
    slices to -3 and makes `a` `6 - len(b)` rows, a program right where that holds only."""
    module = rebuild(subdnn, weights, backend)
    shapes = dynamic_shapes([subdnn])
    # (not for a batched sub-DNN: its dim 0 takes every count of rows, whatever its ops imply)
    sizes = (_RUNTIME_DIM_EXAMPLE, *(_LARGER_RUNTIME_DIM_EXAMPLES if shapes and subdnn.batch_rows is None else ()))
    tied, failures = [], []
    for size in sizes:
        try:
            with torch.no_grad():
                program = _constants_for_empty_tensors(
                    torch.export.export(module, example_inputs(subdnn, size), strict=False, **shapes))
        except Exception as err:  # the op that failed is named in torch's own message
            failures.append(err)
            continue
        if runtime_dims_of(subdnn, program) is None:
            tied.append(program)
        else:
            yield program
    yield from tied
    if not tied and len(failures) == len(sizes):
        raise BackendError(backend, subdnn.name, f"torch.export failed: {_first_line(failures[0])}") from failures[0]


def export(subdnn: SubDNN, weights: Mapping[str, Any], backend: str) -> torch.export.ExportedProgram:
    """The best of `exports`."""
    return next(exports(subdnn, weights, backend))


def runtime_dims_of(subdnn: SubDNN, program: torch.export.ExportedProgram) -> list[str] | None:
    """The symbols of the program's inputs' dims known only at run time, in order; None where
    one is a number or an expression of others (export fixed or tied it)."""
    import sympy

    placeholders = {node.name: node.meta.get("val") for node in program.graph.nodes if node.op == "placeholder"}
    symbols = []
    for spec, name in zip(subdnn.inputs, program.graph_signature.user_inputs):
        value = placeholders.get(name)
        if not isinstance(value, torch.Tensor):
            continue
        for declared, traced in zip(spec.shape, value.shape):
            if declared is None:
                expr = traced.node.expr if isinstance(traced, torch.SymInt) else None
                if not isinstance(expr, sympy.Symbol):
                    return None
                symbols.append(str(expr))
    return symbols


def ties_forced(subdnn: SubDNN, weights: Mapping[str, Any], before: list[str], after: list[str], backend: str) -> bool:
    """Whether every tie `after` adds to `before` (dims of two symbols before, of one after:
    a decomposition's guard, such as a matmul's inner sizes) is one the sub-DNN itself
    requires: run as it is, with the dims of any one of the symbols one longer or one
    shorter than the rest (runtime dims are 2 and up), it raises. Then the tied program is
    right on every input the sub-DNN accepts. A tie met by chance at one example size (a
    slice to another input's length, `a[:len(b)] + b`) runs on one side, and is not taken."""
    positions = [(i, d) for i, spec in enumerate(subdnn.inputs) for d, size in enumerate(spec.shape) if size is None]
    if len(positions) != len(before) or len(after) != len(before):
        return False
    merged: dict[str, set[str]] = {}
    for old, new in zip(before, after):
        merged.setdefault(new, set()).add(old)
    grown_symbols = [old for olds in merged.values() if len(olds) > 1 for old in sorted(olds)]
    if not grown_symbols:
        return before == after
    module = rebuild(subdnn, weights, backend)

    def raises(grown: set, by: int = 0) -> bool:
        examples = example_inputs(subdnn, sizes={position: _RUNTIME_DIM_EXAMPLE + by for position in grown})
        try:
            with torch.no_grad():
                module(*examples)
        except Exception:
            return True
        return False

    if raises(set()):
        return False
    return all(raises({positions[k] for k, old in enumerate(before) if old == symbol}, by)
               for symbol in grown_symbols for by in (1, -1))


TO_THE_END = 2**62  # (a slice bound at least this large is PyTorch's "to the end", INT64_MAX)

# What a reduction of no elements is, in PyTorch (amax/amin of nothing raise in eager, so
# never reach a sub-DNN).
_OF_NOTHING = {
    "sum.default": 0, "sum.dim_IntList": 0, "any.default": False, "any.dim": False, "any.dims": False,
    "all.default": True, "all.dim": True, "all.dims": True,
    "prod.default": 1, "prod.dim_int": 1, "mean.default": math.nan, "mean.dim": math.nan,
    "mm.default": 0, "bmm.default": 0,
    # a loss of no samples (`F.cross_entropy(logits[keep], ...)` where nothing is kept): 0
    # summed, nan averaged (ONNX Runtime rejected the exporter's Reshape of no elements)
    **dict.fromkeys(("cross_entropy_loss.default", "nll_loss.default", "nll_loss_nd.default"),
                    lambda node: math.nan if (node.args[3] if len(node.args) > 3 else node.kwargs.get("reduction", 1)) == 1 else 0),
}


def empty_tensors_as_constants(graph_module: torch.fx.GraphModule) -> None:
    """Tensors with no elements (the size-0 variant of a run, `x[:k]` at k = 0) as constants:
    a result with none is `zeros` of its shape (TVM's passes break on some ops of such
    tensors: `e.t()` of a [0, 1] tensor, "Reshape expects the new shape to be convertible"),
    and a reduction of none is its identity (TVM's reductions never run their init over a
    loop of no steps: `b.any()` of an empty `b` gave True or False by the memory's garbage, a
    silent wrong answer; ONNX Runtime's ReduceMax of nothing, cast to bool, is True too).
    Both backends get it on the exported program; TVM again after its decompositions."""
    graph = graph_module.graph
    for node in list(graph.nodes):
        value = node.meta.get("val")
        if node.op != "call_function" or not isinstance(value, torch.Tensor) or not node.users:
            continue
        if not all(isinstance(d, int) for d in value.shape):
            continue
        if not all(_static(o) for o in node.args) or not all(_static(o) for o in node.kwargs.values()):
            # (its shape is static only under export's guards on the symbolic sizes it
            # reads: `x[:3 - n]` is empty where n > 5, and the graph must still slice
            # for other n: a beam search's `k -= len(complete_inds)`, then `top_k_scores[:k]`)
            continue
        if value.numel() == 0:
            fill = 0
        else:
            operands = [o.meta.get("val") for o in node.all_input_nodes]
            name = getattr(node.target, "__name__", "")
            if name not in _OF_NOTHING or not any(isinstance(o, torch.Tensor) and o.numel() == 0 for o in operands):
                continue
            fill = _OF_NOTHING[name]
            fill = fill(node) if callable(fill) else fill
        with graph.inserting_before(node):
            constant = graph.call_function(torch.ops.aten.full.default, (list(value.shape), fill), {"dtype": value.dtype})
        constant.meta["val"] = value
        node.replace_all_uses_with(constant)
    graph.eliminate_dead_code()
    graph_module.recompile()


def _static(operand) -> bool:
    """Whether an operand of a node is known without export's symbolic sizes: a constant,
    or a node whose value is a tensor of static shape or a plain number (lists and tuples
    item by item)."""
    if isinstance(operand, (list, tuple)):
        return all(map(_static, operand))
    if not isinstance(operand, torch.fx.Node):
        return True
    value = operand.meta.get("val")
    if isinstance(value, torch.Tensor):
        return all(isinstance(d, int) for d in value.shape)
    return not isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool))


def _constants_for_empty_tensors(program: torch.export.ExportedProgram) -> torch.export.ExportedProgram:
    for module in program.graph_module.modules():
        if isinstance(module, torch.fx.GraphModule):
            empty_tensors_as_constants(module)
    return program


class _SideBySide(torch.nn.Module):
    """Several sub-DNN graphs as one module: arguments and results concatenated in order."""

    def __init__(self, parts: list[torch.fx.GraphModule], arities: list[int]):
        super().__init__()
        self.parts = torch.nn.ModuleList(parts)
        self.arities = arities

    def forward(self, *args):
        results, start = [], 0
        for part, arity in zip(self.parts, self.arities):
            results.extend(part(*args[start : start + arity]))
            start += arity
        return tuple(results)


def export_side_by_side(
    subdnns: list[SubDNN], weights: Mapping[str, Any], backend: str
) -> torch.export.ExportedProgram:
    """All `subdnns` as one `torch.export` program (one exporter call pays its fixed cost
    once); argument `i` of sub-DNN `k` comes after all of sub-DNN `k-1`'s, results alike."""
    parts = [rebuild(subdnn, weights, backend) for subdnn in subdnns]
    module = _SideBySide(parts, [len(s.inputs) for s in subdnns])
    arguments = tuple(x for subdnn in subdnns for x in example_inputs(subdnn))
    with torch.no_grad():
        shapes = dynamic_shapes(subdnns)  # (one entry: the varargs of forward)
        program = torch.export.export(module, arguments, strict=False, **{k: (v,) for k, v in shapes.items()})
    return _constants_for_empty_tensors(program)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__

