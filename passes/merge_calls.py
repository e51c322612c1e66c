"""dycl-merge-calls: one sub-DNN call where the host made two with no decision between them.

Every sub-DNN call costs a runtime call (an ONNX Runtime `run`, a Python frame, fresh
output arrays) and ends every fusion at its boundary. After dycl-outline each block's runs
are maximal, so back-to-back calls come from later rewrites (a view dycl-hoist-free moved
out, a branch dycl-const-prop folded) and from the pattern below that creates them on
purpose. Patterns, each on a `func.call` of a sub-DNN in a host function:

- `MergeAdjacentCalls`: `%a = call @f(...)`, then later in the same block `%b = call @g(...)`
  whose operands are `%a`, values defined before `@f`'s call, constants, or computation-free
  tensor ops (views, reshapes, copies with static shapes) of those. Both calls become one
  call of a new sub-DNN `@<prefix><k>` holding `@f`'s body, the views `@g` reads, and `@g`'s
  body, placed where `@f`'s call was (the second call is pure, so it may run earlier). Its
  results are `@g`'s and those of `@f` that anything else still reads; a view that the host
  also reads stays in the host too. Nothing the host computes, and no host decision, feeds
  the second call.
- `SinkCallIntoIf` (option `sink-into-branches`, default on): a call right after an
  `scf.if` (its operands are the `scf.if`'s results or values from before it) is cloned into
  both branches, before their `scf.yield`, and its results become new `scf.if` results — but
  only when a branch ends in a sub-DNN call that it can then merge with. This is the SkipNet
  shape: `if skip { yield %x } else { %y = call @block(%x); yield %y }; %g = call @gate(..)`
  becomes `if skip { %g1 = call @gate(%x) } else { %y, %g2 = call @block_gate(%x) }`: one
  call fewer on every path that runs the block, one more copy of the gate in the artifact.

Sub-DNNs left without callers are erased. Each merged sub-DNN is a new function (the
originals may still be called elsewhere); dycl-dedup afterwards shares identical ones.
In dycl-pipeline only with `merge-calls=true`: fewer calls did not mean faster inference
on the zoo at 2 threads (docs/bench.md, "Closing the gap to the oracle").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, func, scf
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from dycl.dialects.torch_ops import is_computation_free
from dycl.passes._common import (
    call_sites,
    check_functions,
    clone_into,
    is_constant,
    is_static_tensor_type,
    is_subdnn,
    is_tensor,
    is_tensor_compute,
    mark_subdnn,
)


# ------------------------------------------------------------------------ helpers


def _module(op: Operation) -> builtin.ModuleOp | None:
    while op is not None and not isinstance(op, builtin.ModuleOp):
        op = op.parent_op()
    return op


def _host_function(op: Operation) -> func.FuncOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    return parent


def subdnn_callee(call: Operation, module: builtin.ModuleOp | None = None) -> func.FuncOp | None:
    """The sub-DNN `call` calls, if it is a `func.call` of one from a host function."""
    if not isinstance(call, func.CallOp):
        return None
    host = _host_function(call)
    if host is None or is_subdnn(host):
        return None
    module = module or _module(call)
    if module is None:
        return None
    name = call.callee.root_reference.data
    callee = next((op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == name), None)
    return callee if callee is not None and is_subdnn(callee) else None


def is_absorbable(op: Operation) -> bool:
    """A computation-free tensor op a sub-DNN can hold: a view, reshape or copy whose tensor
    operands and results all have static shapes, other operands constants."""
    if not is_computation_free(op) or not is_tensor_compute(op):
        return False
    return all(is_static_tensor_type(v.type) for v in (*op.operands, *op.results) if is_tensor(v))


def _ops_between(first: Operation, last: Operation) -> list[Operation] | None:
    """The ops strictly between two ops of one block; None if `last` does not follow `first`."""
    ops = []
    op = first.next_op
    while op is not last:
        if op is None:
            return None
        ops.append(op)
        op = op.next_op
    return ops


def _fresh_name(module: builtin.ModuleOp, prefix: str) -> str:
    taken = {op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)}
    k = 0
    while f"{prefix}{k}" in taken:
        k += 1
    return f"{prefix}{k}"


def _inline_body(callee: func.FuncOp, args: Iterable[SSAValue], builder: list[Operation]) -> list[SSAValue]:
    """Append clones of `callee`'s body (its arguments bound to `args`) to `builder`;
    return the values it returns."""
    mapping: dict[SSAValue, SSAValue] = dict(zip(callee.body.block.args, args, strict=True))
    ret = callee.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    for op in callee.body.block.ops:
        if op is ret:
            break
        clone = op.clone(value_mapper=mapping)
        builder.append(clone)
        mapping.update(zip(op.results, clone.results))
    return [mapping[v] for v in ret.operands]


# ----------------------------------------------------------------- the merge plan


@dataclass
class MergePlan:
    first: func.CallOp
    second: func.CallOp
    absorbed: list[Operation]
    """Views between the calls that the second reads (in block order): cloned inside."""
    erased: set[Operation]
    """Absorbed views nobody else reads: erased from the host."""


def plan_merge(first: func.CallOp, second: func.CallOp) -> MergePlan | None:
    """Whether `second` can join `first` (same block, `first` earlier), and with which views."""
    if first.parent_block() is not second.parent_block() or first is second:
        return None
    between = _ops_between(first, second)
    if between is None:
        return None
    span = set(between)
    firsts = set(first.results)
    absorbed: set[Operation] = set()

    def available(value: SSAValue) -> bool:
        if value in firsts or is_constant(value):
            return True
        owner = value.owner
        if not isinstance(owner, Operation) or owner not in span:
            return True  # defined before the first call (or a block argument): dominates it
        if owner in absorbed:
            return True
        if not is_absorbable(owner):
            return False
        if not all(available(v) for v in owner.operands):
            return False
        absorbed.add(owner)
        return True

    if not all(available(v) for v in second.arguments):
        return None
    # Users outside the merge keep a host copy; a view only the second call (or other
    # erased views) reads is erased.
    erased: set[Operation] = set()
    changed = True
    while changed:
        changed = False
        for op in absorbed - erased:
            if all(use.operation is second or use.operation in erased for r in op.results for use in r.uses):
                erased.add(op)
                changed = True
    ordered = [op for op in between if op in absorbed]
    return MergePlan(first, second, ordered, erased)


def merge(plan: MergePlan, rewriter: PatternRewriter, prefix: str) -> func.CallOp:
    """Replace the two calls of `plan` by one call of a new sub-DNN (at the first's place)."""
    first, second = plan.first, plan.second
    module = _module(first)
    assert module is not None
    f, g = subdnn_callee(first, module), subdnn_callee(second, module)
    assert f is not None and g is not None
    firsts = set(first.results)
    inside = set(plan.absorbed)

    # Arguments: the first call's, then what the second (and its views) read from outside.
    arguments: list[SSAValue] = []
    for value in first.arguments:
        if value not in arguments:
            arguments.append(value)
    for value in (*second.arguments, *(v for op in plan.absorbed for v in op.operands)):
        if value in firsts or value in arguments or is_constant(value) or not is_tensor(value):
            continue
        if isinstance(value.owner, Operation) and value.owner in inside:
            continue
        arguments.append(value)

    block = Block(arg_types=[v.type for v in arguments])
    for arg, value in zip(block.args, arguments):
        arg.name_hint = value.name_hint
    mapping: dict[SSAValue, SSAValue] = dict(zip(arguments, block.args))
    ops: list[Operation] = []
    f_results = _inline_body(f, [mapping[v] for v in first.arguments], ops)
    mapping.update(zip(first.results, f_results))
    for op in plan.absorbed:
        for operand in op.operands:
            if operand not in mapping and is_constant(operand):
                clone_into(operand, mapping, ops)
        clone = op.clone(value_mapper=mapping)
        ops.append(clone)
        mapping.update(zip(op.results, clone.results))
    g_args = []
    for value in second.arguments:
        if value not in mapping and is_constant(value):
            clone_into(value, mapping, ops)
        g_args.append(mapping[value])
    g_results = _inline_body(g, g_args, ops)

    dropped = {second, *plan.erased}
    kept_firsts = [
        k for k, r in enumerate(first.results)
        if any(use.operation not in dropped for use in r.uses)
    ]
    returned = [f_results[k] for k in kept_firsts] + g_results
    ops.append(func.ReturnOp(*returned))
    block.add_ops(ops)

    name = _fresh_name(module, prefix)
    fn = func.FuncOp(name, ([v.type for v in arguments], [v.type for v in returned]),
                     Region(block), visibility="private")
    mark_subdnn(fn)
    module.body.block.add_op(fn)

    call = func.CallOp(name, arguments, [v.type for v in returned])
    rewriter.insert(call, InsertPoint.before(first))
    new_firsts = call.results[: len(kept_firsts)]
    new_seconds = call.results[len(kept_firsts):]
    for k, new in zip(kept_firsts, new_firsts):
        new.name_hint = first.results[k].name_hint
        first.results[k].replace_uses_with_if(new, lambda use: use.operation not in dropped)
    for old, new in zip(second.results, new_seconds):
        new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    rewriter.erase(second, safe_erase=False)
    for op in reversed(plan.absorbed):
        if op in plan.erased:
            rewriter.erase(op, safe_erase=False)
    rewriter.erase(first, safe_erase=False)
    for callee in {f, g}:
        if not call_sites(callee):
            rewriter.erase(callee)
    return call


# --------------------------------------------------------------------- patterns


@dataclass(frozen=True)
class MergeAdjacentCalls(RewritePattern):
    """The second of two sub-DNN calls joins the first (see the module docstring)."""

    prefix: str = "subdnn_"

    @op_type_rewrite_pattern
    def match_and_rewrite(self, second: func.CallOp, rewriter: PatternRewriter):
        if subdnn_callee(second) is None:
            return
        first = second.prev_op
        while first is not None and subdnn_callee(first) is None:
            first = first.prev_op
        if first is None:
            return
        plan = plan_merge(first, second)
        if plan is not None:
            merge(plan, rewriter, self.prefix)


def _ends_in_call(block: Block) -> bool:
    """The block's last op before its terminator, past constants and views, is a sub-DNN call."""
    op = block.last_op.prev_op if block.last_op is not None else None
    while op is not None and (all(is_constant(r) for r in op.results) and op.results or is_absorbable(op)):
        op = op.prev_op
    return op is not None and subdnn_callee(op) is not None


class SinkCallIntoIf(RewritePattern):
    """A call after an `scf.if` moves into both branches when one of them ends in a call."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, call: func.CallOp, rewriter: PatternRewriter):
        if subdnn_callee(call) is None:
            return
        branch = call.prev_op
        operands = set(call.arguments)
        while branch is not None and not isinstance(branch, scf.IfOp):
            if branch.regions or operands & set(branch.results):
                return
            branch = branch.prev_op
        if branch is None or not branch.false_region.blocks or not branch.true_region.blocks:
            return
        if not any(_ends_in_call(region.block) for region in (branch.true_region, branch.false_region)):
            return
        results = list(branch.results)
        for region in (branch.true_region, branch.false_region):
            yield_op = region.block.last_op
            assert isinstance(yield_op, scf.YieldOp)
            mapping = dict(zip(results, yield_op.operands))
            clone = func.CallOp(call.callee, [mapping.get(v, v) for v in call.arguments],
                                [r.type for r in call.results])
            for old, new in zip(call.results, clone.results):
                new.name_hint = old.name_hint
            rewriter.insert(clone, InsertPoint.before(yield_op))
            rewriter.replace(yield_op, scf.YieldOp(*yield_op.operands, *clone.results))
        new_if = scf.IfOp(
            branch.cond,
            [*(r.type for r in branch.results), *(r.type for r in call.results)],
            rewriter.move_region_contents_to_new_regions(branch.true_region),
            rewriter.move_region_contents_to_new_regions(branch.false_region),
        )
        rewriter.insert(new_if, InsertPoint.before(branch))
        for old, new in zip((*branch.results, *call.results), new_if.results):
            new.name_hint = old.name_hint
            old.replace_all_uses_with(new)
        rewriter.erase(call)
        rewriter.erase(branch)


@dataclass(frozen=True)
class MergeCallsPass(ModulePass):
    name: ClassVar[str] = "dycl-merge-calls"

    sink_into_branches: bool = True
    """Also move a call that follows an `scf.if` into its branches when that lets it merge."""

    prefix: str = "subdnn_"
    """Merged sub-DNNs are named `<prefix><k>` (the first free k)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        check_functions(op)
        patterns: list[RewritePattern] = [MergeAdjacentCalls(self.prefix)]
        if self.sink_into_branches:
            patterns.append(SinkCallIntoIf())
        PatternRewriteWalker(GreedyRewritePatternApplier(patterns)).rewrite_module(op)


__all__ = ["MergeCallsPass", "MergeAdjacentCalls", "SinkCallIntoIf", "plan_merge"]
