"""The subset of torch-mlir's `torch` and `torch_c` dialects that DyCL's passes read.

Types and ops are defined so that their *generic* form matches what torch-mlir prints;
every other `torch.*` op or type parses through xDSL's unregistered fallback (parse with
`dycl.ir.parse_module`). Shapes use `None` for an unknown dimension (`?` in the text).
What each op means, registered or not, is in `dycl.dialects.torch_ops`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
import numpy as np
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    NoneAttr,
    StringAttr,
    i1,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import ConstantLike, Pure

UNKNOWN_DIM = -1


# ---------------------------------------------------------------------------- types


def _print_subtype(printer: Printer, attr: Attribute) -> None:
    """Inside `!torch.list<...>` torch-mlir writes torch types without the `!torch.` prefix."""
    if isinstance(attr, TorchType):
        printer.print_string(attr.short_name())
        attr.print_parameters(printer)
    else:
        printer.print_attribute(attr)


def _parse_subtype(parser: AttrParser) -> Attribute:
    name = parser.parse_optional_identifier()
    if name is None:
        return parser.parse_type()
    simple = _SIMPLE_TYPES.get(name)
    if simple is not None:
        return simple()
    composite = _COMPOSITE_TYPES.get(name)
    if composite is None:
        parser.raise_error(f"unsupported torch type '{name}' inside a torch container type")
    return composite.new(composite.parse_parameters(parser))


class TorchType(ParametrizedAttribute, TypeAttribute):
    def short_name(self) -> str:
        return self.name.removeprefix("torch.")


@irdl_attr_definition
class ValueTensorType(TorchType):
    """`!torch.vtensor<[1,?,32],f32>`; `sizes` is empty-with-None for unranked (`*`)."""

    name = "torch.vtensor"

    sizes: ArrayAttr[IntAttr] | NoneAttr
    dtype: Attribute

    def __init__(self, shape: Sequence[int | None] | None, dtype: Attribute | None):
        sizes = (
            NoneAttr()
            if shape is None
            else ArrayAttr(IntAttr(UNKNOWN_DIM if d is None else d) for d in shape)
        )
        super().__init__(sizes, NoneAttr() if dtype is None else dtype)

    @property
    def shape(self) -> tuple[int | None, ...] | None:
        """The dimensions, `None` for each unknown one; `None` when unranked."""
        if isinstance(self.sizes, NoneAttr):
            return None
        return tuple(None if d.data == UNKNOWN_DIM else d.data for d in self.sizes)

    @property
    def element_type(self) -> Attribute | None:
        return None if isinstance(self.dtype, NoneAttr) else self.dtype

    @property
    def rank(self) -> int | None:
        shape = self.shape
        return None if shape is None else len(shape)

    @property
    def has_static_shape(self) -> bool:
        shape = self.shape
        return shape is not None and all(d is not None for d in shape)

    def with_shape(self, shape: Sequence[int | None] | None) -> ValueTensorType:
        return ValueTensorType(shape, self.element_type)

    def print_parameters(self, printer: Printer) -> None:
        if isinstance(self.sizes, NoneAttr) and isinstance(self.dtype, NoneAttr):
            return
        printer.print_string("<")
        shape = self.shape
        if shape is None:
            printer.print_string("*")
        else:
            dims = ("?" if d is None else str(d) for d in shape)
            printer.print_string("[" + ",".join(dims) + "]")
        printer.print_string(",")
        if isinstance(self.dtype, NoneAttr):
            printer.print_string("unk")
        else:
            printer.print_attribute(self.dtype)
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[Attribute, Attribute]:
        if parser.parse_optional_punctuation("<") is None:
            return NoneAttr(), NoneAttr()
        if parser.parse_optional_punctuation("*") is not None:
            sizes: Attribute = NoneAttr()
        else:
            dims = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: _parse_dim(parser)
            )
            sizes = ArrayAttr(IntAttr(d) for d in dims)
        parser.parse_punctuation(",")
        dtype: Attribute = (
            NoneAttr() if parser.parse_optional_keyword("unk") else parser.parse_type()
        )
        parser.parse_punctuation(">")
        return sizes, dtype


def _parse_dim(parser: AttrParser) -> int:
    if parser.parse_optional_punctuation("?") is not None:
        return UNKNOWN_DIM
    return parser.parse_integer(allow_negative=False, allow_boolean=False)


@irdl_attr_definition
class IntType(TorchType):
    name = "torch.int"


@irdl_attr_definition
class FloatType(TorchType):
    name = "torch.float"


@irdl_attr_definition
class BoolType(TorchType):
    name = "torch.bool"


@irdl_attr_definition
class NoneType(TorchType):
    name = "torch.none"


@irdl_attr_definition
class StringType(TorchType):
    name = "torch.str"


@irdl_attr_definition
class NumberType(TorchType):
    name = "torch.number"


@irdl_attr_definition
class DeviceType(TorchType):
    name = "torch.Device"


@irdl_attr_definition
class ListType(TorchType):
    """`!torch.list<int>`, `!torch.list<vtensor<[1,4],f32>>`."""

    name = "torch.list"

    element: Attribute

    def __init__(self, element: Attribute):
        super().__init__(element)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string("<")
        _print_subtype(printer, self.element)
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> tuple[Attribute]:
        parser.parse_punctuation("<")
        element = _parse_subtype(parser)
        parser.parse_punctuation(">")
        return (element,)


@irdl_attr_definition
class OptionalType(TorchType):
    name = "torch.optional"

    element: Attribute

    def __init__(self, element: Attribute):
        super().__init__(element)

    print_parameters = ListType.print_parameters
    parse_parameters = ListType.parse_parameters


_SIMPLE_TYPES: dict[str, type[TorchType]] = {
    t.name.removeprefix("torch."): t
    for t in (IntType, FloatType, BoolType, NoneType, StringType, NumberType, DeviceType)
}
_COMPOSITE_TYPES: dict[str, type[TorchType]] = {
    "vtensor": ValueTensorType,
    "list": ListType,
    "optional": OptionalType,
}

SCALAR_TYPES = (IntType, FloatType, BoolType)


# ------------------------------------------------------------------------ constants


class _ConstantOp(IRDLOperation):
    """A scalar constant; `python_value` is it as the host program and the interpreter
    see it."""

    traits = traits_def(ConstantLike(), Pure())

    @property
    def python_value(self) -> Any:
        value = self.properties["value"]
        return value.value.data if isinstance(value, (IntegerAttr, FloatAttr)) else value.data


@irdl_op_definition
class ConstantIntOp(_ConstantOp):
    name = "torch.constant.int"
    value = prop_def(IntegerAttr)
    result = result_def(IntType)

    def __init__(self, value: int):
        super().__init__(
            properties={"value": IntegerAttr(value, 64)}, result_types=[IntType()]
        )


@irdl_op_definition
class ConstantFloatOp(_ConstantOp):
    name = "torch.constant.float"
    value = prop_def(FloatAttr)
    result = result_def(FloatType)

    def __init__(self, value: float):
        super().__init__(
            properties={"value": FloatAttr(value, 64)}, result_types=[FloatType()]
        )


@irdl_op_definition
class ConstantBoolOp(_ConstantOp):
    name = "torch.constant.bool"
    value = prop_def(IntegerAttr)
    result = result_def(BoolType)

    def __init__(self, value: bool):
        super().__init__(
            properties={"value": IntegerAttr(int(value), i1)}, result_types=[BoolType()]
        )

    @property
    def bool_value(self) -> bool:
        # xDSL stores `true` of an i1 as -1.
        return self.value.value.data != 0

    @property
    def python_value(self) -> bool:
        return self.bool_value


@irdl_op_definition
class ConstantNoneOp(_ConstantOp):
    name = "torch.constant.none"
    result = result_def(NoneType)

    def __init__(self):
        super().__init__(result_types=[NoneType()])

    @property
    def python_value(self) -> None:
        return None


@irdl_op_definition
class ConstantStrOp(_ConstantOp):
    name = "torch.constant.str"
    value = prop_def(StringAttr)
    result = result_def(StringType)


@irdl_op_definition
class ConstantDeviceOp(_ConstantOp):
    name = "torch.constant.device"
    value = prop_def(StringAttr)
    result = result_def(DeviceType)

    @property
    def python_value(self) -> str:
        """The device's name (`"cpu"`); the interpreter makes a `torch.device` of it."""
        return self.value.data


