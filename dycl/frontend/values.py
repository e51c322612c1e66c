"""What a Python variable holds while the frontend compiles a forward.

Every variable is one of:
- `Const`: known when importing (module configuration, literals, loop targets over modules);
- `Dyn`: an IR value of the host function, with an *example* value that has the right type
  (DyCL runs every block on its predecessors' example outputs, whichever way a condition goes);
- `Tup`: a Python tuple, list display or dict whose items are themselves values (they never
  become IR values);
- `UNDEF`: not assigned on this path yet (joins materialise a typed placeholder for it).

IR types are the torch dialect's xDSL attributes (`ValueTensorType`, `IntType()` ...), the
same ones the passes read; `HostBuilder.type` turns each into torch-mlir's type once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Union

import torch
from xdsl.ir import Attribute

from dycl.dialects import dtypes
from dycl.dialects.torch import BoolType, FloatType, IntType, ListType, NoneType, ValueTensorType
from dycl.frontend import complex_values
from dycl.frontend.errors import FrontendError
from dycl.ir import DyclParser, make_context


@dataclass(frozen=True)
class Const:
    value: Any


@dataclass(frozen=True)
class Dyn:
    value: Any  # torch_mlir.ir.Value
    type: Attribute
    example: Any
    # Memory (storage ids, see aliases.py) this value shares with other variables on some
    # paths but not on others (a join of differently aliased values): a mutation of it, or
    # of that memory, has no exact value-semantics rewrite and is refused.
    may_share: frozenset = frozenset()


@dataclass(frozen=True)
class DictKind:
    """The kind of a `Tup` that is a Python dict: its keys (constants), in insertion order."""

    keys: tuple

    def __str__(self) -> str:
        return "dict"


@dataclass(frozen=True)
class Tup:
    """A Python tuple (or, with kind="list", a list display used as an operand; with a
    `DictKind`, a dict whose items are the values of its keys; with a
    `pytree_values.NodeKind`, a library object torch.export takes apart, such as a cache)."""

    items: tuple
    kind: str | DictKind = "tuple"


def dict_value(entries: dict) -> Tup:
    """The dict value holding `entries` (key -> value), in their order."""
    return Tup(tuple(entries.values()), DictKind(tuple(entries)))


def python_container(value: Tup, items: list):
    """`items` (already converted) in the container `value` is: a list, a dict or a tuple."""
    if value.kind == "list":
        return items
    if isinstance(value.kind, DictKind):
        return dict(zip(value.kind.keys, items))
    build = getattr(value.kind, "build", None)  # (a library object's kind rebuilds it: pytree_values.NodeKind)
    if build is not None:
        return build(items)
    return tuple(items)


@dataclass(frozen=True)
class Maybe:
    """A value that is None on some paths (`ps = None` on one, a tensor on the other):
    `present`, a runtime bool, and `value`, what it holds where it is not None (a
    placeholder of its type on the paths where it is). Only `is None` tests, bindings and
    returns read it."""

    present: Any  # Dyn (bool) or Const
    value: Any  # Dyn or Const


@dataclass(frozen=True)
class Packed:
    """A `PackedSequence` whose lengths are runtime ints (`pack_padded_sequence(x, lengths)`
    with `lengths` a list argument): its rows add up to a runtime count, so it is kept as
    what it is made from (packed.py). `padded` is batch-first or time-major as `batch_first`
    says, and a position past its sequence's length holds anything; `lengths` are the int
    values in batch order, `lengths_tensor` the same as an int64 tensor. `in_order`: the
    batch is sorted by decreasing length (`enforce_sorted`), so the packed rows are in batch
    order."""

    padded: Any  # Dyn
    lengths: tuple
    lengths_tensor: Any  # Dyn
    batch_first: bool
    in_order: bool


class _Undef:
    def __repr__(self) -> str:
        return "UNDEF"


UNDEF = _Undef()

# "No value": what `FunctionCompiler._try_constant` answers for a runtime expression.
MISSING = object()

EnvValue = Union[Const, Dyn, Tup, Maybe, Packed, _Undef]

INT, FLOAT, BOOL, NONE = IntType(), FloatType(), BoolType(), NoneType()
TENSOR_LIST = ListType(ValueTensorType(None, None))
# A list whose length is known only at runtime holds one kind of item: tensors, or Python
# ints, floats or bools (`tokens.append(tok.item())` under a `break`).
SCALAR_LISTS = {scalar: ListType(scalar) for scalar in (INT, FLOAT, BOOL)}
_SCALAR_OF_LIST = {lst: scalar for scalar, lst in SCALAR_LISTS.items()}
_SCALAR_NAMES = {INT: "int", FLOAT: "float", BOOL: "bool"}


def tensor_type(shape: Sequence[int | None] | None, dtype: torch.dtype) -> ValueTensorType:
    """`!torch.vtensor` of a shape (None for an unknown dim; None for an unknown rank). A
    complex tensor's type is that of its real view (`complex_values`): one more dim of 2,
    of the matching real dtype."""
    if dtype.is_complex:
        return ValueTensorType(None if shape is None else [*shape, 2], _element_type(complex_values.REAL_OF[dtype]))
    return ValueTensorType(shape, _element_type(dtype))


@cache
def _element_type(dtype: torch.dtype) -> Attribute:
    return dtypes.element_type(str(dtype).removeprefix("torch."))


@cache
def parse_type(text: str) -> Attribute:
    """The type model's value for an MLIR type torch-mlir printed (a captured run's results)."""
    return DyclParser(_parsing_context(), text).parse_type()


@cache
def _parsing_context():
    return make_context()


def is_tensor_type(type_: Attribute) -> bool:
    return isinstance(type_, ValueTensorType)


def tensor_dtype(type_: ValueTensorType) -> torch.dtype:
    return dtypes.torch_dtype(type_.element_type)


def type_of_example(example: Any) -> Attribute:
    """The host IR type of a Python example value (the order matters: bool is an int). A dim
    of an example tensor marked dynamic (`torch._dynamo.mark_dynamic(x, 0)`) is unknown: the
    input takes any size there."""
    if isinstance(example, torch.Tensor):
        dynamic = dynamic_dims(example)
        return tensor_type([None if d in dynamic else n for d, n in enumerate(example.shape)], example.dtype)
    if isinstance(example, bool):
        return BOOL
    if isinstance(example, int):
        return INT
    if isinstance(example, float):
        return FLOAT
    if isinstance(example, list) and all(isinstance(e, torch.Tensor) for e in example):
        return TENSOR_LIST
    raise TypeError(f"no host IR type for a {type(example).__name__}")


def dynamic_dims(example: torch.Tensor) -> frozenset[int]:
    """The dims of an example input marked dynamic by `torch._dynamo.mark_dynamic` (which
    records them on the tensor, for torch.compile)."""
    return frozenset(getattr(example, "_dynamo_dynamic_indices", ()))


def marked_like(copy: torch.Tensor, example: torch.Tensor) -> torch.Tensor:
    """`copy` with the dynamic dims `example` is marked with (a clone drops the mark)."""
    if dynamic_dims(example):
        copy._dynamo_dynamic_indices = set(dynamic_dims(example))
    return copy


def is_list_type(type_: Attribute) -> bool:
    return type_ == TENSOR_LIST or type_ in _SCALAR_OF_LIST


def list_item_scalar(type_: Attribute) -> Attribute | None:
    """The item type of a list of Python scalars (`INT` ...); None for a list of tensors."""
    return _SCALAR_OF_LIST.get(type_)


def scalar_name(type_: Attribute) -> str | None:
    """"int", "float" or "bool" for the type of a Python scalar, else None."""
    return _SCALAR_NAMES.get(type_)


def join_types(a: Attribute, b: Attribute) -> Attribute:
    """The least type of both: equal dims stay, differing dims become `?`, and differing
    ranks an unranked tensor of the same dtype."""
    if a == b:
        return a
    if is_tensor_type(a) and is_tensor_type(b) and a.element_type == b.element_type:
        if a.rank is not None and a.rank == b.rank:
            return a.with_shape([x if x == y else None for x, y in zip(a.shape, b.shape)])
        return a.with_shape(None)
    raise FrontendError(
        f"a variable is {describe_type(a)} on one path and {describe_type(b)} on another",
        "give it the same kind (tensor, int, float, bool) and dtype on every path",
    )


def describe_type(type_: Attribute) -> str:
    """An IR type in Python terms, for messages."""
    if is_tensor_type(type_):
        dtype = str(tensor_dtype(type_)).removeprefix("torch.")
        if type_.shape is None:
            return f"a {dtype} tensor whose rank depends on the path"
        dims = ", ".join("?" if d is None else str(d) for d in type_.shape)
        return f"a {dtype} tensor of shape [{dims}]"
    if type_ in _SCALAR_OF_LIST:
        return f"a list of {_SCALAR_NAMES[_SCALAR_OF_LIST[type_]]}s"
    if type_ == TENSOR_LIST:
        return "a list of tensors"
    if type_ in _SCALAR_NAMES:
        return f"a Python {_SCALAR_NAMES[type_]}"
    return "None" if type_ == NONE else f"`{type_}`"


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
        return scalar_name(value.type) or "other"
    if isinstance(value, Tup):
        if isinstance(value.kind, DictKind):
            return f"dict {value.kind.keys}" if detailed else "dict"
        return f"{value.kind} {len(value.items)}" if detailed else value.kind
    if isinstance(value, Maybe):
        return "optional"
    if isinstance(value, Packed):
        return "PackedSequence"
    return "other"


def leaves(value: EnvValue) -> list:
    """The non-tuple values inside `value`, in order."""
    if isinstance(value, Tup):
        return [leaf for item in value.items for leaf in leaves(item)]
    if isinstance(value, Maybe):  # (a tuple it holds: its items, `self.state = (h, c)`)
        return [value.present, *leaves(value.value)]
    return [value]


def maybes(value: EnvValue) -> list[Maybe]:
    """The values None on some paths that `value` is, or holds in a tuple or list display."""
    if isinstance(value, Tup):
        return [m for item in value.items for m in maybes(item)]
    return [value] if isinstance(value, Maybe) else []


def holds_maybe(value: EnvValue) -> bool:
    return bool(maybes(value))


def has_dyn(value: EnvValue) -> bool:
    """Whether `value` holds an IR value anywhere (else it is known at import time)."""
    return any(isinstance(leaf, (Dyn, Packed)) for leaf in leaves(value))


def same_structure(a: EnvValue, b: EnvValue) -> bool:
    """Whether `a` and `b` nest tuples and lists alike (their leaves may differ)."""
    if isinstance(a, Tup) and isinstance(b, Tup):
        return a.kind == b.kind and len(a.items) == len(b.items) and all(
            same_structure(x, y) for x, y in zip(a.items, b.items)
        )
    if isinstance(a, Maybe) or isinstance(b, Maybe):
        return isinstance(a, Maybe) and isinstance(b, Maybe)
    return not isinstance(a, Tup) and not isinstance(b, Tup)


def example_of(value: EnvValue) -> Any:
    if isinstance(value, Const):
        return value.value
    if isinstance(value, Dyn):
        return value.example
    if isinstance(value, Tup):
        return python_container(value, [example_of(item) for item in value.items])
    if isinstance(value, Maybe):
        return example_of(value.value) if example_of(value.present) else None
    raise ValueError("an undefined variable has no example value")


def same_value(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, Const) and isinstance(b, Const):
        return type(a.value) is type(b.value) and (a.value is b.value or _safe_eq(a.value, b.value))
    if isinstance(a, Tup) and isinstance(b, Tup):
        return a.kind == b.kind and len(a.items) == len(b.items) and all(same_value(x, y) for x, y in zip(a.items, b.items))
    if isinstance(a, Maybe) and isinstance(b, Maybe):
        return same_value(a.present, b.present) and same_value(a.value, b.value)
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
        if isinstance(value, Maybe):
            present = next(it)
            return Maybe(present, visit(value.value))
        return next(it)

    return visit(structure)


