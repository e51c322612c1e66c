"""The `dycl` dialect: host-level ops that no upstream dialect has, and the attribute that
marks a sub-DNN."""

from __future__ import annotations

from xdsl.dialects import func, scf
from xdsl.dialects.builtin import IntegerAttr, StringAttr, UnitAttr
from xdsl.ir import Attribute, Dialect, Operation
from xdsl.irdl import (
    IRDLOperation, attr_def, irdl_op_definition, operand_def, opt_attr_def, result_def, traits_def, var_operand_def,
)
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
    that could not be captured for one size a runtime dim may take), or a failed check the
    program makes (`assert`). An effect: kept where it is, never part of a sub-DNN.

    `kind` names the exception (`"AssertionError"`; a RuntimeError without it). With
    `parts` (host scalars: `!torch.int`, `!torch.float`, `!torch.bool`), `message` is a
    `str.format` template the parts fill, each as its Python value (`int`, `float`,
    `bool`): `"length {0}, block size is only 64"`; without them it is the message as it
    is. An `AssertionError` with no `message` attribute has no argument (`assert c`)."""

    name = "dycl.error"

    message = opt_attr_def(StringAttr)
    kind = opt_attr_def(StringAttr)
    parts = var_operand_def()

    def __init__(self, message: str):
        super().__init__(operands=[[]], attributes={"message": StringAttr(message)})

    def exception(self, values=()) -> BaseException:
        """The exception the op raises, its message formatted with the parts' `values`."""
        return error_exception(self, values)


ERROR_KINDS = {
    cls.__name__: cls
    for cls in (
        AssertionError, ValueError, RuntimeError, NotImplementedError, TypeError, KeyError, IndexError,
        LookupError, ArithmeticError, ZeroDivisionError, OverflowError, AttributeError, StopIteration, Exception,
    )
}
"""The exceptions a `dycl.error` may name in its `kind` (the Python builtin it raises: an
assert's AssertionError, a `raise` that leaves forward)."""


def error_arguments(op: ErrorOp, values) -> tuple:
    """The arguments of the exception `op` raises: () for a bare `assert`, else its message
    (formatted with `values`, each converted to the Python type of its part)."""
    if op.message is None:
        return ()
    if not op.parts:
        return (op.message.data,)
    return (op.message.data.format(*(scalar_value(part.type, value) for part, value in zip(op.parts, values))),)


SCALAR_CONVERTERS = {"!torch.int": int, "!torch.float": float, "!torch.bool": bool}
"""The Python type of each host scalar type a `dycl.error` message part may have."""


def scalar_value(type_: Attribute, value):
    """A host scalar as the Python value eager holds (numpy scalars format differently:
    `repr(np.int64(3))`, `str(np.float32(0.1))`)."""
    name = str(type_)
    converter = SCALAR_CONVERTERS.get(name)
    if converter is None:
        raise TypeError(f"dycl.error: a message part of type {name} (expected !torch.int, !torch.float or !torch.bool)")
    return converter(value)


def error_exception(op: ErrorOp, values=()) -> BaseException:
    kind = op.kind.data if op.kind is not None else None
    if kind is not None and kind not in ERROR_KINDS:
        raise ValueError(f"dycl.error: unknown kind {kind!r} (one of {sorted(ERROR_KINDS)})")
    return ERROR_KINDS.get(kind, RuntimeError)(*error_arguments(op, values))


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
