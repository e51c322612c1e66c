"""What a Python variable holds while the frontend compiles a forward.

Every variable is one of:
- `Const`: known when importing (module configuration, literals, loop targets over modules);
- `Dyn`: an IR value of the host function, with an *example* value that has the right type
  (DyCL runs every block on its predecessors' example outputs, whichever way a condition goes);
- `Tup`: a Python tuple whose items are themselves values (tuples never become IR values);
- `UNDEF`: not assigned on this path yet (joins materialise a typed placeholder for it).

IR types are kept as their MLIR text (`!torch.vtensor<[1,?],f32>`), which joins and compares simply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Union

import torch
from torch_mlir.extras.fx_importer import TORCH_DTYPE_TO_MLIR_TYPE_ASM

from dycl.frontend.errors import FrontendError


@dataclass(frozen=True)
class Const:
    value: Any


@dataclass(frozen=True)
class Dyn:
    value: Any  # torch_mlir.ir.Value
    type: str
    example: Any
    # Memory (storage ids, see aliases.py) this value shares with other variables on some
    # paths but not on others (a join of differently aliased values): a mutation of it, or
    # of that memory, has no exact value-semantics rewrite and is refused.
    may_share: frozenset = frozenset()


@dataclass(frozen=True)
class Tup:
    """A Python tuple (or, with kind="list", a list display used as an operand)."""

    items: tuple
    kind: str = "tuple"


class _Undef:
    def __repr__(self) -> str:
        return "UNDEF"


UNDEF = _Undef()

# "No value": what `FunctionCompiler._try_constant` answers for a runtime expression.
MISSING = object()

EnvValue = Union[Const, Dyn, Tup, _Undef]

INT, FLOAT, BOOL, NONE = "!torch.int", "!torch.float", "!torch.bool", "!torch.none"
TENSOR_LIST = "!torch.list<vtensor>"
# A list whose length is known only at runtime holds one kind of item: tensors, or Python
# ints, floats or bools (`tokens.append(tok.item())` under a `break`).
SCALAR_LISTS = {INT: "!torch.list<int>", FLOAT: "!torch.list<float>", BOOL: "!torch.list<bool>"}
_SCALAR_OF_LIST = {lst: scalar for scalar, lst in SCALAR_LISTS.items()}
UNRANKED_PREFIX = "!torch.vtensor<*,"

_MLIR_DTYPE = {dtype: asm for dtype, asm in TORCH_DTYPE_TO_MLIR_TYPE_ASM.items()}
_TORCH_DTYPE = {asm: dtype for dtype, asm in _MLIR_DTYPE.items()}
_VTENSOR = re.compile(r"!torch\.vtensor<\[([^\]]*)\],([^>]+)>")


def vtensor_type(shape, dtype: torch.dtype) -> str:
    dims = ",".join("?" if d is None else str(int(d)) for d in shape)
    return f"!torch.vtensor<[{dims}],{_MLIR_DTYPE[dtype]}>"


def parse_vtensor(type_text: str):
    """(shape with None for unknown dims, torch dtype) of a ranked vtensor type, else None."""
    match = _VTENSOR.fullmatch(type_text)
    if match is None:
        return None
    dims = [d for d in match.group(1).split(",") if d]
    shape = [None if d == "?" else int(d) for d in dims]
    return shape, _TORCH_DTYPE[match.group(2)]


def is_tensor_type(type_text: str) -> bool:
    return type_text.startswith("!torch.vtensor")


def type_of_example(example: Any) -> str:
    """The host IR type of a Python example value (the order matters: bool is an int)."""
    if isinstance(example, torch.Tensor):
        return vtensor_type(example.shape, example.dtype)
    if isinstance(example, bool):
        return BOOL
    if isinstance(example, int):
        return INT
    if isinstance(example, float):
        return FLOAT
    if isinstance(example, list) and all(isinstance(e, torch.Tensor) for e in example):
        return TENSOR_LIST
    raise TypeError(f"no host IR type for a {type(example).__name__}")


def is_list_type(type_text: str) -> bool:
    return type_text == TENSOR_LIST or type_text in _SCALAR_OF_LIST


def list_item_scalar(type_text: str) -> str | None:
    """The item type of a list of Python scalars (`INT` ...); None for a list of tensors."""
    return _SCALAR_OF_LIST.get(type_text)


def join_types(a: str, b: str) -> str:
    """The least type of both: equal dims stay, differing dims become `?`."""
    if a == b:
        return a
    ta, tb = parse_vtensor(a), parse_vtensor(b)
    if ta and tb and ta[1] == tb[1]:
        if len(ta[0]) == len(tb[0]):
            return vtensor_type([x if x == y else None for x, y in zip(ta[0], tb[0])], ta[1])
        return f"{UNRANKED_PREFIX}{_MLIR_DTYPE[ta[1]]}>"
    unranked = [t for t in (a, b) if t.startswith(UNRANKED_PREFIX)]
    if unranked and all(t.startswith(UNRANKED_PREFIX) or t.endswith("," + unranked[0][len(UNRANKED_PREFIX):]) for t in (a, b)):
        return unranked[0]  # a rank that already differs between paths, same dtype
    raise FrontendError(
        f"a variable is {describe_type(a)} on one path and {describe_type(b)} on another",
        "give it the same kind (tensor, int, float, bool) and dtype on every path",
    )


def describe_type(type_text: str) -> str:
    """An IR type in Python terms, for messages."""
    parsed = parse_vtensor(type_text)
    if parsed is not None:
        dims = ", ".join("?" if d is None else str(d) for d in parsed[0])
        return f"a {str(parsed[1]).removeprefix('torch.')} tensor of shape [{dims}]"
    if type_text.startswith(UNRANKED_PREFIX):
        dtype = _TORCH_DTYPE.get(type_text[len(UNRANKED_PREFIX):-1])
        return f"a {str(dtype).removeprefix('torch.')} tensor whose rank depends on the path"
    if type_text in _SCALAR_OF_LIST:
        return f"a list of {describe_type(_SCALAR_OF_LIST[type_text]).removeprefix('a ')}s"
    return {INT: "a Python int", FLOAT: "a Python float", BOOL: "a Python bool", TENSOR_LIST: "a list of tensors"}.get(
        type_text, f"`{type_text}`")


def kind_of(value: EnvValue, detailed: bool = False) -> str:
    """What a value is, in Python terms: "tensor", "int", "float", "bool", "none", "tuple",
    "list", or the Python type's name of another constant. `detailed` adds a tensor's dtype
    and a tuple's length (values of one detailed kind can be joined)."""
    if isinstance(value, Const):
        return "none" if value.value is None else type(value.value).__name__
    if isinstance(value, Dyn):
        if is_tensor_type(value.type):
            dtype = value.example.dtype if isinstance(value.example, torch.Tensor) else ""
            return f"tensor {dtype}" if detailed else "tensor"
        if is_list_type(value.type):
            return "list"
        return {BOOL: "bool", INT: "int", FLOAT: "float"}.get(value.type, "other")
    if isinstance(value, Tup):
        return f"{value.kind} {len(value.items)}" if detailed else value.kind
    return "other"


