"""dycl-hoist-free: move computation-free ops out of sub-DNNs into the host.

The graph optimisation of the DyCL paper. A sub-DNN should hold only work a compiler can
speed up; ops that only re-describe data are cheaper in the host (no runtime call, no
copy) and can empty a sub-DNN altogether. Each pattern matches a sub-DNN `func.func` and
rewrites it together with all its call sites:

- `ForwardArgResult`: a result that is one of the arguments -> the host uses the call
  operand;
- `HoistConstantResult`: a result that is a constant, literal or weight reference -> a
  clone in the host;
- `SinkFreeResult`: a result computed by a host-free op (identity copy, reshape, view;
  see `host_can_produce`) from another value -> the host applies the op to that value
  (which becomes the result instead);
- `HoistFreeArgument`: an argument read only by a host-free op -> the host applies the op
  before the call and passes its result;
- `RemoveUnusedResult` / `RemoveUnusedArgument`: no call site reads it / no op reads it;
- `DropEmptySubDNN`: a sub-DNN with no results left (or no call site) is removed.

"Host-free" means the host produces the result without moving data: identity copies,
reshape-like views of a contiguous tensor, and permutations / selections / slices that keep
the memory order (they only move or drop size-1 dims, or take a contiguous leading block).
Constant operands (ints, lists of ints) are cloned along, and so are sizes computed from
the sizes of the sub-DNN's arguments (`x.view(1, x.size(0), 4, 64)` of a runtime dim), read
in the host from the call's operands. A reshape with a size computed from a tensor the
sub-DNN makes stays inside: hoisted, it would make the sub-DNN return that tensor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriter, PatternRewriteWalker
from xdsl.rewriter import InsertPoint

from dycl.dialects.torch_ops import Category, constant_value, op_info
from dycl.passes._common import (
    SubDNNPattern,
    call_sites,
    check_functions,
    clone_into,
    erase_dead_ops,
    indexed_calls,
    is_constant,
    is_size_operand,
    is_tensor,
    replaced_calls,
    size_leaves,
)


def host_can_produce(op: Operation) -> bool:
    """The op's result is its (contiguous) tensor operand's data seen through new
    metadata, in the same memory order: the host makes it without a kernel or a copy. Never
    an op with regions (a kept `scf.if`: its result is the taken arm's, computed inside).
    A reshape or copy is free whatever its sizes, and its sizes may be computed from the
    sizes of the sub-DNN's arguments (the host computes them from the call's operands); a
    strided view needs a static shape to show that it keeps the order."""
    if op.regions:
        return False
    info = op_info(op)
    if not info.category.computation_free or len(op.results) != 1 or not op.operands:
        return False
    source, *rest = op.operands
    if not is_tensor(source) or not all(_host_operand(v) for v in rest):
        return False
    shape = source.type.shape
    if shape is None or not is_tensor(op.results[0]):
        return False
    if info.category is not Category.STRIDED_VIEW:
        return True
    if None in shape or any(is_size_operand(v) for v in rest):
        return False
    keeps_order = info.same_memory_order
    return keeps_order is not None and keeps_order(shape, [constant_value(v) for v in rest], op)


def _host_operand(value: SSAValue) -> bool:
    """A constant, or a size computed from the sizes of the function's arguments only."""
    if is_tensor(value):
        return False
    if is_constant(value):
        return True
    leaves = size_leaves(value)
    return leaves is not None and all(isinstance(leaf, BlockArgument) for leaf in leaves)


# ------------------------------------------------------------- call-site helpers


def _return_op(fn: func.FuncOp) -> func.ReturnOp:
    ret = fn.body.block.last_op
    assert isinstance(ret, func.ReturnOp)
    return ret