@irdl_op_definition
class ValueTensorLiteralOp(IRDLOperation):
    name = "torch.vtensor.literal"
    value = prop_def(Attribute)
    result = result_def(ValueTensorType)
    traits = traits_def(ConstantLike(), Pure())

    def raw_array(self) -> np.ndarray:
        """The inline values in their shape (numpy's default dtype for them: int64 or
        float64); cast them to the result's element type where they are used."""
        if not isinstance(self.value, DenseIntOrFPElementsAttr):
            raise ValueError(
                f"{self.name}: only inline dense<...> values are supported "
                "(weights must be dycl.param references)"
            )
        return np.array(self.value.get_values()).reshape(self.value.get_shape())


@irdl_op_definition
class ListConstructOp(IRDLOperation):
    name = "torch.prim.ListConstruct"
    elements = var_operand_def()
    result = result_def(ListType)
    traits = traits_def(Pure())

    def __init__(self, elements: Sequence, result_type: ListType):
        super().__init__(operands=[elements], result_types=[result_type])


@irdl_op_definition
class BoolTensorOp(IRDLOperation):
    """`torch.aten.Bool.Tensor`: read a one-element tensor as a Python bool (a host sync)."""

    name = "torch.aten.Bool.Tensor"
    a = operand_def(ValueTensorType)
    result = result_def(BoolType)


