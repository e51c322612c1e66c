"""The `dycl` dialect: host-level ops that no upstream dialect has."""

from __future__ import annotations

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute, Dialect
from xdsl.irdl import IRDLOperation, attr_def, irdl_op_definition, result_def, traits_def
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


Dycl = Dialect("dycl", [ParamOp], [])