def set_results(
    rewriter: PatternRewriter,
    fn: func.FuncOp,
    returned: Sequence[SSAValue],
    old_index: Sequence[int | None],
) -> list[func.CallOp]:
    """Make `fn` return `returned`; result i of each call is the old result `old_index[i]`
    (None: a new result). Old results not kept must have no uses left."""
    rewriter.replace(_return_op(fn), func.ReturnOp(*returned))
    fn.update_function_type()
    types = [v.type for v in returned]
    new_calls = []
    for call in call_sites(fn):
        new = func.CallOp(call.callee, call.arguments, types)
        keep: list[SSAValue | None] = [None] * len(call.results)
        for i, k in enumerate(old_index):
            if k is not None:
                keep[k] = new.results[i]
                new.results[i].name_hint = call.results[k].name_hint
        rewriter.replace(call, new, new_results=keep)
        new_calls.append(new)
    replaced_calls(fn, new_calls)
    erase_dead_ops(fn.body.block, rewriter)  # what only the dropped results read
    return new_calls


def drop_results(rewriter: PatternRewriter, fn: func.FuncOp, dropped: set[int]) -> None:
    returned = _return_op(fn).operands
    kept = [k for k in range(len(returned)) if k not in dropped]
    set_results(rewriter, fn, [returned[k] for k in kept], kept)


def _clone_before(
    rewriter: PatternRewriter,
    op: Operation,
    where: InsertPoint,
    mapping: dict[SSAValue, SSAValue],
    call: func.CallOp,
) -> SSAValue:
    """`op`'s result in the host: a clone of `op` (and of the constants and sizes it
    reads, the sizes from `call`'s operands) at `where`, operands through `mapping`; an
    identity copy is just its source (tensors have value semantics, so a copy in the host
    would only move data)."""
    source = mapping[op.operands[0]]
    if op_info(op).category is Category.IDENTITY and source.type == op.results[0].type:
        return source
    built: list[Operation] = []
    for operand in op.operands:
        if operand in mapping or is_tensor(operand):
            continue
        for leaf in size_leaves(operand) or ():  # (block arguments: `_host_operand`)
            mapping.setdefault(leaf, call.arguments[leaf.index])
        clone_into(operand, mapping, built)
    clone = op.clone(value_mapper=mapping)
    rewriter.insert([*built, clone], where)
    return clone.results[0]


# --------------------------------------------------------------------- patterns


class ForwardArgResult(SubDNNPattern):
    def rewrite_subdnn(self, fn: func.FuncOp, rewriter: PatternRewriter) -> None:
        returned = _return_op(fn).operands
        forwarded = {
            k: v.index
            for k, v in enumerate(returned)
            if isinstance(v, BlockArgument) and v.block is fn.body.block
        }
        if not forwarded:
            return
        for call in call_sites(fn):
            for k, j in forwarded.items():
                call.results[k].replace_all_uses_with(call.arguments[j])
        drop_results(rewriter, fn, set(forwarded))


class HoistConstantResult(SubDNNPattern):
    def rewrite_subdnn(self, fn: func.FuncOp, rewriter: PatternRewriter) -> None:
        returned = _return_op(fn).operands
        constants = {k for k, v in enumerate(returned) if is_constant(v)}
        if not constants:
            return
        for call in call_sites(fn):
            mapping: dict[SSAValue, SSAValue] = {}
            built: list[Operation] = []
            for k in constants:
                value = clone_into(returned[k], mapping, built)
                value.name_hint = call.results[k].name_hint
                call.results[k].replace_all_uses_with(value)
            rewriter.insert(built, InsertPoint.before(call))
        drop_results(rewriter, fn, constants)


