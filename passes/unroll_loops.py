"""dycl-unroll-loops: unroll `scf.for` loops whose trip count is a constant.

Reuses xDSL's `scf-for-loop-unroll` pattern and adds the two choices DyCL needs: a cap on
the trip count (unrolling copies the body that many times) and a mode that unrolls only
loops whose carried values change shape between iterations (marked by an unknown dim, see
dycl-shape-infer) — those cannot become one static sub-DNN, the others stay rolled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, scf
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    op_type_rewrite_pattern,
)
from xdsl.transforms.canonicalization_patterns.utils import const_evaluate_operand
from xdsl.transforms.scf_for_loop_unroll import UnrollLoopPattern

from dycl.dialects.torch import ValueTensorType


def trip_count(op: scf.ForOp) -> int | None:
    bounds = [const_evaluate_operand(v) for v in (op.lb, op.ub, op.step)]
    if any(b is None for b in bounds):
        return None
    lb, ub, step = bounds
    return len(range(lb, ub, step)) if step > 0 else None


def carries_varying_shape(op: scf.ForOp) -> bool:
    """A carried tensor whose shape is not one static shape across iterations."""
    carried = op.body.block.args[1:]
    yielded = op.body.block.last_op.operands if op.body.block.last_op else ()
    for arg, init, out in zip(carried, op.iter_args, yielded, strict=False):
        if not isinstance(arg.type, ValueTensorType):
            continue
        if not arg.type.has_static_shape or init.type != out.type:
            return True
    return False


@dataclass(frozen=True)
class BoundedUnrollPattern(UnrollLoopPattern):
    max_trip_count: int
    shape_varying_only: bool

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.ForOp, rewriter: PatternRewriter) -> None:
        count = trip_count(op)
        if count is None or count > self.max_trip_count:
            return
        if self.shape_varying_only and not carries_varying_shape(op):
            return
        super().match_and_rewrite(op, rewriter)


@dataclass(frozen=True)
class UnrollLoopsPass(ModulePass):
    name: ClassVar[str] = "dycl-unroll-loops"

    max_trip_count: int = 64
    """Loops with more iterations than this stay rolled."""

    shape_varying_only: bool = False
    """Unroll only loops whose carried tensors change shape per iteration."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        pattern = BoundedUnrollPattern(self.max_trip_count, self.shape_varying_only)
        PatternRewriteWalker(pattern).rewrite_module(op)
