"""dycl-dedup: one function for structurally identical sub-DNNs.

Two sub-DNNs are identical when they have the same signature and the same ops in the same
order with the same operands, properties and attributes — `dycl.param` names included, so
by default only sub-DNNs that read the *same weights* merge (an unrolled loop body, a peeled
first iteration, a block called from both sides of a branch). Every call goes to the first
of them; the others are erased. Each merged function is compiled once downstream.

With `weights-as-args=true`, sub-DNNs that differ only in which weights they read merge too:
the weight references that differ become trailing arguments of the shared function, and
each call site passes its own `dycl.param` values from the host (the weights then leave the
static graph, so a backend can no longer fold them into the compiled code).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import SymbolRefAttr
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from dycl.dialects import torch as t
from dycl.dialects.dycl import ParamOp
from dycl.passes._common import calls_by_callee, subdnn_functions


def structure_key(fn: func.FuncOp, ignore_weight_names: bool) -> tuple[Any, list[ParamOp]]:
    """A hashable description of `fn`'s body up to value names (and, if asked, weight
    names), regions included (a kept `scf.if`'s arms); and the function's weight references
    in order."""
    numbering: dict[SSAValue, Any] = {arg: ("arg", arg.index) for arg in fn.body.block.args}
    params: list[ParamOp] = []
    counter = itertools.count()

    def describe(block: Block) -> tuple[Any, ...]:
        items: list[Any] = []
        for op in block.ops:
            attributes = op.attributes
            if isinstance(op, ParamOp):
                params.append(op)
                if ignore_weight_names:
                    attributes = {k: v for k, v in attributes.items() if k != "name"}
            regions = []
            for region in op.regions:
                blocks = []
                for inner in region.blocks:
                    for arg in inner.args:
                        numbering[arg] = ("block-arg", next(counter))
                    blocks.append((tuple(a.type for a in inner.args), describe(inner)))
                regions.append(tuple(blocks))
            items.append(
                (
                    t.op_name(op),
                    tuple(numbering[o] for o in op.operands),
                    tuple(r.type for r in op.results),
                    tuple(sorted(op.properties.items())),
                    tuple(sorted(attributes.items())),
                    tuple(regions),
                )
            )
            number = next(counter)
            for k, result in enumerate(op.results):
                numbering[result] = (number, k)
        return tuple(items)

    return (fn.function_type, describe(fn.body.block)), params


def _retarget(call: func.CallOp, callee: str,
              extra: list[tuple[str, Any]]) -> None:
    """Call `callee` instead, passing the weights `extra` reads as trailing arguments."""
    if not extra:
        call.properties["callee"] = SymbolRefAttr(callee)
        return
    refs: list[Operation] = [ParamOp(name, type_) for name, type_ in extra]
    Rewriter.insert_op(refs, InsertPoint.before(call))
    new = func.CallOp(callee, [*call.arguments, *(r.results[0] for r in refs)],
                      call.result_types)
    for old, res in zip(call.results, new.results):
        res.name_hint = old.name_hint
    Rewriter.replace_op(call, new)


@dataclass(frozen=True)
class MergeIdenticalSubDNNs:
    """Module-level: groups all sub-DNNs by structure, then merges each group."""

    weights_as_args: bool

    def apply(self, module: builtin.ModuleOp) -> None:
        groups: dict[Any, list[tuple[func.FuncOp, list[ParamOp]]]] = {}
        for fn in subdnn_functions(module):
            key, params = structure_key(fn, self.weights_as_args)
            groups.setdefault(key, []).append((fn, params))
        calls = calls_by_callee(module)
        for members in groups.values():
            if len(members) > 1:
                self.merge(members, calls)

    @staticmethod
    def merge(members, calls) -> None:
        keep, keep_params = members[0]
        # Weight positions whose names differ between members become arguments.
        varying = [
            i for i in range(len(keep_params))
            if len({m[1][i].weight_name for m in members}) > 1
        ]
        extras = {
            fn.sym_name.data: [(params[i].weight_name, params[i].result.type) for i in varying]
            for fn, params in members
        }
        if varying:
            block = keep.body.block
            for i in varying:
                op = keep_params[i]
                arg = block.insert_arg(op.result.type, len(block.args))
                arg.name_hint = "weight"
                op.result.replace_all_uses_with(arg)
                Rewriter.erase_op(op)
            keep.update_function_type()
        name = keep.sym_name.data
        for fn, params in members:
            extra = extras[fn.sym_name.data]
            for call in calls.get(fn.sym_name.data, []):
                _retarget(call, name, extra)
            if fn is not keep:
                Rewriter.erase_op(fn)


@dataclass(frozen=True)
class DedupPass(ModulePass):
    name: ClassVar[str] = "dycl-dedup"

    weights_as_args: bool = False
    """Also merge sub-DNNs that differ only in their weights, passing weights as arguments."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        MergeIdenticalSubDNNs(self.weights_as_args).apply(op)
