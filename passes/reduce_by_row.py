"""dycl-reduce-by-row: a test of a whole one-row tensor, computed row by row.

An SDN's exit test `F.softmax(logits, 1).max() >= t` reduces all of `logits` to one value.
For one request (`logits` is `[1, 10]`) that is the same as reducing each row, `amax` over
every dim but 0 (`[1]`), then dropping dim 0. Written the second way, the test maps rows
independently, so `run_many` computes it inside the block's batched call, and only the
dropping of dim 0 (a view, which dycl-hoist-free gives to the host) is left per request;
written the first way, every request paid a backend call of its own for the test
(dycl-split-batchable's `_per_request` part).

SkipNet's gate `prob[0, 0] > 0.5` is the same: `prob[0]` of a `[1, 2]` tensor is `prob`
without dim 0, and the element and the comparison can be taken in each row.

In every sub-DNN:
- a full reduction (`max`, `min`, `sum`, `mean`) of a tensor of static shape whose dim 0 is
  1, of rank at least 2, becomes the reduction over dims 1.. then `squeeze.dim(_, 0)`: the
  same value, whatever dim 0 means; so does `x[0]` (`select.int(x, 0, 0)`) of such a tensor;
- an elementwise op reading such squeezes (every tensor it reads one, of one rank) or a
  `select.int` of one is computed before the squeeze instead (`ge.Scalar(squeeze(y, 0), t)`
  is `squeeze(ge.Scalar(y, t), 0)`, `squeeze(y, 0)[0]` is `squeeze(y[:, 0], 0)`), so that
  the comparison is row-wise too.

Both rewrites are exact for the one-request program they see, so the pass is sound
whatever the sub-DNN; whether a sub-DNN then batches is still dycl-mark-batchable's proof.
`dycl.compile` runs it only on the form of the program that `run_many` runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern
from xdsl.rewriter import InsertPoint

from dycl.dialects import torch as t
from dycl.dialects.dtypes import dtype_name
from dycl.dialects.dycl import is_subdnn
from dycl.dialects.torch_ops import ELEMENTWISE_OPS, constant_value

ROW_REDUCTIONS = {
    "torch.aten.max": "torch.aten.amax",
    "torch.aten.min": "torch.aten.amin",
    "torch.aten.sum": "torch.aten.sum.dim_IntList",
    "torch.aten.mean": "torch.aten.mean.dim",
}
"""A full reduction, and the reduction over a list of dims that computes it by row."""

SQUEEZE = "torch.aten.squeeze.dim"
SELECT = "torch.aten.select.int"
RESHAPES = ("torch.aten.view", "torch.aten.reshape", "torch.aten._unsafe_view")


def _squeezed_row(value: SSAValue) -> SSAValue | None:
    """`y` where `value` is `squeeze.dim(y, 0)` of a tensor `y` of static shape `[1, ...]`."""
    owner = value.owner
    if not (isinstance(owner, Operation) and t.op_name(owner) == SQUEEZE and constant_value(owner.operands[1]) == 0):
        return None
    source = owner.operands[0]
    type_ = source.type
    return source if isinstance(type_, t.ValueTensorType) and type_.has_static_shape and type_.shape[:1] == (1,) else None


def _static(value: SSAValue) -> bool:
    type_ = value.type
    return isinstance(type_, t.ValueTensorType) and type_.has_static_shape and type_.element_type is not None


def _one_row(value: SSAValue) -> bool:
    return _static(value) and len(value.type.shape) >= 2 and value.type.shape[0] == 1


@dataclass
class ReduceByRow(RewritePattern):
    ctx: Context

    def make(self, name: str, operands, result_type, rewriter: PatternRewriter, before: Operation) -> Operation:
        op = self.ctx.get_op(name).create(operands=list(operands), result_types=[result_type])
        rewriter.insert(op, InsertPoint.before(before))
        return op

    def constant(self, op: Operation, rewriter: PatternRewriter, before: Operation) -> SSAValue:
        rewriter.insert(op, InsertPoint.before(before))
        return op.results[0]

    def int_list(self, values: list[int], rewriter: PatternRewriter, before: Operation) -> SSAValue:
        items = [self.constant(t.ConstantIntOp(n), rewriter, before) for n in values]
        return self.constant(t.ListConstructOp.create(operands=items, result_types=[t.ListType(t.IntType())]),
                             rewriter, before)

    def squeeze(self, row: SSAValue, type_: t.ValueTensorType, rewriter: PatternRewriter, before: Operation) -> SSAValue:
        zero = self.constant(t.ConstantIntOp(0), rewriter, before)
        return self.make(SQUEEZE, [row, zero], type_, rewriter, before).results[0]

    @op_type_rewrite_pattern
    def match_and_rewrite(self, fn: func.FuncOp, rewriter: PatternRewriter) -> None:
        if not is_subdnn(fn):
            return
        for op in list(fn.walk()):
            name = t.op_name(op)
            if name in ROW_REDUCTIONS:
                self.reduce_rows(op, name, rewriter)
            elif name == SELECT:
                self.select_row(op, rewriter)
            elif name in RESHAPES:
                self.reshape_rows(op, rewriter)
        for op in list(fn.walk()):
            name = t.op_name(op)
            if name in ELEMENTWISE_OPS:
                self.sink_squeezes(op, rewriter)
            elif name == SELECT:
                self.sink_through_select(op, rewriter)

    def reduce_rows(self, op: Operation, name: str, rewriter: PatternRewriter) -> None:
        (result,) = op.results
        source = op.operands[0]
        if not (_one_row(source) and result.type.shape == ()) or dtype_name(source.type.element_type) == "bool":
            return  # (amax of bools: not every backend has it)
        if len(op.operands) > 1 and constant_value(op.operands[1]) is not None:
            return  # (a dtype to convert to)
        element = result.type.element_type
        dim_list = self.int_list(list(range(1, len(source.type.shape))), rewriter, op)
        keepdim = self.constant(t.ConstantBoolOp(False), rewriter, op)
        operands = [source, dim_list, keepdim]
        if name in ("torch.aten.sum", "torch.aten.mean"):
            operands.append(self.constant(t.ConstantNoneOp(), rewriter, op))
        row = self.make(ROW_REDUCTIONS[name], operands, t.ValueTensorType((1,), element), rewriter, op).results[0]
        rewriter.replace_all_uses_with(result, self.squeeze(row, result.type, rewriter, op))
        rewriter.erase(op)

    def select_row(self, op: Operation, rewriter: PatternRewriter) -> None:
        """`x[0]` of a one-row `x` is `x` without its dim 0."""
        source, dim, index = op.operands
        if not (_static(source) and _static(op.results[0]) and source.type.shape[:1] == (1,)
                and constant_value(dim) == 0 and constant_value(index) in (0, -1)):
            return
        rewriter.replace_all_uses_with(op.results[0], self.squeeze(source, op.results[0].type, rewriter, op))
        rewriter.erase(op)

    def reshape_rows(self, op: Operation, rewriter: PatternRewriter) -> None:
        """`x.view(1, a, b)` of a one-row `x` is `x.view(-1, a, b)`: the rows stay rows."""
        source, sizes = op.operands
        shape = constant_value(sizes)
        if not (_static(source) and _static(op.results[0]) and source.type.shape[:1] == (1,)
                and isinstance(shape, list) and shape[:1] == [1] and all(isinstance(n, int) and n > 0 for n in shape)):
            return  # (a size 0 would leave -1 undetermined)
        listed = self.int_list([-1, *shape[1:]], rewriter, op)
        rewriter.replace_op(op, type(op).create(operands=[source, listed], result_types=[op.results[0].type],
                                                properties=dict(op.properties), attributes=dict(op.attributes)))

    def replace_by_row_op(self, op: Operation, operands: list[SSAValue], rewriter: PatternRewriter) -> None:
        """`op` computed on `operands` (its own, un-squeezed), then squeezed."""
        result = op.results[0]
        row_op = type(op).create(operands=operands,
                                 result_types=[t.ValueTensorType((1, *result.type.shape), result.type.element_type)],
                                 properties=dict(op.properties), attributes=dict(op.attributes))
        rewriter.insert(row_op, InsertPoint.before(op))
        rewriter.replace_all_uses_with(result, self.squeeze(row_op.results[0], result.type, rewriter, op))
        rewriter.erase(op)

    def sink_squeezes(self, op: Operation, rewriter: PatternRewriter) -> None:
        """`f(squeeze(y, 0), ...)` of elementwise `f` is `squeeze(f(y, ...), 0)`, where every
        tensor it reads is such a squeeze of the same rank (dim 0 stays aligned)."""
        if len(op.results) != 1 or not _static(op.results[0]):
            return
        tensors = [v for v in op.operands if isinstance(v.type, t.ValueTensorType)]
        rows = [_squeezed_row(v) for v in tensors]
        if not tensors or any(r is None for r in rows) or len({len(r.type.shape) for r in rows}) != 1:
            return
        if len(rows[0].type.shape) != len(op.results[0].type.shape) + 1:
            return
        mapping = dict(zip(tensors, rows))
        self.replace_by_row_op(op, [mapping.get(v, v) for v in op.operands], rewriter)

    def sink_through_select(self, op: Operation, rewriter: PatternRewriter) -> None:
        """`squeeze(y, 0)[..., k, ...]` (`select.int` at dim d) is `squeeze(select(y, d + 1, k), 0)`."""
        source, dim, index = op.operands
        row = _squeezed_row(source)
        d = constant_value(dim)
        if row is None or not isinstance(d, int) or not _static(op.results[0]) or not source.type.shape:
            return
        d %= len(source.type.shape)
        self.replace_by_row_op(op, [row, self.constant(t.ConstantIntOp(d + 1), rewriter, op), index], rewriter)


@dataclass(frozen=True)
class ReduceByRowPass(ModulePass):
    name: ClassVar[str] = "dycl-reduce-by-row"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(ReduceByRow(ctx), apply_recursively=False).rewrite_module(op)
