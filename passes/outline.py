"""dycl-outline: move every maximal conditional-free run of tensor ops into a sub-DNN.

In each block of a host function (the function body and every `scf` region), consecutive
tensor compute ops form a run; constants between them do not break it (they are cloned into
the sub-DNN that uses them, `dycl.param` weight references included), and neither do
host-level scalar/list ops, which either stay before the call (when they do not read the
run) or move after it. A run ends at a control op, at the block's terminator, or at a
tensor op that reads a host value computed from the run.

A size computed from tensor sizes alone (`torch.aten.size.int` and `+ - *` of such ints:
the `[1, prompt.size(0), 4, 64]` of a view when the prompt's length is a runtime dim) does
not end a run either: the sub-DNN computes it again from the tensors it reads the sizes
of (they become live-ins if the run does not make them), as its backend computes a
symbolic dim, and the host ops that computed it for the run alone go with it. Left in the
host, each such view would split the run, with a backend call on each side.

Each run becomes `func.func private @<prefix><k>` with the unit attribute `dycl.subdnn`:
live-in tensors are its arguments, live-out tensors its results, every shape known or a
symbolic dim. The run is replaced by a `func.call` placed after its last op. A tensor condition
(`torch.aten.Bool.Tensor` of a 0-d bool tensor) stays in the host, so the 0-d tensor the
run computes becomes a result: the host only reads a flag.

An `scf.if` marked `dycl.keep` (dycl-keep-branches) is tensor compute: it joins the run
whole, arms included, with its condition chain (`Bool.Tensor` + `to_i1`) cloned in; what
its arms read from outside it becomes live-in (tensors) or is cloned in (constants).

Not outlined: host scalar/list ops, `torch.tensor_static_info_cast` (type information only),
tensor ops that read any other non-constant scalar (they stay host ops), and runs shorter than
`min-ops` that are computation-free. Errors (an op with regions that is not `scf`, a shape
the entry shapes do not determine) are located diagnostics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from dycl.dialects import torch as t
from dycl.dialects.dycl import is_kept_if
from dycl.dialects.torch_ops import is_computation_free
from dycl.passes._common import (
    CONSTANT_OPS,
    CONTROL_OPS,
    append_clone,
    clone_into,
    condition_chain,
    erase_dead_ops,
    error,
    format_type,
    free_values,
    host_functions,
    is_constant,
    is_size_operand,
    is_tensor,
    is_tensor_compute,
    kept_if_of_chain,
    mark_subdnn,
    op_operand_values,
    tensor_list_operand,
)


@dataclass
class Run:
    """A conditional-free run of tensor ops in one block."""

    ops: list[Operation] = field(default_factory=list)
    values: set[SSAValue] = field(default_factory=set)
    deferred: list[tuple[Operation, int]] = field(default_factory=list)
    """Host ops inside the run's span that read it (with the run's length then)."""
    deferred_values: set[SSAValue] = field(default_factory=set)

    def add(self, op: Operation) -> None:
        self.ops.append(op)
        self.values.update(op.results)

    def defer(self, op: Operation) -> None:
        self.deferred.append((op, len(self.ops)))
        self.deferred_values.update(op.results)

    def deferred_before_last(self) -> list[Operation]:
        """Deferred host ops placed before the run's last op: they move after the call."""
        return [op for op, length in self.deferred if length < len(self.ops)]

    def reads_run(self, op: Operation) -> bool:
        return any(
            v in self.values or v in self.deferred_values for v in op_operand_values(op)
        )

    def reads_deferred(self, op: Operation) -> bool:
        return any(v in self.deferred_values for v in op_operand_values(op, sizes=True))


