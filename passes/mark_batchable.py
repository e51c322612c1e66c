"""dycl-mark-batchable: mark the sub-DNNs whose calls `run_many` may batch along dim 0.

A sub-DNN is batchable when the rows of dim 0 of its inputs go through it independently:
concatenating several requests' inputs along dim 0 then gives each request's own results
as its rows of the outputs. Proved op by op, forward from the arguments: every argument
carries the rows at dim 0 (of one static size, the same for all inputs and outputs); an
op that reads a carrier must have a `rows` rule in the op registry
(`dycl.dialects.torch_ops`) that holds for its constant arguments, and then its results
carry the rows; ops that read no carrier (weights, constants) are shared by every row.
Every result must carry the rows. Anything else, including a gate kept inside the
sub-DNN (`scf.if`: one condition cannot serve a batch), leaves the sub-DNN unmarked,
and it runs request by request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Operation, SSAValue

from dycl.dialects import torch as t
from dycl.dialects.dycl import BATCHABLE_ATTR, is_subdnn
from dycl.dialects.torch_ops import LIST_CONSTRUCT, LIST_UNPACK, op_info
from dycl.passes._common import tensor_bytes
from xdsl.passes import ModulePass

# List ops that only regroup values: a list of carriers is a carrier.
_REGROUPING = frozenset({LIST_CONSTRUCT, LIST_UNPACK, "torch.prim.TupleConstruct", "torch.prim.TupleUnpack"})


def dim0(value: SSAValue) -> int | None:
    type_ = value.type
    if isinstance(type_, t.ValueTensorType) and type_.shape and type_.shape[0] is not None and type_.shape[0] >= 0:
        return type_.shape[0]
    return None


def batch_rows(function: func.FuncOp) -> int | None:
    """The rows each call's inputs carry at dim 0 if the sub-DNN maps them independently, else None."""
    block = function.body.block
    sizes = {dim0(arg) for arg in block.args}
    if not block.args or len(sizes) != 1 or None in sizes:
        return None
    carriers: set[SSAValue] = set(block.args)
    for op in block.ops:
        if isinstance(op, func.ReturnOp):
            outputs = list(op.operands)
            if outputs and all(v in carriers for v in outputs) and {dim0(v) for v in outputs} == sizes:
                return sizes.pop()
            return None
        if op.regions:
            return None  # a kept gate (scf.if) or a loop: one condition for the whole batch
        if not maps_rows(op, [v in carriers for v in op.operands]):
            return None
        if any(v in carriers for v in op.operands):
            carriers.update(op.results)
    return None


def peak_row_bytes(function: func.FuncOp, rows: int) -> int:
    """The largest tensor carrying the rows that a batchable sub-DNN computes, in bytes per
    row: how much each row adds to a batched call's working set (`run_many` keeps calls
    in cache). Weights and what is computed from them alone are shared, not counted."""
    carriers: set[SSAValue] = set(function.body.block.args)
    peak = max((tensor_bytes(v.type) or 0 for v in carriers), default=0)
    for op in function.body.block.ops:
        if any(v in carriers for v in op.operands):
            carriers.update(op.results)
            peak = max([peak, *(tensor_bytes(v.type) or 0 for v in op.results)])
    return max(1, -(-peak // rows))


def maps_rows(op: Operation, carries: list[bool]) -> bool:
    if not any(carries):
        return True  # shared by every row
    name = op_info(op).name
    if name in _REGROUPING:
        return all(carries)  # a list mixing carriers with shared tensors: not proven
    rule = op_info(op).rows
    return rule is not None and rule(op, carries)


@dataclass(frozen=True)
class MarkBatchablePass(ModulePass):
    name: ClassVar[str] = "dycl-mark-batchable"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for function in op.ops:
            if not is_subdnn(function):
                continue
            if batch_rows(function) is not None:
                function.attributes[BATCHABLE_ATTR] = builtin.UnitAttr()
            else:
                function.attributes.pop(BATCHABLE_ATTR, None)
