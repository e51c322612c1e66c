"""dycl-reduce-by-row: a test of a whole one-row tensor, computed row by row.

An SDN's exit test `F.softmax(logits, 1).max() >= t` reduces all of `logits` to one value.
For one request (`logits` is `[1, 10]`) that is the same as reducing each row, `amax` over
every dim but 0 (`[1]`), then dropping dim 0. Written the second way, the test maps rows
independently, so `run_many` computes it inside the block's batched call, and only the
dropping of dim 0 (a view, which dycl-hoist-free gives to the host) is left per request;
written the first way, every request paid a backend call of its own for the test
(dycl-split-batchable's `_per_request` part).

In every sub-DNN:
- a full reduction (`max`, `min`, `sum`, `mean`) of a tensor of static shape whose dim 0 is
  1, of rank at least 2, becomes the reduction over dims 1.. then `squeeze.dim(_, 0)`: the
  same value, whatever dim 0 means;
- an elementwise op reading such squeezes (and no other tensor) is computed before the
  squeeze instead (`ge.Scalar(squeeze(y, 0), t)` is `squeeze(ge.Scalar(y, t), 0)`), so
  that the comparison is row-wise too.

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


def _one_row(value: SSAValue) -> bool:
    type_ = value.type
    return (isinstance(type_, t.ValueTensorType) and type_.has_static_shape and len(type_.shape) >= 2
            and type_.shape[0] == 1 and type_.element_type is not None)


def _squeezed_row(value: SSAValue) -> SSAValue | None:
    """`y` where `value` is `squeeze.dim(y, 0)` of a `[1]` tensor `y`."""
    owner = value.owner
    if not (isinstance(owner, Operation) and t.op_name(owner) == SQUEEZE and constant_value(owner.operands[1]) == 0):
        return None
    source = owner.operands[0]
    return source if isinstance(source.type, t.ValueTensorType) and source.type.shape == (1,) else None


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
        for op in list(fn.walk()):
            if t.op_name(op) in ELEMENTWISE_OPS:
                self.sink_squeezes(op, rewriter)

    def reduce_rows(self, op: Operation, name: str, rewriter: PatternRewriter) -> None:
        (result,) = op.results
        source = op.operands[0]
        if not (_one_row(source) and result.type.shape == ()):
            return
        if len(op.operands) > 1 and constant_value(op.operands[1]) is not None:
            return  # (a dtype to convert to)
        element = result.type.element_type
        dims = [self.constant(t.ConstantIntOp(d), rewriter, op) for d in range(1, len(source.type.shape))]
        dim_list = self.constant(t.ListConstructOp.create(operands=dims, result_types=[t.ListType(t.IntType())]), rewriter, op)
        keepdim = self.constant(t.ConstantBoolOp(False), rewriter, op)
        operands = [source, dim_list, keepdim]
        if name in ("torch.aten.sum", "torch.aten.mean"):
            operands.append(self.constant(t.ConstantNoneOp(), rewriter, op))
        row = self.make(ROW_REDUCTIONS[name], operands, t.ValueTensorType((1,), element), rewriter, op).results[0]
        rewriter.replace_all_uses_with(result, self.squeeze(row, result.type, rewriter, op))
        rewriter.erase(op)

    def sink_squeezes(self, op: Operation, rewriter: PatternRewriter) -> None:
        if len(op.results) != 1 or op.results[0].type.shape != () or op.results[0].type.element_type is None:
            return
        tensors = [v for v in op.operands if isinstance(v.type, t.ValueTensorType)]
        rows = [_squeezed_row(v) for v in tensors]
        if not tensors or any(r is None for r in rows):
            return
        mapping = dict(zip(tensors, rows))
        result = op.results[0]
        row_op = type(op).create(operands=[mapping.get(v, v) for v in op.operands],
                                 result_types=[t.ValueTensorType((1,), result.type.element_type)],
                                 properties=dict(op.properties), attributes=dict(op.attributes))
        rewriter.insert(row_op, InsertPoint.before(op))
        rewriter.replace_all_uses_with(result, self.squeeze(row_op.results[0], result.type, rewriter, op))
        rewriter.erase(op)


@dataclass(frozen=True)
class ReduceByRowPass(ModulePass):
    name: ClassVar[str] = "dycl-reduce-by-row"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(ReduceByRow(ctx), apply_recursively=False).rewrite_module(op)