class SinkFreeResult(SubDNNPattern):
    """`return view(%v)` -> `return %v`, and the host applies the view after the call."""

    def rewrite_subdnn(self, fn: func.FuncOp, rewriter: PatternRewriter) -> None:
        ret = _return_op(fn)
        for op in fn.body.block.ops:
            if op is ret or not host_can_produce(op):
                continue
            if not op.results[0].uses or any(u.operation is not ret for u in op.results[0].uses):
                continue
            self.sink(fn, op, rewriter)
            return

    @staticmethod
    def sink(fn: func.FuncOp, op: Operation, rewriter: PatternRewriter) -> None:
        ret = _return_op(fn)
        source = op.operands[0]
        returned = list(ret.operands)
        if isinstance(source, BlockArgument):
            calls = call_sites(fn)
            sources = [call.arguments[source.index] for call in calls]
        else:
            if source not in returned:
                calls = set_results(rewriter, fn, [*returned, source],
                                    [*range(len(returned)), None])
                returned.append(source)
            else:
                calls = call_sites(fn)
            sources = [call.results[returned.index(source)] for call in calls]
        viewed = {k for k, v in enumerate(returned) if v is op.results[0]}
        for call, host_source in zip(calls, sources):
            value = _clone_before(rewriter, op, InsertPoint.after(call), {source: host_source}, call)
            for k in viewed:
                call.results[k].replace_all_uses_with(value)
        drop_results(rewriter, fn, viewed)


class HoistFreeArgument(SubDNNPattern):
    """`f(%a) { %v = view(%a) ... }` -> `f(view(%a)) { ... }` when only the view reads %a."""

    def rewrite_subdnn(self, fn: func.FuncOp, rewriter: PatternRewriter) -> None:
        for arg in fn.body.block.args:
            op = arg.get_user_of_unique_use()
            if op is None or op.operands[0] is not arg or not host_can_produce(op):
                continue
            if op.parent_block() is not fn.body.block:  # in a kept if's arm: runs only there
                continue
            if any(o is arg for o in op.operands[1:]):
                continue
            for call in call_sites(fn):
                value = _clone_before(
                    rewriter, op, InsertPoint.before(call), {arg: call.arguments[arg.index]}, call
                )
                operands = list(call.arguments)
                operands[arg.index] = value
                call.operands = operands
            new_arg = rewriter.replace_value_with_new_type(arg, op.results[0].type)
            rewriter.replace_all_uses_with(op.results[0], new_arg)
            rewriter.erase(op)
            erase_dead_ops(fn.body.block, rewriter)  # (the sizes only the op read)
            fn.update_function_type()
            return


class RemoveUnusedResult(SubDNNPattern):
    def rewrite_subdnn(self, fn: func.FuncOp, rewriter: PatternRewriter) -> None:
        calls = call_sites(fn)
        n = len(fn.function_type.outputs)
        unused = {k for k in range(n) if not any(c.results[k].uses for c in calls)}
        if unused and calls:
            drop_results(rewriter, fn, unused)


class RemoveUnusedArgument(SubDNNPattern):
    def rewrite_subdnn(self, fn: func.FuncOp, rewriter: PatternRewriter) -> None:
        unused = [a for a in fn.body.block.args if not a.uses]
        if not unused:
            return
        dropped = {a.index for a in unused}
        for call in call_sites(fn):
            call.operands = [v for j, v in enumerate(call.arguments) if j not in dropped]
        for arg in reversed(unused):
            rewriter.erase_block_argument(arg)
        fn.update_function_type()


class DropEmptySubDNN(SubDNNPattern):
    """No results (everything was hoisted or forwarded) or no callers: nothing to run."""

    def rewrite_subdnn(self, fn: func.FuncOp, rewriter: PatternRewriter) -> None:
        calls = call_sites(fn)
        if calls and fn.function_type.outputs.data:
            return
        for call in calls:
            rewriter.erase(call)
        rewriter.erase(fn)


def hoist_patterns() -> list[SubDNNPattern]:
    return [
        ForwardArgResult(),
        HoistConstantResult(),
        SinkFreeResult(),
        HoistFreeArgument(),
        RemoveUnusedResult(),
        RemoveUnusedArgument(),
        DropEmptySubDNN(),
    ]


@dataclass(frozen=True)
class HoistFreePass(ModulePass):
    name: ClassVar[str] = "dycl-hoist-free"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        check_functions(op)
        walker = PatternRewriteWalker(
            GreedyRewritePatternApplier(hoist_patterns()), walk_regions_first=False
        )
        with indexed_calls(op):  # (every pattern asks for its sub-DNN's calls at every visit)
            walker.rewrite_module(op)


__all__ = ["HoistFreePass", "host_can_produce", "hoist_patterns"]
