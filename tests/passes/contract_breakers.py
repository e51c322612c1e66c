"""Passes that break the HCFG contract on purpose, one per rule of `dycl.hcfg.CONTRACT`,
for the tests of the check that `dycl.compile(passes=...)` and `dycl-opt --verify-hcfg` run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.dialects import arith, builtin, func, scf
from xdsl.dialects.builtin import FunctionType, IndexType, IntegerAttr, StringAttr
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from dycl.dialects import torch as t
from dycl.dialects.dycl import is_subdnn
from dycl.passes._common import call_sites


def first_subdnn(module: builtin.ModuleOp) -> func.FuncOp:
    return next(op for op in module.ops if is_subdnn(op))


@dataclass(frozen=True)
class PublishSubDNNs(ModulePass):
    """Breaks 'subdnn-private': every sub-DNN becomes public."""

    name: ClassVar[str] = "test-publish-subdnns"

    def apply(self, ctx, op: builtin.ModuleOp) -> None:
        for fn in op.ops:
            if is_subdnn(fn):
                fn.sym_visibility = StringAttr("public")


@dataclass(frozen=True)
class EraseArgumentRank(ModulePass):
    """Breaks 'subdnn-tensor-signature': the first sub-DNN's first argument loses its rank
    (its callers cast what they pass, so the IR still verifies)."""

    name: ClassVar[str] = "test-erase-argument-rank"

    def apply(self, ctx, op: builtin.ModuleOp) -> None:
        fn = first_subdnn(op)
        arg = fn.body.block.args[0]
        unranked = t.ValueTensorType(None, arg.type.element_type)
        Rewriter.replace_value_with_new_type(arg, unranked)
        inputs = list(fn.function_type.inputs)
        fn.function_type = FunctionType.from_lists([unranked, *inputs[1:]], list(fn.function_type.outputs))
        for call in call_sites(fn):
            cast = t.TensorStaticInfoCastOp.create(operands=[call.operands[0]], result_types=[unranked])
            Rewriter.insert_op(cast, InsertPoint.before(call))
            call.operands = [cast.results[0], *call.operands[1:]]


@dataclass(frozen=True)
class LoopInSubDNN(ModulePass):
    """Breaks 'subdnn-straight-line': an `scf.for` (of one empty iteration) at the top of
    the first sub-DNN."""

    name: ClassVar[str] = "test-loop-in-subdnn"

    def apply(self, ctx, op: builtin.ModuleOp) -> None:
        fn = first_subdnn(op)
        bounds = [arith.ConstantOp(IntegerAttr(v, IndexType())) for v in (0, 1, 1)]
        loop = scf.ForOp(*bounds, [], Region(Block([scf.YieldOp()], arg_types=[IndexType()])))
        Rewriter.insert_op([*bounds, loop], InsertPoint.at_start(fn.body.block))


@dataclass(frozen=True)
class SecondBlock(ModulePass):
    """Breaks 'one-block-functions': the host function gets a second (unreachable) block
    that returns its arguments."""

    name: ClassVar[str] = "test-second-block"

    def apply(self, ctx, op: builtin.ModuleOp) -> None:
        host = next(fn for fn in op.ops if isinstance(fn, func.FuncOp) and not is_subdnn(fn))
        block = Block(arg_types=host.function_type.outputs)
        block.add_op(func.ReturnOp(*block.args))
        host.body.add_block(block)
