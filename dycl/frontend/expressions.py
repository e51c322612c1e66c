"""Host-level expressions: Python scalars, lists of tensors and conditions.

Tensor math goes to captured runs; what must stay outside them (data-dependent Python
scalars from `.item()`/`bool(t)`/`torch.equal` (`predicates.py`), list ops whose length is data-dependent,
arithmetic and comparisons on such scalars) becomes torch-dialect scalar and list ops of
the host function. Each op's example result comes from running the same aten op on the
operands' examples, exactly as the reference interpreter will.
"""

from __future__ import annotations

import ast
import builtins
import operator

import torch

from dycl.dialects.torch import ValueTensorType
from dycl.frontend import values as V

# Python operator -> (aten name, whether it always returns a float)
BINARY_OPS = {
    ast.Add: ("add", False),
    ast.Sub: ("sub", False),
    ast.Mult: ("mul", False),
    ast.FloorDiv: ("floordiv", False),
    ast.Mod: ("remainder", False),
    ast.Div: ("div", True),
}
COMPARE_OPS = {
    ast.Lt: "lt",
    ast.LtE: "le",
    ast.Gt: "gt",
    ast.GtE: "ge",
    ast.Eq: "eq",
    ast.NotEq: "ne",
}
PY_COMPARE = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}

# Calls whose result is a Python scalar computed from tensor data: never inside a run.
SCALAR_METHODS = {"item"}
SCALAR_BUILTINS = {builtins.bool: "Bool", builtins.int: "Int", builtins.float: "Float"}
LIST_FUNCTIONS = {torch.stack: "stack", torch.cat: "cat", torch.concat: "cat"}
REJECTED_CALLS = {
    builtins.print: ("`print` in forward", "remove it: DyCL cannot keep Python side effects"),
    builtins.input: ("`input` in forward", "pass the value as a model input"),
    builtins.open: ("`open` in forward", "load files before calling the model"),
}


def aten(name: str):
    """`torch.ops.aten.<name>.<overload>` for an op name `name[.overload]`."""
    base, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def stacked_type(example: torch.Tensor, dim: int) -> ValueTensorType:
    """Type of a stack/cat of a data-dependent-length list: the joined dim is unknown."""
    shape = list(example.shape)
    shape[dim % len(shape)] = None
    return V.tensor_type(shape, example.dtype)


def known(table, func) -> bool:
    """`func in table` for any constant (an unhashable one is in no table)."""
    try:
        return func in table
    except TypeError:
        return False