@dataclass
class Outliner:
    module: builtin.ModuleOp
    min_ops: int
    prefix: str
    counter: int = 0
    created: list[func.FuncOp] = field(default_factory=list)

    def __post_init__(self) -> None:
        taken = {
            op.sym_name.data for op in self.module.ops if isinstance(op, func.FuncOp)
        }
        self.taken = taken

    def fresh_name(self) -> str:
        while f"{self.prefix}{self.counter}" in self.taken:
            self.counter += 1
        name = f"{self.prefix}{self.counter}"
        self.taken.add(name)
        return name

    # ---------------------------------------------------------------- scanning

    def extend(self, run: Run, op: Operation) -> Run:
        """`op` joins the current run, or a new one when it reads a value the host computes
        after the run began (the run so far is outlined first)."""
        if run.reads_deferred(op):
            self.flush(run)
            run = Run()
        self.check_ranked(op)
        run.add(op)
        return run

    def outline_block(self, block: Block) -> None:
        run = Run()
        for op in list(block.ops):
            if is_kept_if(op):
                run = self.extend(run, op)
                continue
            if isinstance(op, CONTROL_OPS):
                self.flush(run)
                run = Run()
                for region in op.regions:
                    for inner in region.blocks:
                        self.outline_block(inner)
                continue
            if op.regions:
                raise error(
                    op,
                    "an op with regions cannot be part of a sub-DNN or of the host "
                    "(only scf.if / scf.for / scf.while are supported)",
                )
            if self.travels_with_users(op):
                continue
            if is_tensor_compute(op, sizes=True):
                run = self.extend(run, op)
                continue
            if op is block.last_op:
                self.flush(run)
                run = Run()
                continue
            if run.ops and run.reads_run(op):
                run.defer(op)
        self.flush(run)

    @staticmethod
    def travels_with_users(op: Operation) -> bool:
        """Constants, lists of tensors that only tensor ops read, and the condition chain
        of a kept if: cloned where used."""
        if not op.results:
            return False
        if kept_if_of_chain(op) is not None:
            return True
        if all(is_constant(r) for r in op.results):
            return True
        if isinstance(op, t.ListConstructOp) and tensor_list_operand(op.result) is not None:
            return bool(op.result.uses) and all(
                is_tensor_compute(use.operation, sizes=True) for use in op.result.uses
            )
        return False

    @staticmethod
    def check_ranked(op: Operation) -> None:
        """A sub-DNN's tensors have a known rank and dtype; a dim may be known only at run
        time (`x[:k]`), which the backends compile as a symbolic size."""
        for value in (*op_operand_values(op), *op.results):
            if is_tensor(value) and (value.type.shape is None or value.type.element_type is None):
                raise error(
                    op,
                    f"tensor of shape {format_type(value.type)} inside a would-be sub-DNN: "
                    "its rank is not determined by the entry shapes (run dycl-shape-infer, "
                    "and dycl-unroll-loops for loops whose carried shapes vary)",
                )

    # ---------------------------------------------------------------- outlining

    def flush(self, run: Run) -> None:
        if not run.ops:
            return
        if len(run.ops) < self.min_ops and all(is_computation_free(op) for op in run.ops):
            return
        self.outline(run)

    def outline(self, run: Run) -> None:
        absorbed = absorbed_sizes(run.ops)
        members = set(run.ops) | set(absorbed)
        live_ins: list[SSAValue] = []
        seen: set[SSAValue] = set()
        for op in run.ops:
            for value in op_operand_values(op, sizes=True):
                if value in seen or value in run.values or not is_tensor(value):
                    continue
                if is_constant(value):
                    continue
                seen.add(value)
                live_ins.append(value)
        live_outs = [
            r
            for op in run.ops
            for r in op.results
            if any(not self._inside(use.operation, members) for use in r.uses)
        ]

        name = self.fresh_name()
        body = Block(arg_types=[v.type for v in live_ins])
        mapping: dict[SSAValue, SSAValue] = dict(zip(live_ins, body.args))
        for arg, value in zip(body.args, live_ins):
            arg.name_hint = value.name_hint
        new_ops: list[Operation] = []
        chains: list[Operation] = []
        for op in run.ops:
            if is_kept_if(op):
                chain = condition_chain(op)
                assert chain is not None
                # A region's uses are remapped only for values in the mapping: constants
                # the arms read from outside get their copies first.
                for operand in (chain[0].a, *free_values(op)):
                    clone_into_operand(operand, mapping, new_ops)
                for link in chain:
                    append_clone(link, mapping, new_ops)
                chains.extend(reversed(chain))
            else:
                for operand in op.operands:
                    clone_into_operand(operand, mapping, new_ops)
            append_clone(op, mapping, new_ops)
        new_ops.append(func.ReturnOp(*[mapping[v] for v in live_outs]))
        body.add_ops(new_ops)
        subdnn = func.FuncOp(
            name,
            ([v.type for v in live_ins], [v.type for v in live_outs]),
            Region(body),
            visibility="private",
        )
        mark_subdnn(subdnn)
        self.module.body.block.add_op(subdnn)
        self.created.append(subdnn)

        call = func.CallOp(name, live_ins, [v.type for v in live_outs])
        Rewriter.insert_op(call, InsertPoint.after(run.ops[-1]))
        anchor: Operation = call
        for op in run.deferred_before_last():
            if op in absorbed:
                continue
            op.detach()
            Rewriter.insert_op(op, InsertPoint.after(anchor))
            anchor = op
        for old, new in zip(live_outs, call.results):
            new.name_hint = old.name_hint
            old.replace_uses_with_if(new, lambda use: not self._inside(use.operation, members))
        inside_lists = {
            use.operation
            for op in run.ops
            for r in op.results
            for use in r.uses
            if use.operation not in members
            and use.operation.parent_block() is run.ops[0].parent_block()
            and kept_if_of_chain(use.operation) is None
        }
        for op in (*inside_lists, *reversed(run.ops), *chains, *absorbed):
            Rewriter.erase_op(op, safe_erase=False)

    @staticmethod
    def _inside(op: Operation, members: set[Operation]) -> bool:
        if op in members:
            return True
        # An op in a kept if's arm, or its condition chain, travels with the if.
        kept = kept_if_of_chain(op)
        if kept is not None and kept in members:
            return True
        parent = op.parent_op()
        while parent is not None:
            if parent in members:
                return True
            parent = parent.parent_op()
        # A tensor list built for run ops only travels into the sub-DNN with them.
        if isinstance(op, t.ListConstructOp) and tensor_list_operand(op.result) is not None:
            return bool(op.result.uses) and all(u.operation in members for u in op.result.uses)
        return False


