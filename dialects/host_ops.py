"""Python semantics of the host-level scalar and list ops of the torch dialect.

Shared by the reference interpreter and constant propagation, so both agree on what
`torch.aten.add.int` & co. compute. Lists have value semantics here: `append.t` returns
the new list (the frontend never reads a list again after appending to it).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

_BINARY = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "floordiv": operator.floordiv,
    "remainder": operator.mod,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "__and__": operator.and_,
    "__or__": operator.or_,
    "__is__": operator.is_,
    "__isnot__": operator.is_not,
}


def _append(lst: list, value: Any) -> list:
    # Value semantics: list values may be shared by both sides of an scf.if.
    return [*lst, value]


HOST_OPS: dict[str, Callable[..., Any]] = {
    "torch.aten.len.t": len,
    "torch.aten.__getitem__.t": lambda lst, i: lst[i],
    "torch.aten.append.t": _append,
    "torch.aten.neg.int": operator.neg,
    "torch.aten.neg.float": operator.neg,
    "torch.aten.__not__": operator.not_,
    "torch.aten.Bool.int": bool,
    "torch.aten.Bool.float": bool,
    "torch.aten.Bool.Tensor": lambda x: bool(x),
    "torch.aten.Int.bool": int,
    "torch.aten.Int.float": int,
    "torch.aten.Int.Tensor": lambda x: int(x.item()),
    "torch.aten.Float.Tensor": lambda x: float(x.item()),
    "torch.aten.Float.Scalar": float,
    "torch.aten.item": lambda x: x.item(),
    "torch.prim.max.int": max,
    "torch.prim.min.int": min,
    "torch.prim.ListUnpack": lambda lst: tuple(lst),
    "torch.prim.TupleConstruct": lambda *xs: tuple(xs),
    "torch.prim.TupleUnpack": lambda tup: tuple(tup),
}


def host_op(name: str) -> Callable[..., Any] | None:
    if (fn := HOST_OPS.get(name)) is not None:
        return fn
    parts = name.split(".")
    # `torch.aten.add.int`, `torch.aten.lt.float`, `torch.aten.eq.bool` ...
    if len(parts) == 4 and parts[3] in ("int", "float", "bool", "float_int", "int_float"):
        return _BINARY.get(parts[2])
    return None


