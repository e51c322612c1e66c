"""dycl-keep-branches: keep tensor-only `scf.if`s inside a sub-DNN (issue 14, direction 1).

Marks an `scf.if` with the unit attribute `dycl.keep` when it can run inside a sub-DNN as
ONNX `If` / Relax `if` and that is worth it. dycl-outline then moves a kept if whole into the
run around it (its condition chain included), so the code before the if, the taken arm and
the code after it become one call instead of up to three. Only the taken arm runs, in the
backend as in the host, so keeping an if duplicates no work. An if is eligible when:

1. its condition is `torch_c.to_i1(torch.aten.Bool.Tensor(%p))` with `%p` a statically
   shaped one-element tensor (a host `!torch.bool` / int condition is not);
2. its arms hold tensor ops only: tensor compute, constants and weight references, lists of
   tensors that tensor ops read, nested ifs already kept (with their condition chains),
   `scf.yield` (no calls, host scalar/list ops, `.item()`, static-info casts, loops);
3. it has results, all statically shaped tensors that both yields produce with those types
   (an early exit that joins `[1,3]` and `[1,7]` into `[1,?]`, or returns an int, is not);
4. everything its arms read from outside is a statically shaped tensor or a constant (not
   a list of tensors: the backends pass an arm its operands one by one); what an arm
   defines is visible outside only through the yield, as in any `scf` region.

Inner ifs are decided first, so a nest of eligible ifs is kept whole. The cost model keeps
an eligible if when the calls it saves per execution, times the backend's cost of a call,
exceed the cost of a conditional inside the compiled graph (`COSTS`, or the `call-us` and
`if-us` options). A condition chain that another op shares is given a private copy before
the if, so that it can travel into the sub-DNN. A backend without an entry in `COSTS`
keeps nothing: nothing says it runs control flow inside a compiled graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, scf
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from dycl.dialects import torch as t
from dycl.dialects.dycl import is_kept_if, mark_kept
from dycl.passes._common import (
    CONTROL_OPS,
    condition_chain,
    free_values,
    host_functions,
    is_constant,
    is_static_tensor_type,
    is_tensor,
    is_tensor_compute,
    kept_if_of_chain,
    tensor_list_operand,
)


@dataclass(frozen=True)
class BranchCosts:
    """Microseconds, per backend, from docs/keep-branches.md (1 thread, shared machine)."""

    call_us: float
    """What one more sub-DNN call costs (the runner's call, the host's round trip)."""
    if_us: float
    """What one conditional inside a compiled graph costs (ONNX `If`, Relax `if`)."""


COSTS: dict[str, BranchCosts] = {
    # split 49.6 vs gated oracle 19.6 µs over 12 calls; an If costs 0.3-0.5 µs more than the
    # same gates without control flow.
    "onnxruntime": BranchCosts(call_us=2.5, if_us=0.5),
    # split 86.7 vs one graph with 8 ifs 32.6 µs over 12 calls; the if itself was not
    # measured apart: taken as ORT's.
    "tvm": BranchCosts(call_us=4.5, if_us=0.5),
}


# ----------------------------------------------------------------- eligibility


def has_tensor_condition(op: scf.IfOp) -> bool:
    """Rule 1: the condition reads a statically shaped one-element tensor."""
    chain = condition_chain(op)
    if chain is None:
        return False
    source = chain[0].a.type
    return is_static_tensor_type(source) and all(d == 1 for d in source.shape)


def is_tensor_only_op(op: Operation) -> bool:
    """Rule 2, for one op of an arm."""
    if isinstance(op, scf.YieldOp):
        return True
    if isinstance(op, CONTROL_OPS):
        return is_kept_if(op)
    if op.results and all(is_constant(r) for r in op.results):
        return True
    if isinstance(op, t.ListConstructOp):
        return tensor_list_operand(op.result) is not None and all(
            is_tensor_compute(use.operation) for use in op.result.uses
        )
    if isinstance(op, (t.BoolTensorOp, t.ToI1Op)):
        return kept_if_of_chain(op) is not None
    return is_tensor_compute(op)


def has_static_tensor_results(op: scf.IfOp) -> bool:
    """Rule 3."""
    types = list(op.result_types)
    if not types or not all(is_static_tensor_type(r) for r in types):
        return False
    for region in op.regions:
        if not region.blocks:
            return False
        last = region.block.last_op
        if not isinstance(last, scf.YieldOp) or [v.type for v in last.operands] != types:
            return False
    return True


def reads_only_tensors_and_constants(op: scf.IfOp) -> bool:
    """Rule 4."""
    for value in free_values(op):
        if is_constant(value):
            continue
        if not (is_tensor(value) and is_static_tensor_type(value.type)):
            return False
    return True


def is_eligible(op: Operation) -> bool:
    """Rules 1-4 (nested ifs must be kept already)."""
    if not isinstance(op, scf.IfOp) or not has_tensor_condition(op):
        return False
    if not has_static_tensor_results(op):
        return False
    for region in op.regions:
        if not all(is_tensor_only_op(inner) for inner in region.block.ops):
            return False
    return reads_only_tensors_and_constants(op)


# ------------------------------------------------------------------- cost model


def _computes(op: Operation) -> bool:
    """The op would be part of a sub-DNN run (a kept if or an eligible one counts)."""
    if isinstance(op, scf.IfOp):
        return is_kept_if(op) or is_eligible(op)
    return is_tensor_compute(op)


def _run_beside(op: Operation, forward: bool) -> bool:
    """Tensor compute next to `op` in its block, up to the nearest control op that stays
    in the host: in the split it is a call of its own."""
    current = op.next_op if forward else op.prev_op
    while current is not None:
        if isinstance(current, CONTROL_OPS) and not _computes(current):
            return False
        if _computes(current):
            return True
        current = current.next_op if forward else current.prev_op
    return False


def calls_saved(op: scf.IfOp) -> float:
    """Calls per execution the split makes around and in `op` (the run before it, the taken
    arm's run, the run after it; arms weighted equally) minus the one call of the run that
    holds the kept if."""
    arms = [any(_computes(inner) for inner in region.block.ops) for region in op.regions]
    before, after = _run_beside(op, forward=False), _run_beside(op, forward=True)
    split = before + sum(arms) / len(arms) + after
    kept = 1 if (before or any(arms) or after) else 0
    return split - kept


# ------------------------------------------------------------------------ marking


def private_condition_chain(op: scf.IfOp) -> None:
    """Give `op` its own `to_i1(Bool.Tensor(%p))` just before it, if its chain is shared
    or defined in another block: the chain travels with the if into the sub-DNN."""
    chain = condition_chain(op)
    assert chain is not None
    bool_tensor, to_i1 = chain
    block = op.parent_block()
    if (
        bool_tensor.result.get_user_of_unique_use() is to_i1
        and to_i1.results[0].get_user_of_unique_use() is op
        and bool_tensor.parent_block() is block
        and to_i1.parent_block() is block
    ):
        return
    new_bool = t.BoolTensorOp.create(operands=[bool_tensor.a], result_types=[bool_tensor.result.type])
    new_to_i1 = t.ToI1Op.create(operands=[new_bool.result], result_types=[to_i1.results[0].type])
    Rewriter.insert_op([new_bool, new_to_i1], InsertPoint.before(op))
    op.operands = [new_to_i1.results[0], *op.operands[1:]]


@dataclass(frozen=True)
class BranchKeeper:
    costs: BranchCosts

    def decide_block(self, block: Block) -> None:
        """Inner ifs first: an outer if is eligible only if its nested ifs are kept."""
        for op in list(block.ops):
            for region in op.regions:
                for inner in region.blocks:
                    self.decide_block(inner)
            if not is_eligible(op):
                continue
            if calls_saved(op) * self.costs.call_us > self.costs.if_us:
                private_condition_chain(op)
                mark_kept(op)


@dataclass(frozen=True)
class KeepBranchesPass(ModulePass):
    name: ClassVar[str] = "dycl-keep-branches"

    backend: str = "onnxruntime"
    """Whose costs decide (`COSTS`); a backend without an entry keeps nothing."""

    call_us: float | None = None
    """Overrides the backend's cost of one sub-DNN call (µs)."""

    if_us: float | None = None
    """Overrides the backend's cost of one conditional inside a compiled graph (µs)."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        table = COSTS.get(self.backend)
        if table is None and (self.call_us is None or self.if_us is None):
            return
        costs = BranchCosts(
            self.call_us if self.call_us is not None else table.call_us,
            self.if_us if self.if_us is not None else table.if_us,
        )
        for function in host_functions(op):
            BranchKeeper(costs).decide_block(function.body.block)
