"""dycl-const-prop: fold constants, resolve control flow on constants, remove dead ops.

Folds the host-level scalar and list ops of the torch dialect (`aten.add.int`, comparisons,
`aten.Bool.*`, `aten.len.t`, `aten.__getitem__.t` of constant lists, ...) with the same
Python semantics the interpreter uses, then lets xDSL's canonicalization resolve `scf.if`
on constant conditions, drop `scf.for` loops that never run and fold `arith`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from xdsl.context import Context
from xdsl.dialects import arith, builtin
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.traits import HasCanonicalizationPatternsTrait, NoTerminator
from xdsl.transforms.canonicalization_patterns.scf import RehoistConstInLoops
from xdsl.transforms.dead_code_elimination import region_dce

from dycl.dialects import torch as t
from dycl.dialects.host_ops import host_op

_NO_VALUE = object()

# Ops that may have effects beyond their results: never removed when unused.
_EFFECTFUL_OPS = frozenset(
    {"torch.prim.RaiseException", "torch.prim.Print", "torch.aten.warn", "torch.prim.Uninitialized"}
)


def constant_value(value: SSAValue) -> Any:
    """The Python value of a constant SSA value, or `_NO_VALUE`."""
    owner = value.owner
    match owner:
        case t.ConstantIntOp() | t.ConstantFloatOp() | t.ConstantStrOp():
            return owner.value.value.data if not isinstance(owner, t.ConstantStrOp) else owner.value.data
        case t.ConstantBoolOp():
            return owner.bool_value
        case t.ConstantNoneOp():
            return None
        case t.ListConstructOp():
            elements = [constant_value(e) for e in owner.elements]
            return _NO_VALUE if any(e is _NO_VALUE for e in elements) else elements
        case arith.ConstantOp() if isinstance(owner.value, builtin.IntegerAttr):
            return owner.value.value.data
    return _NO_VALUE


def materialize(value: Any, result_type) -> Operation | None:
    """A constant op producing `value` with `result_type`, when there is one."""
    match result_type:
        case t.BoolType() if isinstance(value, bool):
            return t.ConstantBoolOp(value)
        case t.IntType() if isinstance(value, int) and not isinstance(value, bool):
            return t.ConstantIntOp(value)
        case t.FloatType() if isinstance(value, float):
            return t.ConstantFloatOp(value)
        case builtin.IntegerType() if isinstance(value, int):
            return arith.ConstantOp(builtin.IntegerAttr(int(value), result_type))
    return None


def _name(op: Operation) -> str:
    return t.op_name(op)


class FoldHostScalarOp(RewritePattern):
    """`torch.aten.add.int(2, 3)` -> `torch.constant.int 5`, and the like."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if len(op.results) != 1 or (fn := host_op(_name(op))) is None:
            return
        args = [constant_value(v) for v in op.operands]
        if any(a is _NO_VALUE for a in args):
            return
        try:
            value = fn(*args)
        except Exception:  # e.g. an index out of range: leave it to run time
            return
        if (constant := materialize(value, op.results[0].type)) is not None:
            rewriter.replace(op, constant)


class FoldToI1(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: t.ToI1Op, rewriter: PatternRewriter):
        if isinstance(value := constant_value(op.operand), bool):
            rewriter.replace(op, arith.ConstantOp(builtin.IntegerAttr(int(value), 1)))


class FoldFromI64(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: t.FromI64Op, rewriter: PatternRewriter):
        if isinstance(value := constant_value(op.operand), int):
            rewriter.replace(op, t.ConstantIntOp(value))


class FoldToI64(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: t.ToI64Op, rewriter: PatternRewriter):
        if isinstance(value := constant_value(op.operand), int):
            rewriter.replace(op, arith.ConstantOp(builtin.IntegerAttr(value, 64)))


class UpstreamCanonicalization(RewritePattern):
    """xDSL's canonicalization patterns (constant `scf.if`, zero-trip `scf.for`, `arith`),
    minus `RehoistConstInLoops`: it asks `has_trait(ConstantLike)`, which unregistered ops
    answer True, and so would hoist torch ops that read the loop's carries out of the loop."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        patterns = [
            pattern
            for trait in op.get_traits_of_type(HasCanonicalizationPatternsTrait)
            for pattern in trait.get_patterns(type(op))
            if not isinstance(pattern, RehoistConstInLoops)
        ]
        if patterns:
            GreedyRewritePatternApplier(patterns).match_and_rewrite(op, rewriter)


class RemoveDeadTorchOp(RewritePattern):
    """Torch ops have value semantics: an unused result means an unneeded op.
    (xDSL's DCE keeps unregistered ops, whose effects it cannot know.)"""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        name = _name(op)
        if not name.startswith(("torch.", "torch_c.", "dycl.")) or name in _EFFECTFUL_OPS:
            return
        if op.regions or any(r.uses for r in op.results) or _in_terminator_position(op):
            return
        rewriter.erase_op(op)


def _in_terminator_position(op: Operation) -> bool:
    """`op` ends a block that needs a terminator: it is one (`torch.prim.If.yield`) or
    stands where one should be (an unknown op instead of `func.return`); erasing it left
    an empty block that does not verify."""
    block = op.parent_block()
    if block is None or block.last_op is not op:
        return False
    parent = block.parent_op()
    return parent is None or not parent.has_trait(NoTerminator, value_if_unregistered=False)


@dataclass(frozen=True)
class ConstPropPass(ModulePass):
    name: ClassVar[str] = "dycl-const-prop"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        patterns = GreedyRewritePatternApplier(
            [
                FoldHostScalarOp(),
                FoldToI1(),
                FoldFromI64(),
                FoldToI64(),
                UpstreamCanonicalization(),
                RemoveDeadTorchOp(),
            ],
            ctx=ctx,
            folding_enabled=True,
        )
        PatternRewriteWalker(patterns, post_walk_func=region_dce).rewrite_module(op)
