"""Element types of `!torch.vtensor` and their torch / numpy counterparts."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute

# (kind, bitwidth, signedness) -> dtype name shared by torch and numpy.
_INTEGER_NAMES = {
    (1, Signedness.SIGNLESS): "bool",
    (8, Signedness.UNSIGNED): "uint8",
    (8, Signedness.SIGNED): "int8",
    (16, Signedness.SIGNED): "int16",
    (32, Signedness.SIGNED): "int32",
    (64, Signedness.SIGNED): "int64",
}
_FLOAT_NAMES = {
    Float16Type: "float16",
    BFloat16Type: "bfloat16",
    Float32Type: "float32",
    Float64Type: "float64",
}


def dtype_name(element_type: Attribute) -> str:
    """`f32` -> "float32", `si64` -> "int64", `i1` -> "bool"."""
    if isinstance(element_type, IntegerType):
        key = (element_type.width.data, element_type.signedness.data)
        if key in _INTEGER_NAMES:
            return _INTEGER_NAMES[key]
    elif type(element_type) in _FLOAT_NAMES:
        return _FLOAT_NAMES[type(element_type)]
    raise ValueError(f"unsupported tensor element type {element_type}")


def element_type(name: str) -> Attribute:
    """The inverse of `dtype_name`."""
    for (width, signedness), dtype in _INTEGER_NAMES.items():
        if dtype == name:
            return IntegerType(width, signedness)
    for cls, dtype in _FLOAT_NAMES.items():
        if dtype == name:
            return cls()
    raise ValueError(f"unsupported dtype {name}")


def torch_dtype(element_type: Attribute):
    import torch

    return getattr(torch, dtype_name(element_type))
