"""dycl-const-prop: fold constants, resolve control flow on constants, remove dead ops.

Folds the host-level scalar and list ops of the torch dialect (int arithmetic, comparisons,
conversions to bool, the length and items of constant lists, ...) with the Python semantics
their records in the op registry (`dialects/torch_ops.py`) give them, as the interpreter does, then lets xDSL's canonicalization resolve `scf.if`
on constant conditions, drop `scf.for` loops that never run and fold `arith`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
)
from xdsl.traits import HasCanonicalizationPatternsTrait, NoTerminator
from xdsl.transforms.canonicalization_patterns.scf import RehoistConstInLoops
from xdsl.transforms.dead_code_elimination import region_dce

from dycl.dialects.torch_ops import NO_VALUE, constant_value, materialize, op_info
from dycl.passes._common import is_dead


class FoldHostScalarOp(RewritePattern):
    """`torch.aten.add.int(2, 3)` -> `torch.constant.int 5`, and the like: any host
    scalar/list op (`op_info(op).python`) whose operands are constants, the torch_c casts
    between builtin and torch scalars included."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if len(op.results) != 1 or (fn := op_info(op).python) is None:
            return
        args = [constant_value(v) for v in op.operands]
        if any(a is NO_VALUE for a in args):
            return
        try:
            value = fn(*args)
        except Exception:  # e.g. an index out of range: leave it to run time
            return
        if (constant := materialize(value, op.results[0].type)) is not None:
            rewriter.replace(op, constant)


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
    """Torch ops have value semantics: an unused result means an unneeded op (`is_dead`)."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if is_dead(op) and not _in_terminator_position(op):
            rewriter.erase(op)


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
                UpstreamCanonicalization(),
                RemoveDeadTorchOp(),
            ],
            ctx=ctx,
            folding_enabled=True,
        )
        PatternRewriteWalker(patterns, post_walk_func=region_dce).rewrite_module(op)