def absorbed_sizes(ops: Sequence[Operation]) -> list[Operation]:
    """The host ops that compute the sizes `ops` read (`is_size_operand`) and that nothing
    else reads: the sub-DNN of `ops` computes them again, so they leave the host with the
    run (kept, one that reads a tensor of the run would make the sub-DNN return that tensor
    only for its size)."""
    members = set(ops)
    candidates: list[Operation] = []
    pending = [v for op in ops for v in op.operands if is_size_operand(v)]
    while pending:
        owner = pending.pop().owner
        if isinstance(owner, Operation) and owner not in candidates:
            candidates.append(owner)
            pending += [v for v in owner.operands if not is_tensor(v) and not is_constant(v)]
    absorbed: set[Operation] = set()
    grown = True
    while grown:
        readers = members | absorbed
        fresh = {op for op in candidates if op not in absorbed
                 and all(use.operation in readers for r in op.results for use in r.uses)}
        absorbed |= fresh
        grown = bool(fresh)
    return [op for op in candidates if op in absorbed]


def clone_into_operand(
    operand: SSAValue, mapping: dict[SSAValue, SSAValue], builder: list[Operation]
) -> None:
    if operand in mapping:
        return
    if is_constant(operand):
        clone_into(operand, mapping, builder)
    elif (lst := tensor_list_operand(operand)) is not None:
        for element in lst.elements:
            clone_into_operand(element, mapping, builder)
        clone_into(operand, mapping, builder)
    elif is_size_operand(operand):  # (computed again from the sizes of the tensors it reads)
        clone_into(operand, mapping, builder)


def outline_module(
    module: builtin.ModuleOp, min_ops: int = 1, prefix: str = "subdnn_"
) -> list[func.FuncOp]:
    """Outline every host function of `module`; returns the new sub-DNN functions."""
    outliner = Outliner(module, min_ops, prefix)
    for function in list(host_functions(module)):
        outliner.outline_block(function.body.block)
        # Constants and lists nobody reads any more: they moved into the sub-DNNs.
        erase_dead_ops(function.body.block, kinds=(*CONSTANT_OPS, t.ListConstructOp))
    return outliner.created


@dataclass(frozen=True)
class OutlinePass(ModulePass):
    name: ClassVar[str] = "dycl-outline"

    min_ops: int = 1
    """Runs with fewer ops than this that are computation-free stay in the host."""

    prefix: str = "subdnn_"
    """Sub-DNN functions are named `<prefix><k>`."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        outline_module(op, self.min_ops, self.prefix)


__all__: Sequence[str] = ["OutlinePass", "outline_module", "is_computation_free"]