@irdl_op_definition
class TensorStaticInfoCastOp(IRDLOperation):
    """Changes only the static type information (joins shapes at control-flow merges)."""

    name = "torch.tensor_static_info_cast"
    operand = operand_def(ValueTensorType)
    result = result_def(ValueTensorType)
    traits = traits_def(Pure())


# ----------------------------------------------------- torch_c: builtin <-> torch


def _scalar_cast(class_name: str, name: str, source: type[Attribute], target: type[Attribute]):
    """A `torch_c` op: the same scalar seen as a torch or a builtin type."""
    fields = {
        "name": name,
        "operand": operand_def(source),
        "result": result_def(target),
        "traits": traits_def(Pure()),
        "__doc__": _scalar_cast.__doc__,
        "__module__": __name__,
    }
    return irdl_op_definition(type(class_name, (IRDLOperation,), fields))


ToI1Op = _scalar_cast("ToI1Op", "torch_c.to_i1", BoolType, IntegerType)
FromI1Op = _scalar_cast("FromI1Op", "torch_c.from_i1", IntegerType, BoolType)
ToI64Op = _scalar_cast("ToI64Op", "torch_c.to_i64", IntType, IntegerType)
FromI64Op = _scalar_cast("FromI64Op", "torch_c.from_i64", IntegerType, IntType)


# ---------------------------------------------------------------------- names


def op_name(op) -> str:
    """The op's real name, also for unregistered ops (whose `.name` is generic)."""
    from xdsl.dialects.builtin import UnregisteredOp

    if isinstance(op, UnregisteredOp):
        return op.op_name.data
    return op.name


Torch = Dialect(
    "torch",
    [
        ConstantIntOp,
        ConstantFloatOp,
        ConstantBoolOp,
        ConstantNoneOp,
        ConstantStrOp,
        ConstantDeviceOp,
        ValueTensorLiteralOp,
        ListConstructOp,
        BoolTensorOp,
        TensorStaticInfoCastOp,
    ],
    [
        ValueTensorType,
        IntType,
        FloatType,
        BoolType,
        NoneType,
        StringType,
        NumberType,
        DeviceType,
        ListType,
        OptionalType,
    ],
)

TorchC = Dialect("torch_c", [ToI1Op, FromI1Op, ToI64Op, FromI64Op], [])
