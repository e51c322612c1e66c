"""dycl-split-batchable: split what reads the whole batch out of a row-wise sub-DNN.

An SDN block's sub-DNN computes the block (row by row) and also its exit test
`softmax(logits).max() >= t`, a 0-d value that reads the whole batch: dycl-mark-batchable
refuses it, and `run_many` ran every block request by request. This pass splits such a
sub-DNN `@f` in two:

- `@f` keeps the ops that map the rows of dim 0 independently (the `rows` rules of the op
  registry, as dycl-mark-batchable proves them), and returns the row values the rest reads;
- `@f_per_request` computes the other results (the 0-d test, what reads it) from those
  row values and from `@f`'s arguments that carry no rows.

Each call `func.call @f(...)` becomes the two calls. The split only regroups ops into two
functions, so it is sound whatever the ops; whether `@f` batches is still
dycl-mark-batchable's proof. A sub-DNN is split when its row part is where most of the
work is (at least as many multiply-accumulates as the rest; some), it has no region (a
kept gate), and every value that crosses from one part to the other is a tensor with the
rows at dim 0. One request at a time the split costs a backend call per block, so
`dycl.compile` runs it only on the form of the program that `run_many` runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, auto
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker
from xdsl.rewriter import InsertPoint

from dycl.dialects import torch as t
from dycl.dialects.dycl import BATCHABLE_ATTR
from dycl.dialects.torch_ops import op_macs
from dycl.passes._common import SubDNNPattern, append_clone, call_sites, clone_into
from dycl.passes.mark_batchable import dim0, maps_rows

PER_REQUEST_SUFFIX = "_per_request"


class Part(Enum):
    ROWS = auto()  # carries the rows of dim 0
    SHARED = auto()  # reads no argument: weights, constants, what is computed from them
    WHOLE = auto()  # reads the whole batch (or an argument that carries no rows)


@dataclass
class Split:
    """Which part each value belongs to, and what crosses from the row part to the rest."""

    parts: dict[SSAValue, Part]
    args: list[SSAValue]
    row_args: list[SSAValue]
    whole_args: list[SSAValue]
    row_ops: list[Operation]
    whole_ops: list[Operation]
    crossing: list[SSAValue]  # row values the per-request part reads
    row_results: list[SSAValue]  # what the row part returns: returned or crossing, not arguments

    def part(self, value: SSAValue) -> Part:
        return self.parts.get(value, Part.SHARED)


def row_split(function: func.FuncOp) -> Split | None:
    """How `function` splits into a row part and a per-request part, or None if it does not."""
    block = function.body.block
    rows = next((dim0(a) for a in block.args if dim0(a) is not None), None)
    if rows is None:
        return None
    parts: dict[SSAValue, Part] = {a: Part.ROWS if dim0(a) == rows else Part.WHOLE for a in block.args}
    split = Split(parts, list(block.args), [a for a in block.args if parts[a] is Part.ROWS],
                  [a for a in block.args if parts[a] is Part.WHOLE], [], [], [], [])
    returned = block.last_op
    for op in block.ops:
        if op is returned:
            break
        if op.regions:
            return None  # a kept gate: one condition for the whole batch
        operand_parts = [split.part(v) for v in op.operands]
        if Part.WHOLE in operand_parts:
            part = Part.WHOLE
        elif Part.ROWS not in operand_parts:
            part = Part.SHARED
        else:
            part = Part.ROWS if maps_rows(op, [p is Part.ROWS for p in operand_parts]) else Part.WHOLE
        if part is Part.SHARED:
            continue
        parts.update(dict.fromkeys(op.results, part))
        (split.row_ops if part is Part.ROWS else split.whole_ops).append(op)
    assert isinstance(returned, func.ReturnOp)
    if not split.whole_ops or not any(parts.get(v) is Part.WHOLE for v in returned.operands):
        return None  # nothing reads the whole batch (mark-batchable decides), or only arguments do
    for op in split.whole_ops:
        split.crossing.extend(v for v in op.operands if split.part(v) is Part.ROWS and v not in split.crossing)
    returned_rows = [v for v in returned.operands if split.part(v) is Part.ROWS]
    split.row_results = [v for v in dict.fromkeys([*returned_rows, *split.crossing]) if v not in split.row_args]
    if not split.row_results or not all(
        isinstance(v.type, t.ValueTensorType) and dim0(v) == rows for v in split.row_results
    ):
        return None  # nothing computed row by row is used, or a crossing value carries no rows
    row_macs, whole_macs = _macs(split.row_ops), _macs(split.whole_ops)
    if row_macs == 0 or row_macs < whole_macs:
        return None  # batching the row part would not pay for a second call
    return split


def _macs(ops: list[Operation]) -> int:
    """Multiply-accumulates, as `dycl.backends.cost.estimated_macs` counts them."""
    return sum(op_macs(op) for op in ops)


def _build(name: str, template: func.FuncOp, inputs: list[SSAValue], ops: list[Operation],
           outputs: list[SSAValue]) -> func.FuncOp:
    """A sub-DNN `name` (with `template`'s attributes) that computes `outputs` from
    `inputs` by `ops`, cloning the shared values they read (weights, constants)."""
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = {}
    for old, new in zip(inputs, block.args):
        new.name_hint = old.name_hint
        mapping[old] = new
    body: list[Operation] = []
    for op in ops:
        for operand in op.operands:
            clone_into(operand, mapping, body)
        append_clone(op, mapping, body)
    results = [clone_into(v, mapping, body) for v in outputs]
    body.append(func.ReturnOp(*results))
    block.add_ops(body)
    function = func.FuncOp(name, ([v.type for v in inputs], [v.type for v in results]), Region(block),
                           visibility=template.sym_visibility)
    function.attributes.update({k: v for k, v in template.attributes.items() if k != BATCHABLE_ATTR})
    return function


@dataclass(frozen=True)
class SplitWholeBatchResults(SubDNNPattern):
    def rewrite_subdnn(self, fn: func.FuncOp, rewriter: PatternRewriter) -> None:
        if fn.sym_name.data.endswith(PER_REQUEST_SUFFIX):
            return  # already the rest of a split
        split = row_split(fn)
        if split is None:
            return
        name = fn.sym_name.data
        returned = fn.body.block.last_op
        assert returned is not None
        row_outputs = split.row_results
        whole_inputs = [*split.crossing, *split.whole_args]
        whole_outputs = [v for v in returned.operands if split.part(v) is not Part.ROWS]
        rows_fn = _build(name, fn, split.row_args, split.row_ops, row_outputs)
        rest_fn = _build(name + PER_REQUEST_SUFFIX, fn, whole_inputs, split.whole_ops, whole_outputs)
        for call in call_sites(fn):
            _split_call(call, split, rows_fn, rest_fn, row_outputs, whole_inputs, list(returned.operands), rewriter)
        rewriter.insert(rest_fn, InsertPoint.after(fn))
        rewriter.insert(rows_fn, InsertPoint.after(fn))
        rewriter.erase(fn)


def _split_call(call: func.CallOp, split: Split, rows_fn: func.FuncOp, rest_fn: func.FuncOp,
                row_outputs: list[SSAValue], whole_inputs: list[SSAValue], returned: list[SSAValue],
                rewriter: PatternRewriter) -> None:
    args = dict(zip(split.args, call.arguments))
    rows_call = func.CallOp(rows_fn.sym_name.data, [args[a] for a in split.row_args], rows_fn.function_type.outputs.data)
    values = {**args, **dict(zip(row_outputs, rows_call.results))}
    rest_call = func.CallOp(rest_fn.sym_name.data, [values[v] for v in whole_inputs], rest_fn.function_type.outputs.data)
    whole_results = iter(rest_call.results)
    for old, value in zip(call.results, returned):
        new = values[value] if split.part(value) is Part.ROWS else next(whole_results)
        if new.owner in (rows_call, rest_call):  # (not an argument passed through)
            new.name_hint = old.name_hint
        old.replace_all_uses_with(new)
    rewriter.insert(rows_call, InsertPoint.before(call))
    rewriter.insert(rest_call, InsertPoint.before(call))
    rewriter.erase(call)


@dataclass(frozen=True)
class SplitBatchablePass(ModulePass):
    name: ClassVar[str] = "dycl-split-batchable"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(SplitWholeBatchResults(), apply_recursively=False).rewrite_module(op)