def leaves(value: EnvValue) -> list:
    """The non-tuple values inside `value`, in order."""
    if isinstance(value, Tup):
        return [leaf for item in value.items for leaf in leaves(item)]
    return [value]


def has_dyn(value: EnvValue) -> bool:
    """Whether `value` holds an IR value anywhere (else it is known at import time)."""
    return any(isinstance(leaf, Dyn) for leaf in leaves(value))


def same_structure(a: EnvValue, b: EnvValue) -> bool:
    """Whether `a` and `b` nest tuples and lists alike (their leaves may differ)."""
    if isinstance(a, Tup) and isinstance(b, Tup):
        return a.kind == b.kind and len(a.items) == len(b.items) and all(
            same_structure(x, y) for x, y in zip(a.items, b.items)
        )
    return not isinstance(a, Tup) and not isinstance(b, Tup)


def example_of(value: EnvValue) -> Any:
    if isinstance(value, Const):
        return value.value
    if isinstance(value, Dyn):
        return value.example
    if isinstance(value, Tup):
        items = [example_of(item) for item in value.items]
        return items if value.kind == "list" else tuple(items)
    raise ValueError("an undefined variable has no example value")


def same_value(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, Const) and isinstance(b, Const):
        return type(a.value) is type(b.value) and (a.value is b.value or _safe_eq(a.value, b.value))
    if isinstance(a, Tup) and isinstance(b, Tup):
        return len(a.items) == len(b.items) and all(same_value(x, y) for x, y in zip(a.items, b.items))
    return False


def _safe_eq(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def rebuild(structure, leaves):
    if structure is None:
        return leaves[0]
    it = iter(leaves)

    def visit(value):
        if isinstance(value, Tup):
            return Tup(tuple(visit(i) for i in value.items), value.kind)
        return next(it)

    return visit(structure)


