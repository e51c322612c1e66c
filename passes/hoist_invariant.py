"""dycl-hoist-invariant: tensor math a loop repeats unchanged is computed once, before it.

A decoder's step often recomputes something of values fixed before the loop: Show, Attend
and Tell's `encoder_att(features)` is 8.4 M of the step's 10 M multiply-accumulates. Left
in the body, every call of the step's sub-DNN computes it again. A static compiler given
the same network unrolled computes it once (ONNX Runtime's common-subexpression
elimination merges the copies), so DyCL's split would lose to it by the loop's trip count.

An op at the top level of a loop's region (`scf.while`'s two, `scf.for`'s body) moves to
just before the loop when:
- it is tensor math a sub-DNN may hold, with value semantics: no effect, no random draw,
  no size from the data (a draw per iteration must stay one per iteration);
- every value it reads is defined outside the loop, or is a constant, a weight, a tensor
  list or an op that moves;
- it cannot fail where the loop would not have run it (`scf.while`'s body and `scf.for`'s
  may run no time): every shape is static and its tensors are float or bool, so no index
  it reads can be out of range;
- it is worth a sub-DNN input: it, or an op that moves because it reads it, does at least
  `min_macs` multiply-accumulates. A cheap op stays, so that no loop gains a crossing value
  for nothing.

An op under an `scf.if` stays (it may not run at all). Loops are visited innermost first,
so an op invariant in two nested loops leaves both. Constants and weights are cloned, not
moved: the body may still read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, scf
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from dycl.dialects import torch as t
from dycl.dialects.dtypes import dtype_name
from dycl.dialects.torch_ops import has_value_semantics, op_macs
from dycl.passes._common import CONSTANT_OPS, append_clone, is_tensor_compute, op_operand_values


def defined_outside(value: SSAValue, loop: Operation) -> bool:
    return not loop.is_ancestor(value.owner)


def cannot_fail(op: Operation) -> bool:
    """Static shapes, and no tensor of integers (an index) among the operands."""
    for value in [*op.results, *op_operand_values(op)]:
        type_ = value.type
        if not isinstance(type_, t.ValueTensorType):
            continue
        if not type_.has_static_shape or type_.element_type is None:
            return False
        if value not in op.results and not dtype_name(type_.element_type).startswith(("float", "bfloat", "bool")):
            return False
    return True


@dataclass(frozen=True)
class HoistInvariant(RewritePattern):
    min_macs: int

    @staticmethod
    def computes(op: Operation) -> bool:
        return not isinstance(op, (*CONSTANT_OPS, t.ListConstructOp))

    def movable(self, op: Operation, loop: Operation, moving: set[Operation]) -> bool:
        def invariant(value: SSAValue) -> bool:
            return defined_outside(value, loop) or value.owner in moving

        if isinstance(op, CONSTANT_OPS):
            return not op.operands
        if isinstance(op, t.ListConstructOp):
            return all(invariant(v) for v in op.operands)
        return (
            is_tensor_compute(op)
            and has_value_semantics(op)
            and cannot_fail(op)
            and all(invariant(v) for v in op.operands)
        )

    def worth_moving(self, ops: list[Operation], moving: set[Operation]) -> list[Operation]:
        """The ops of `ops` (all movable, in order) that some heavy op needs or reads
        through: a heavy op, what it reads, and the ops reading it."""
        wanted: set[Operation] = set()
        for op in ops:  # forward: a heavy op, and what reads a wanted op
            if self.computes(op) and (op_macs(op) >= self.min_macs
                                      or any(v.owner in wanted for v in op_operand_values(op))):
                wanted.add(op)
        for op in reversed(ops):  # backward: what a wanted op (or list, or constant) reads
            if op in wanted:
                wanted.update(v.owner for v in op.operands if v.owner in moving)
        return [op for op in ops if op in wanted]

    def hoist(self, loop: Operation, blocks: list[Block], rewriter: PatternRewriter) -> None:
        moving: set[Operation] = set()
        ordered: list[Operation] = []
        for block in blocks:
            for op in block.ops:
                if self.movable(op, loop, moving):
                    moving.add(op)
                    ordered.append(op)
        chosen = self.worth_moving(ordered, moving)
        if not any(self.computes(op) for op in chosen):
            return
        mapping: dict[SSAValue, SSAValue] = {}
        clones: list[Operation] = []
        for op in chosen:
            append_clone(op, mapping, clones)
        rewriter.insert(clones, InsertPoint.before(loop))
        for op in reversed(chosen):  # readers first; a constant the body still reads stays
            if self.computes(op):
                for old in op.results:
                    rewriter.replace_all_uses_with(old, mapping[old])
            if not any(r.uses for r in op.results):
                rewriter.erase(op)


@dataclass(frozen=True)
class HoistFromWhile(HoistInvariant):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.WhileOp, rewriter: PatternRewriter) -> None:
        self.hoist(op, [op.before_region.block, op.after_region.block], rewriter)


@dataclass(frozen=True)
class HoistFromFor(HoistInvariant):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.ForOp, rewriter: PatternRewriter) -> None:
        self.hoist(op, [op.body.block], rewriter)


@dataclass(frozen=True)
class HoistInvariantPass(ModulePass):
    name: ClassVar[str] = "dycl-hoist-invariant"

    min_macs: int = 100_000
    """Ops move only for (or with) one that does at least this many multiply-accumulates."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(
            GreedyRewritePatternApplier([HoistFromWhile(self.min_macs), HoistFromFor(self.min_macs)]),
            apply_recursively=False,
            walk_regions_first=True,
        ).rewrite_module(op)
