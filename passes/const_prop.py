"""dycl-const-prop: fold constants, resolve control flow on constants, remove dead ops.

Folds the host-level scalar and list ops of the torch dialect (int arithmetic, comparisons,
conversions to bool, the length and items of constant lists, ...) with the Python semantics
their records in the op registry (`dialects/torch_ops.py`) give them, as the interpreter does, then lets xDSL's canonicalization resolve `scf.if`
on constant conditions, drop `scf.for` loops that never run and fold `arith`. Ops nothing
reads go (torch ops have value semantics), and so do the carries of an `scf.while` that
nothing reads but their own next value (`RemoveDeadWhileCarry`).
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
from xdsl.traits import HasCanonicalizationPatternsTrait, NoTerminator
from xdsl.transforms.canonicalization_patterns.scf import RehoistConstInLoops
from xdsl.transforms.dead_code_elimination import region_dce, would_be_trivially_dead

from dycl.dialects.torch_ops import NO_VALUE, constant_value, has_value_semantics, materialize, op_info
from dycl.passes._common import free_values, is_dead


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


class RemoveDeadWhileCarry(RewritePattern):
    """A value an `scf.while` carries that nothing reads but its own next value: its
    initial value, block arguments, result and the ops that only compute it go. gpt-fast's
    `decode_n_tokens` appends each step's `probs` to a list its caller discards
    (`generated_tokens, _ = ...`): kept, every token would grow that list on the host and
    make the step's sub-DNN return the probabilities for it. Liveness is taken over both
    regions to a fixed point (a carry read only to compute another dead one is dead too);
    an op with regions or effects keeps everything it reads."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: scf.WhileOp, rewriter: PatternRewriter, /):
        before, after = op.before_region.block, op.after_region.block
        condition, yielded = before.last_op, after.last_op
        if not isinstance(condition, scf.ConditionOp) or not isinstance(yielded, scf.YieldOp):
            return
        live_before: set[int] = set()
        live_after = {j for j, r in enumerate(op.results) if r.uses}
        while True:
            reads_before = _live_values(before, [condition.condition, *(condition.args[j] for j in live_after)])
            reads_after = _live_values(after, [yielded.arguments[i] for i in live_before])
            grown_before = live_before | {i for i, a in enumerate(before.args) if a in reads_before}
            grown_after = live_after | {j for j, a in enumerate(after.args) if a in reads_after}
            if (grown_before, grown_after) == (live_before, live_after):
                break
            live_before, live_after = grown_before, grown_after
        if len(live_before) == len(before.args) and len(live_after) == len(after.args):
            return
        rewriter.replace(condition, scf.ConditionOp(
            condition.condition, *(v for j, v in enumerate(condition.args) if j in live_after)))
        rewriter.replace(yielded, scf.YieldOp(*(v for i, v in enumerate(yielded.arguments) if i in live_before)))
        for block, reads in ((before, reads_before), (after, reads_after)):
            for dead in [o for o in reversed(block.ops) if o is not block.last_op and _removable(o)
                         and not any(r in reads for r in o.results)]:
                rewriter.erase(dead)
        for i in sorted(set(range(len(before.args))) - live_before, reverse=True):
            rewriter.erase_block_argument(before.args[i])
        for j in sorted(set(range(len(after.args))) - live_after, reverse=True):
            rewriter.erase_block_argument(after.args[j])
        kept = sorted(live_after)
        regions = [op.detach_region(region) for region in (op.before_region, op.after_region)]
        new = scf.WhileOp([v for i, v in enumerate(op.arguments) if i in live_before],
                          [op.results[j].type for j in kept], *regions)
        rewriter.replace(op, new, [new.results[kept.index(j)] if j in live_after else None
                                   for j in range(len(op.results))])


def _removable(op: Operation) -> bool:
    return not op.regions and (has_value_semantics(op) or would_be_trivially_dead(op))


def _live_values(block: Block, roots: list[SSAValue]) -> set[SSAValue]:
    """What `block` reads to compute `roots` and its ops that cannot be removed."""
    live = set(roots)
    for op in reversed(block.ops):
        if op is block.last_op:
            continue
        if not _removable(op) or any(r in live for r in op.results):
            live.update(op.operands)
            if op.regions:
                live.update(free_values(op))
    return live


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
                RemoveDeadWhileCarry(),
            ],
            ctx=ctx,
            folding_enabled=True,
        )
        PatternRewriteWalker(patterns, post_walk_func=region_dce).rewrite_module(op)
