"""The `dycl` dialect: host-level ops that no upstream dialect has, and the attribute that
marks a sub-DNN."""

from __future__ import annotations

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import IntegerAttr, StringAttr, UnitAttr
from xdsl.ir import Attribute, Dialect, Operation
from xdsl.irdl import IRDLOperation, attr_def, irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import ConstantLike, Pure

from dycl.dialects.torch import ValueTensorType


@irdl_op_definition
class ParamOp(IRDLOperation):
    """A named reference to a parameter or buffer in the weight store.

    Weights never sit in the IR text: `name` is the model's own `state_dict` key and the
    value is bound at run time (interpreter) or compile time (backends).
    """

    name = "dycl.param"

    param_name = attr_def(StringAttr, attr_name="name")
    result = result_def(ValueTensorType)

    traits = traits_def(ConstantLike(), Pure())

    def __init__(self, name: str, result_type: Attribute):
        super().__init__(
            attributes={"name": StringAttr(name)}, result_types=[result_type]
        )

    @property
    def weight_name(self) -> str:
        return self.param_name.data


@irdl_op_definition
class ErrorOp(IRDLOperation):
    """Raise `message` at run time: an arm of the program that cannot compute (a sub-DNN
    that could not be captured for one size a runtime dim may take). An effect: kept where
    it is, never part of a sub-DNN."""

    name = "dycl.error"

    message = attr_def(StringAttr)

    def __init__(self, message: str):
        super().__init__(attributes={"message": StringAttr(message)})


@irdl_op_definition
class NumpyArgsortOp(IRDLOperation):
    """`np.argsort(x, kind=...)` of a 1-d tensor with one of numpy's unstable sorts (the
    default quicksort, heapsort), run by the host on numpy: the order in which they put equal
    items is numpy's own, which no torch op reproduces. int64 indices, as numpy's."""

    name = "dycl.numpy_argsort"

    input = operand_def(ValueTensorType)
    kind = attr_def(StringAttr)
    result = result_def(ValueTensorType)

    traits = traits_def(Pure())


SUBDNN_ATTR = "dycl.subdnn"
"""Unit attribute on every sub-DNN `func.func`: a conditional-free run of tensor ops that a
backend compiles (the passes create them, the backends and the host codegen read them)."""


def is_subdnn(op: Operation) -> bool:
    return isinstance(op, func.FuncOp) and isinstance(op.attributes.get(SUBDNN_ATTR), UnitAttr)


def mark_subdnn(op: func.FuncOp) -> None:
    op.attributes[SUBDNN_ATTR] = UnitAttr()


THREADS_ATTR = "dycl.threads"
"""Optional integer attribute on a sub-DNN `func.func`: at most this many intra-op threads
run it (ONNX Runtime; the manifest record's `threads`, read by `dycl.runtime.runners`).
`dycl-single-thread` sets it to 1 on small sub-DNNs."""


def subdnn_threads(op: func.FuncOp) -> int | None:
    attr = op.attributes.get(THREADS_ATTR)
    return attr.value.data if isinstance(attr, IntegerAttr) else None


BATCHABLE_ATTR = "dycl.batchable"
"""Unit attribute on a sub-DNN that maps the rows of dim 0 independently, every input and
output carrying them at dim 0 (dycl-mark-batchable): `run_many` batches its calls."""


def is_batchable(op: Operation) -> bool:
    return is_subdnn(op) and isinstance(op.attributes.get(BATCHABLE_ATTR), UnitAttr)


KEEP_ATTR = "dycl.keep"
"""Unit attribute on an `scf.if` that stays inside a sub-DNN (dycl-keep-branches decides,
dycl-outline moves it whole into the sub-DNN, and the backend runs it as ONNX `If` / Relax
`if`). Its condition is `torch_c.to_i1(torch.aten.Bool.Tensor(%p))` with `%p` a one-element
tensor; its arms hold tensor ops only, and its results are statically shaped tensors."""


def is_kept_if(op: Operation) -> bool:
    """An `scf.if` marked `dycl.keep`."""
    return isinstance(op, scf.IfOp) and isinstance(op.attributes.get(KEEP_ATTR), UnitAttr)


def mark_kept(op: Operation) -> None:
    op.attributes[KEEP_ATTR] = UnitAttr()


Dycl = Dialect("dycl", [ParamOp, ErrorOp, NumpyArgsortOp], [])
