"""What each torch op means, in one place: one `TorchOpInfo` record per op or op family.

torch-mlir's ops mostly parse as xDSL's unregistered ops (see `dycl.ir.parse_module`), so
their meaning cannot sit on op classes as it does in `xdsl.dialects.arith`; it sits here,
keyed by op name, and every consumer reads it:

- `category`: tensor math (a kernel), a computation-free view or copy (identity, reshape,
  strided view), a tensor query, a host scalar/list op, a constant, or an op with effects.
  The HCFG passes decide with it what goes into a sub-DNN and what the host may keep.
- `host`: the op as a Python expression over its operands, written for the host program
  (numpy arrays, `np`, the runtime helpers `rt`). For host scalar/list ops the same
  expression is also what the reference interpreter and constant propagation compute.
- `shape`: a rule for the result types (dycl-shape-infer; ops without one are run on meta
  tensors), `static_value`: the op's value when the types fix it.
- `macs`: a multiply-accumulate estimate (the runtime's thread choice, dycl.backends.cost).
- `rows`: whether the op maps the rows of dim 0 independently, under its arguments
  (`run_many` batches a sub-DNN only when all its ops do; dycl-mark-batchable).

Ops not listed are tensor math with no host translation: they belong in sub-DNNs.
"""

from __future__ import annotations

import ast
import builtins
import enum
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from xdsl.dialects import arith, builtin
from xdsl.ir import Attribute, Operation, SSAValue

from dycl.dialects import torch as t

# ------------------------------------------------------------------------ records


class Category(enum.Enum):
    TENSOR_MATH = "tensor math"
    IDENTITY = "identity copy"
    """The operand itself (tensors have value semantics, so a copy is the value)."""
    RESHAPE = "reshape"
    """A contiguous tensor's data under a new shape."""
    STRIDED_VIEW = "strided view"
    """The data under new strides: free only when it keeps the memory order."""
    TENSOR_QUERY = "tensor query"
    """A host scalar read from a tensor's metadata."""
    HOST = "host scalar/list"
    CONSTANT = "constant"
    DATA_SIZE = "data-dependent size"
    """Tensor math whose result size depends on the operands' values (`nonzero`,
    `masked_select`): the host runs it on numpy, where that size is known, and a sub-DNN
    takes the size as a runtime dim (as `x[:k]`'s)."""
    RANDOM = "random draw"
    """A draw from a distribution (`bernoulli`, `rand_like`, `multinomial`): the host runs
    it on numpy's generator (`dycl.runtime.random_draws`), never a sub-DNN, so that both
    backends compute the same law and the cases whose answer is fixed (a probability of 0
    or 1) exactly. Its record's host expression is its only meaning: it is never folded.
    Other random ops (`nondeterministic_seeded` in torch) are refused (`refused_random`)."""
    EFFECT = "effect"
    """An effect beyond its results (or a placeholder): never removed when unused."""
    NOT_TORCH = "not a torch op"

    @property
    def computation_free(self) -> bool:
        return self in (Category.IDENTITY, Category.RESHAPE, Category.STRIDED_VIEW)

    @property
    def host_only(self) -> bool:
        """Tensor math that only the host program runs (on numpy), never a sub-DNN."""
        return self in (Category.DATA_SIZE, Category.RANDOM)


@dataclass(frozen=True)
class HostCode:
    """A Python expression over named operands: `params` name them in order (`*operands`
    takes all remaining ones as a tuple; operands past the names are ignored); the free
    name `dtype` stands for the result's element type."""

    params: tuple[str, ...]
    source: str

    @classmethod
    def of(cls, source: str) -> HostCode:
        """The operands are the expression's free names, in the order they appear; the
        name `operands` takes all (remaining) operands as a tuple. Builtins, `np`, `rt`
        and `dtype` are no operands."""
        params: list[str] = []

        class FreeNames(ast.NodeVisitor):
            def visit_Name(self, node: ast.Name) -> None:
                name = "*operands" if node.id == "operands" else node.id
                if name not in _NOT_OPERANDS and name not in params:
                    params.append(name)

        FreeNames().visit(ast.parse(source, mode="eval"))
        return cls(tuple(params), source)

    @property
    def expression(self) -> ast.expr:
        """A fresh parse: callers may rewrite it."""
        return ast.parse(self.source, mode="eval").body

    @functools.cached_property
    def function(self) -> Callable[..., Any]:
        """The expression as a Python function of the operand values (host ops only:
        the expression must need nothing but builtins)."""
        params = ", ".join((*self.params, "*_") if not self.variadic else self.params)
        return eval(f"lambda {params}: {self.source}", {"__builtins__": __builtins__})

    @property
    def variadic(self) -> bool:
        return bool(self.params) and self.params[-1].startswith("*")

    @property
    def is_operand(self) -> bool:
        """The expression is one operand: the op is a copy (or a cast) of it."""
        return self.source in self.params


ShapeRule = Callable[[Operation], "list[Attribute] | None"]
RowRule = Callable[[Operation, "Sequence[bool]"], bool]
"""(op, which operands carry the rows of a batch at dim 0) -> its results carry them too,
each row computed from the same row of those operands alone (the other operands, weights
and constants, are shared by every row)."""
MemoryOrderRule = Callable[[Sequence[int], list[Any], Operation], bool]


@dataclass(frozen=True)
class TorchOpInfo:
    name: str
    category: Category
    host: HostCode | None = None
    unpacks: bool = False
    """The results are the items of the one list/tuple the op reads (`[a, b] = xs`)."""
    reads_tensor_list: bool = False
    """Operand 0 is a host list of tensors of data-dependent length: the op stays in the
    host unless dycl-shape-infer turns the list into a static `ListConstruct`."""
    appends_to_list: bool = False
    """The result is operand 0 with operand 1 appended (lists have value semantics)."""
    empty_dim_list_means_all: bool = False
    """A reduction whose `dim=[]` means every dimension (ONNX export needs them spelled out)."""
    bools_as_uint8: tuple[int, ...] = ()
    """With a bool result, these operands (the bool tensors among them) are cast to uint8 and
    the result back to bool (exact: ONNX has no bool `Add`, and ONNX Runtime no bool `Where`:
    `(pos_idx + neg_idx).gt(0)` of two masks)."""
    shape: ShapeRule | None = field(default=None, compare=False)
    static_value: Callable[[Operation], Any] | None = field(default=None, compare=False)
    """The op's value when its operand types and constants fix it, else `NO_VALUE`."""
    same_memory_order: MemoryOrderRule | None = field(default=None, compare=False)
    """(source shape, constant operands, op) -> the strided view keeps the memory order."""
    macs: Callable[[Operation], int | None] | None = field(default=None, compare=False)
    rows: RowRule | None = field(default=None, compare=False)
    """The op maps the rows of dim 0 independently (see `RowRule`); None: not proven."""

    @property
    def python(self) -> Callable[..., Any] | None:
        """What a host scalar/list op computes, as a Python function; None for other ops."""
        if self.category is not Category.HOST or self.host is None:
            return None
        return self.host.function


_NOT_OPERANDS = frozenset(dir(builtins)) | {"np", "rt", "dtype"}

HostSpec = str | None | tuple[str | None, dict[str, Any]]


def _with(host: str | None, **rules: Any) -> HostSpec:
    """A table entry with rules besides its host expression."""
    return host, rules


def _records(category: Category, table: dict[str, HostSpec]) -> list[TorchOpInfo]:
    records = []
    for name, spec in table.items():
        host, rules = spec if isinstance(spec, tuple) else (spec, {})
        records.append(TorchOpInfo(name, category, None if host is None else HostCode.of(host), **rules))
    return records


# ------------------------------------------------------------------ constants


class _NoValue:
    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE: Any = _NoValue()
"""What `constant_value` gives for a value the program does not fix."""


def constant_value(value: SSAValue) -> Any:
    """The Python value of a constant SSA value (lists of constants included), or
    `NO_VALUE`."""
    owner = value.owner
    match owner:
        case t.ListConstructOp():
            elements = [constant_value(e) for e in owner.elements]
            return NO_VALUE if any(e is NO_VALUE for e in elements) else elements
        case arith.ConstantOp() if isinstance(owner.value, builtin.IntegerAttr):
            return owner.value.value.data
        # (not a device: no pass computes with one)
        case t.ConstantIntOp() | t.ConstantFloatOp() | t.ConstantBoolOp() | t.ConstantNoneOp() | t.ConstantStrOp():
            return owner.python_value
    return NO_VALUE


def materialize(value: Any, result_type: Attribute) -> Operation | None:
    """A constant op producing `value` with `result_type`, when there is one."""
    match result_type:
        case t.BoolType() if isinstance(value, bool):
            return t.ConstantBoolOp(value)
        case t.IntType() if isinstance(value, int) and not isinstance(value, bool):
            return t.ConstantIntOp(value)
        case t.FloatType() if isinstance(value, float):
            return t.ConstantFloatOp(value)
        case builtin.IntegerType() if isinstance(value, int):
            return arith.ConstantOp(builtin.IntegerAttr(int(value), result_type))
    return None


def static_list_elements(value: SSAValue) -> list[SSAValue] | None:
    """The elements of a list built by a `ListConstruct` and a chain of appends; None when
    the chain passes a block argument, a control-flow result or any other op."""
    appended: list[SSAValue] = []
    while True:
        owner = value.owner
        if isinstance(owner, t.ListConstructOp):
            return [*owner.elements, *reversed(appended)]
        if not isinstance(owner, Operation) or not op_info(owner).appends_to_list:
            return None
        appended.append(owner.operands[1])
        value = owner.operands[0]


# ----------------------------------------------------------------- shape rules


def _joined_list(op: Operation) -> tuple[list[t.ValueTensorType], int] | None:
    """The element types of `op`'s constant-length tensor list and its constant dim."""
    lst, dim = op.operands[0].owner, constant_value(op.operands[1])
    if not isinstance(lst, t.ListConstructOp) or not isinstance(dim, int) or not lst.elements:
        return None
    types = [e.type for e in lst.elements]
    if not all(isinstance(ty, t.ValueTensorType) and ty.shape is not None for ty in types):
        return None
    if len({len(ty.shape) for ty in types}) != 1 or len({ty.element_type for ty in types}) != 1:
        return None
    return types, dim


def _stack_shape(op: Operation) -> list[Attribute] | None:
    if (joined := _joined_list(op)) is None:
        return None
    types, dim = joined
    shape = list(types[0].shape)
    for ty in types[1:]:
        shape = [a if a == b else None for a, b in zip(shape, ty.shape)]
    dim = dim % (len(shape) + 1)
    return [t.ValueTensorType([*shape[:dim], len(types), *shape[dim:]], types[0].element_type)]


def _cat_shape(op: Operation) -> list[Attribute] | None:
    if (joined := _joined_list(op)) is None or not joined[0][0].shape:
        return None
    types, dim = joined
    dim = dim % len(types[0].shape)
    shape = list(types[0].shape)
    for ty in types[1:]:
        shape = [a if a == b else None for a, b in zip(shape, ty.shape)]
    sizes = [ty.shape[dim] for ty in types]
    shape[dim] = None if None in sizes else sum(sizes)
    return [t.ValueTensorType(shape, types[0].element_type)]


def _ranked_source(op: Operation) -> t.ValueTensorType | None:
    source = op.operands[0].type if op.operands else None
    return source if isinstance(source, t.ValueTensorType) and source.shape is not None else None


def _nonzero_shape(op: Operation) -> list[Attribute] | None:
    """`[?, rank]` int64: one row per nonzero element."""
    if (source := _ranked_source(op)) is None:
        return None
    return [t.ValueTensorType([None, len(source.shape)], op.results[0].type.element_type)]


def _selected_shape(op: Operation) -> list[Attribute] | None:
    """`[?]` of the source's dtype: the selected elements."""
    if (source := _ranked_source(op)) is None:
        return None
    return [t.ValueTensorType([None], source.element_type)]


def _unique_shapes(op: Operation) -> list[Attribute] | None:
    """`torch.unique`'s values `[?]`, inverse (the source's shape, int64), counts `[?]` int64."""
    if (source := _ranked_source(op)) is None:
        return None
    int64 = op.results[2].type.element_type
    return [t.ValueTensorType([None], source.element_type), t.ValueTensorType(list(source.shape), int64),
            t.ValueTensorType([None], int64)]


def _unique_dim_shapes(op: Operation, dim_operand: int = 1) -> list[Attribute] | None:
    """`torch.unique(x, dim=d)`'s values (x's shape, dim d of a runtime size), inverse
    `[x.shape[d]]` int64, counts `[?]` int64."""
    if (source := _ranked_source(op)) is None:
        return None
    dim = constant_value(op.operands[dim_operand])
    if not isinstance(dim, int) or not -len(source.shape) <= dim < len(source.shape):
        return None
    shape = list(source.shape)
    length, shape[dim] = shape[dim], None
    int64 = op.results[2].type.element_type
    return [t.ValueTensorType(shape, source.element_type), t.ValueTensorType([length], int64), t.ValueTensorType([None], int64)]


def _consecutive_shapes(op: Operation) -> list[Attribute] | None:
    """`torch.unique_consecutive(x, dim=d)`: as `torch.unique`'s, of dim None or d."""
    return _unique_shapes(op) if constant_value(op.operands[3]) is None else _unique_dim_shapes(op, dim_operand=3)


def _repeated_shape(op: Operation) -> list[Attribute] | None:
    """`repeat_interleave(x, repeats, dim)`: x's shape with dim of a runtime size (`[?]` of dim None)."""
    if (source := _ranked_source(op)) is None:
        return None
    dim = constant_value(op.operands[2])
    if dim is None:
        return [t.ValueTensorType([None], source.element_type)]
    if not isinstance(dim, int) or not -len(source.shape) <= dim < len(source.shape):
        return None
    shape = list(source.shape)
    shape[dim] = None
    return [t.ValueTensorType(shape, source.element_type)]


def _repeated_indices_shape(op: Operation) -> list[Attribute] | None:
    """`repeat_interleave(repeats)`: `[?]` of the repeats' dtype."""
    if (source := _ranked_source(op)) is None:
        return None
    return [t.ValueTensorType([None], source.element_type)]


def _static_size(op: Operation) -> Any:
    source = op.operands[0] if len(op.operands) == 2 else None
    if source is None or not isinstance(source.type, t.ValueTensorType):
        return NO_VALUE
    shape, dim = source.type.shape, constant_value(op.operands[1])
    if shape is None or not isinstance(dim, int) or not -len(shape) <= dim < len(shape):
        return NO_VALUE
    return NO_VALUE if shape[dim] is None else shape[dim]


def _static_length(op: Operation) -> Any:
    elements = static_list_elements(op.operands[0])
    return NO_VALUE if elements is None else len(elements)


# ---------------------------------------------------------- memory-order rules
# A strided view is free in the host when the non-size-1 dims keep their order (or it
# takes a contiguous leading block): numpy then returns a view, not a copy.


def _keeps_order(shape: Sequence[int], perm: Sequence[int]) -> bool:
    moved = [p for p in perm if shape[p] != 1]
    return moved == sorted(moved)


def _permute_keeps_order(shape: Sequence[int], args: list[Any], op: Operation) -> bool:
    return _keeps_order(shape, [d % len(shape) for d in args[0]]) if shape else True


def _transpose_keeps_order(shape: Sequence[int], args: list[Any], op: Operation) -> bool:
    perm = list(range(len(shape)))
    a, b = args[0] % len(shape), args[1] % len(shape)
    perm[a], perm[b] = perm[b], perm[a]
    return _keeps_order(shape, perm)


def _t_keeps_order(shape: Sequence[int], args: list[Any], op: Operation) -> bool:
    return len(shape) < 2 or _keeps_order(shape, [1, 0])


def _select_keeps_order(shape: Sequence[int], args: list[Any], op: Operation) -> bool:
    return all(d == 1 for d in shape[: args[0] % len(shape)])


def _slice_keeps_order(shape: Sequence[int], args: list[Any], op: Operation) -> bool:
    dim, step = args[0] % len(shape), args[3]
    return step in (1, None) and all(d == 1 for d in shape[:dim])


def _expand_keeps_order(shape: Sequence[int], args: list[Any], op: Operation) -> bool:
    return op.results[0].type.shape == tuple(shape)


# -------------------------------------------------------------- MAC estimates
# Convolutions and products only: next to them element-wise work is noise.


def _static_dims(value: SSAValue) -> tuple[int, ...] | None:
    type_ = value.type
    if not isinstance(type_, t.ValueTensorType) or not type_.has_static_shape:
        return None
    return tuple(type_.shape)


_LEAST_RUNTIME_DIM = 2


def _least_dims(value: SSAValue) -> tuple[int, ...] | None:
    type_ = value.type
    if not isinstance(type_, t.ValueTensorType) or type_.shape is None:
        return None
    return tuple(_LEAST_RUNTIME_DIM if d is None else d for d in type_.shape)


def _per_output(operand: int, inner: Callable[[tuple[int, ...]], int]) -> Callable[[Operation], int | None]:
    """MACs = output elements x `inner(shape of operand #operand)`. A dim known only at run time
    counts as 2, the least a sub-DNN is compiled for (docs/conventions.md, "The HCFG"): the
    estimate is a lower bound, so that a prefill of a prompt of any length is not taken for
    a small sub-DNN."""

    def macs(op: Operation) -> int | None:
        if len(op.operands) <= operand or not op.results:
            return None
        result, source = _least_dims(op.results[0]), _least_dims(op.operands[operand])
        if result is None or source is None or not source:
            return None
        return math.prod(result) * inner(source)

    return macs


def _weight_fan_in(shape: tuple[int, ...]) -> int:
    return math.prod(shape[1:])  # conv [Cout, Cin/groups, k...], linear [out, in]


def _reduced_dim(shape: tuple[int, ...]) -> int:
    return shape[-1]  # matmul-like: [..., M, K] @ [..., K, N]



# -------------------------------------------------------------- row rules (run_many)
# Each rule proves, from the op's constant arguments and operand ranks, that the op maps
# the rows of dim 0 independently; anything it cannot prove is refused (sound by
# construction: a refused sub-DNN runs request by request).


def _rank(value: SSAValue) -> int | None:
    type_ = value.type
    if isinstance(type_, t.ValueTensorType) and type_.shape is not None:
        return len(type_.shape)
    return None


def _is_tensor(value: SSAValue) -> bool:
    return isinstance(value.type, t.ValueTensorType)


def _not_dim0(dim: Any, rank: int | None, extra: int = 0) -> bool:
    """A constant dim (of a tensor of `rank`, + `extra` for unsqueeze) that is not 0."""
    if not isinstance(dim, int) or isinstance(dim, bool) or rank is None:
        return False
    n = rank + extra
    return n > 0 and -n <= dim < n and dim % n != 0


def _rows_elementwise(op: Operation, carriers: Sequence[bool]) -> bool:
    """Broadcasting math: the carriers keep dim 0 aligned with the result's; other tensors
    broadcast along it (fewer dims, or a dim 0 of 1)."""
    result = op.results[0]
    rank = _rank(result)
    if not rank:
        return False
    for operand, carries in zip(op.operands, carriers):
        if not _is_tensor(operand):
            continue
        operand_rank = _rank(operand)
        if operand_rank is None:
            return False
        if carries:
            if operand_rank != rank:
                return False
        elif operand_rank == rank and operand.type.shape[0] != 1:
            return False
    return True


def _rows_through(operand: int, min_rank: int = 1, max_rank: int | None = None,
                  fixed: dict[int, Any] | None = None) -> RowRule:
    """Only operand `operand` may carry rows (the others are weights), of rank in
    [min_rank, max_rank]; `fixed` maps operand positions to the constant they must hold
    (batch_norm's `training=False`)."""

    def rule(op: Operation, carriers: Sequence[bool]) -> bool:
        if operand >= len(op.operands) or any(c for k, c in enumerate(carriers) if k != operand):
            return False
        rank = _rank(op.operands[operand])
        if rank is None or rank < min_rank or (max_rank is not None and rank > max_rank):
            return False
        return all(k < len(op.operands) and constant_value(op.operands[k]) is v for k, v in (fixed or {}).items())

    return rule


def _rows_layer_norm(op: Operation, carriers: Sequence[bool]) -> bool:
    shape = constant_value(op.operands[1])
    rank = _rank(op.operands[0])
    return not any(carriers[1:]) and isinstance(shape, list) and rank is not None and len(shape) < rank


def _rows_with_dim(dim_operand: int, extra: int = 0, dims_are_list: bool = False) -> RowRule:
    """Operand 0 carries rows; the op works along a constant dim (or list of dims) not 0."""

    def rule(op: Operation, carriers: Sequence[bool]) -> bool:
        if any(carriers[1:]) or len(op.operands) <= dim_operand:
            return False
        rank = _rank(op.operands[0])
        dims = constant_value(op.operands[dim_operand])
        if dims_are_list:
            return isinstance(dims, list) and bool(dims) and all(_not_dim0(d, rank) for d in dims)
        return _not_dim0(dims, rank, extra)

    return rule


def _rows_conv(op: Operation, carriers: Sequence[bool]) -> bool:
    """A batched convolution: input rank = weight rank (an unbatched input's dim 0 is channels)."""
    if any(carriers[1:]) or len(op.operands) < 2:
        return False
    rank = _rank(op.operands[0])
    return rank is not None and rank >= 3 and rank == _rank(op.operands[1])


def _rows_matmul(op: Operation, carriers: Sequence[bool]) -> bool:
    """`x @ W` with x of rank >= 2 and W shared of rank <= 2 (W's rows are not the batch's),
    or a batched product of two carriers of one rank >= 3."""
    lhs, rhs = op.operands[:2]
    lhs_rank, rhs_rank = _rank(lhs), _rank(rhs)
    if lhs_rank is None or rhs_rank is None:
        return False
    if carriers[0] and not carriers[1]:
        return lhs_rank >= 2 and rhs_rank <= 2
    if carriers[0] and carriers[1]:
        return lhs_rank == rhs_rank >= 3
    return False


def _rows_flatten(op: Operation, carriers: Sequence[bool]) -> bool:
    rank = _rank(op.operands[0])
    start = constant_value(op.operands[1])
    return rank is not None and rank >= 2 and _not_dim0(start, rank)


def _rows_reshape(op: Operation, carriers: Sequence[bool]) -> bool:
    """`x.view(-1, a, b)`: rows stay rows only when dim 0 is inferred and the rest of the
    row is spelled out (a constant 1 at dim 0 would be the one request's batch size)."""
    if any(carriers[1:]):
        return False
    shape = _static_dims(op.operands[0])
    sizes = constant_value(op.operands[1])
    if shape is None or not shape or not isinstance(sizes, list) or len(sizes) < 1 or sizes[0] != -1:
        return False
    rest = sizes[1:]
    return all(isinstance(s, int) and s >= 0 for s in rest) and math.prod(rest) == math.prod(shape[1:])


def _rows_permute(op: Operation, carriers: Sequence[bool]) -> bool:
    dims = constant_value(op.operands[1])
    rank = _rank(op.operands[0])
    return isinstance(dims, list) and bool(dims) and rank is not None and dims[0] % rank == 0


def _rows_transpose(op: Operation, carriers: Sequence[bool]) -> bool:
    rank = _rank(op.operands[0])
    return all(_not_dim0(constant_value(v), rank) for v in op.operands[1:3])


def _rows_expand(op: Operation, carriers: Sequence[bool]) -> bool:
    sizes = constant_value(op.operands[1])
    rank = _rank(op.operands[0])
    return isinstance(sizes, list) and rank is not None and len(sizes) == rank and rank > 0 and sizes[0] == -1


def _rows_tensor_list(op: Operation, carriers: Sequence[bool]) -> bool:
    """cat/stack of a list of carriers along a dim not 0 (the list's tensors carry rows)."""
    if not carriers or not carriers[0] or any(carriers[1:]):
        return False
    items = static_list_elements(op.operands[0])
    if not items:
        return False
    rank = _rank(items[0])
    extra = 1 if op_info(op).name == "torch.aten.stack" else 0
    return all(_rank(i) == rank for i in items) and _not_dim0(constant_value(op.operands[1]), rank, extra)


def _rows_identity(op: Operation, carriers: Sequence[bool]) -> bool:
    return True


ELEMENTWISE_OPS = tuple(
    f"torch.aten.{name}"
    for name in (
        "relu", "relu6", "sigmoid", "tanh", "gelu", "silu", "exp", "log", "neg", "abs", "sqrt", "rsqrt",
        "reciprocal", "sin", "cos", "erf", "hardtanh", "hardswish", "hardsigmoid", "leaky_relu", "elu",
        "clamp", "clamp_min", "clamp_max", "logical_not", "bitwise_not", "floor", "ceil", "round",
        "add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor", "add.Scalar", "sub.Scalar", "mul.Scalar",
        "div.Scalar", "rsub.Scalar", "pow.Tensor_Scalar", "pow.Tensor_Tensor", "maximum", "minimum",
        "where.self", "where.ScalarSelf", "where.ScalarOther", "logical_and", "logical_or",
        "masked_fill.Scalar", "to.dtype", "_to_copy", "type_as",
        *(f"{cmp}.{kind}" for cmp in ("eq", "ne", "lt", "le", "gt", "ge") for kind in ("Tensor", "Scalar")),
    )
)


# The list ops, by name: the frontend builds them, and every consumer reads their records.
LIST_CONSTRUCT = t.ListConstructOp.name
LIST_LENGTH = "torch.aten.len.t"
LIST_ITEM = "torch.aten.__getitem__.t"
LIST_APPEND = "torch.aten.append.t"
LIST_SET_ITEM = "torch.aten._set_item.t"
LIST_UNPACK = "torch.prim.ListUnpack"

# --------------------------------------------------------------------- the table

# Each table maps op names to their host expression (None: none) or to `_with(...)`.

_HOST_OPS: dict[str, HostSpec] = {
    # Plain Python values. Lists have value semantics (an append makes a new list): list
    # values may be shared by both sides of an scf.if.
    LIST_CONSTRUCT: "[*operands]",
    LIST_LENGTH: _with("len(xs)", static_value=_static_length),
    LIST_ITEM: "xs[i]",
    LIST_APPEND: _with("[*xs, x]", appends_to_list=True),
    # `xs[i] = x` as a new list; `range(len(xs))[i]` has the list's index rules (negative
    # from the end, IndexError past it)
    LIST_SET_ITEM: "[*xs[: range(len(xs))[i]], x, *xs[range(len(xs))[i] + 1 :]]",
    "torch.aten.any.bool": "any(xs)",
    "torch.aten.all.bool": "all(xs)",
    "torch.prim.max.self_int": "max(xs)",
    "torch.prim.min.self_int": "min(xs)",
    LIST_UNPACK: _with("xs", unpacks=True),
    "torch.prim.TupleConstruct": "operands",
    "torch.prim.TupleUnpack": _with("xs", unpacks=True),
    **{f"torch.aten.neg.{kind}": "-a" for kind in ("int", "float")},
    "torch.aten.__not__": "not a",
    **{f"torch.aten.Bool.{kind}": "bool(a)" for kind in ("int", "float")},
    t.BoolTensorOp.name: "bool(x)",  # a host sync
    **{f"torch.aten.Int.{kind}": "int(a)" for kind in ("bool", "float")},
    "torch.aten.Int.Tensor": "int(x.item())",
    "torch.aten.Float.Tensor": "float(x.item())",
    "torch.aten.Float.Scalar": "float(a)",
    "torch.aten.item": "x.item()",
    "torch.prim.max.int": "max(a, b)",
    "torch.prim.min.int": "min(a, b)",
    # torch_c: builtin and torch scalars are the same Python bools and ints in the host.
    **{cast.name: "x" for cast in (t.ToI1Op, t.FromI1Op, t.ToI64Op, t.FromI64Op)},
}

_TENSOR_QUERIES: dict[str, HostSpec] = {
    "torch.aten.size.int": _with("x.shape[dim]", static_value=_static_size),
    "torch.aten.dim": "x.ndim",
    "torch.aten.numel": "x.size",
}

# Computation-free: the host makes them on numpy without a kernel.
_IDENTITIES: dict[str, HostSpec] = dict.fromkeys(
    (
        "torch.aten.clone",
        "torch.aten.contiguous",
        "torch.aten.detach",
        "torch.aten.alias",
        "torch.aten.lift_fresh_copy",
        t.TensorStaticInfoCastOp.name,
    ),
    _with("x", rows=_rows_identity),
)

_RESHAPES: dict[str, HostSpec] = {
    **dict.fromkeys(
        ("torch.aten.view", "torch.aten.reshape", "torch.aten._unsafe_view"),
        _with("x.reshape(shape)", rows=_rows_reshape),
    ),
    "torch.aten.flatten.using_ints": _with("rt.flatten(x, start, end)", rows=_rows_flatten),
    "torch.aten.unflatten.int": _with("rt.unflatten(x, dim, sizes)", rows=_rows_with_dim(1)),
    "torch.aten.squeeze": "np.squeeze(x)",
    "torch.aten.squeeze.dim": _with("rt.squeeze_dim(x, dim)", rows=_rows_with_dim(1)),
    "torch.aten.squeeze.dims": _with("rt.squeeze_dims(x, dims)", rows=_rows_with_dim(1, dims_are_list=True)),
    "torch.aten.unsqueeze": _with("np.expand_dims(x, dim)", rows=_rows_with_dim(1, extra=1)),
}

_STRIDED_VIEWS: dict[str, HostSpec] = {
    "torch.aten.permute": _with("x.transpose(dims)", same_memory_order=_permute_keeps_order, rows=_rows_permute),
    "torch.aten.transpose.int": _with("x.swapaxes(a, b)", same_memory_order=_transpose_keeps_order, rows=_rows_transpose),
    "torch.aten.t": _with("x.T", same_memory_order=_t_keeps_order),
    "torch.aten.expand": _with("rt.expand(x, sizes)", same_memory_order=_expand_keeps_order, rows=_rows_expand),
    "torch.aten.select.int": _with("rt.select(x, dim, index)", same_memory_order=_select_keeps_order, rows=_rows_with_dim(1)),
    "torch.aten.slice.Tensor": _with(
        "rt.slice_tensor(x, dim, start, end, step)", same_memory_order=_slice_keeps_order, rows=_rows_with_dim(1)
    ),
}

_TENSOR_MATH: dict[str, HostSpec] = {
    # The host runs these on numpy too: stores at a run-time index (a tensor op reading a
    # host int stays in the host), host lists of tensors, scalars made tensors.
    "torch.aten.select_scatter": "rt.select_scatter(x, src, dim, index)",
    "torch.aten.slice_scatter": "rt.slice_scatter(x, src, dim, start, end, step)",
    "torch.aten.stack": _with("rt.stack(xs, dim)", reads_tensor_list=True, shape=_stack_shape, rows=_rows_tensor_list),
    "torch.aten.cat": _with("rt.cat(xs, dim)", reads_tensor_list=True, shape=_cat_shape, rows=_rows_tensor_list),
    "torch.aten.split.Tensor": _with("rt.split(x, size, dim)", rows=_rows_with_dim(2)),
    "torch.aten.split_with_sizes": _with("rt.split_with_sizes(x, sizes, dim)", rows=_rows_with_dim(2)),
    "torch.aten.chunk": _with("rt.chunk(x, chunks, dim)", rows=_rows_with_dim(2)),
    "torch.aten.unbind.int": _with("rt.unbind(x, dim)", rows=_rows_with_dim(1)),
    "torch.prim.NumToTensor.Scalar": "np.array(a, dtype=dtype)",
    "torch.aten.tensor.int": "np.array(a, dtype=dtype)",
    "torch.aten.scalar_tensor": "np.array(s, dtype=dtype)",
    "torch.aten.tensor.float": "np.array(a, dtype=dtype)",
    "torch.aten.tensor.bool": "np.array(a, dtype=dtype)",
    # `torch.tensor(lst)` of a host list of runtime length
    "torch.aten.tensor": "np.array(data, dtype=dtype)",
    # filled tensors whose size is a host int (`torch.zeros(len(lengths), max(lengths))`),
    # ranges and narrowed views that a host int bounds (`torch.arange(n)`, `x.narrow(1, 0, n)`)
    "torch.aten.zeros": "np.zeros(size, dtype=dtype)",
    "torch.aten.arange": "np.arange(end, dtype=dtype)",
    "torch.aten.arange.start": "np.arange(start, end, dtype=dtype)",
    "torch.aten.arange.start_step": "np.arange(start, end, step, dtype=dtype)",
    "torch.aten.narrow": "rt.narrow(x, dim, start, length)",
    # `torch.equal(a, b)`: a Python bool from tensor values, which the host decides on (same
    # shape and the same values; NaN equals nothing; values compare across dtypes)
    "torch.aten.equal": "np.array_equal(a, b)",
    "torch.aten.ones": "np.ones(size, dtype=dtype)",
    "torch.aten.full": "np.full(size, value, dtype=dtype)",
    # a pad whose width a host int gives (`F.pad(seqs, (0, n - seqs.size(1)))`)
    "torch.aten.pad": "rt.pad(x, pad, mode, value)",
    # Sub-DNN work with a MAC estimate.
    **dict.fromkeys(
        ("torch.aten.conv1d", "torch.aten.conv2d", "torch.aten.conv3d", "torch.aten.convolution",
         "torch.aten._convolution"),
        _with(None, macs=_per_output(1, _weight_fan_in), rows=_rows_conv),
    ),
    "torch.aten.linear": _with(None, macs=_per_output(1, _weight_fan_in), rows=_rows_through(0, min_rank=2)),
    **dict.fromkeys(
        ("torch.aten.matmul", "torch.aten.mm", "torch.aten.bmm"),
        _with(None, macs=_per_output(0, _reduced_dim), rows=_rows_matmul),
    ),
    **dict.fromkeys(("torch.aten.addmm", "torch.aten.baddbmm"), _with(None, macs=_per_output(1, _reduced_dim))),
    **dict.fromkeys(
        ("torch.aten.amax", "torch.aten.amin"),
        _with(None, empty_dim_list_means_all=True, rows=_rows_with_dim(1, dims_are_list=True)),
    ),
    # Kernels whose only rule is the rows one (run_many).
    **dict.fromkeys(ELEMENTWISE_OPS, _with(None, rows=_rows_elementwise)),
    **dict.fromkeys(("torch.aten.add.Tensor", "torch.aten.add.Scalar"), _with(None, rows=_rows_elementwise, bools_as_uint8=(0, 1))),
    **dict.fromkeys(
        ("torch.aten.where.self", "torch.aten.where.ScalarSelf", "torch.aten.where.ScalarOther"),
        _with(None, rows=_rows_elementwise, bools_as_uint8=(1, 2)),
    ),
    "torch.aten.masked_fill.Scalar": _with(None, rows=_rows_elementwise, bools_as_uint8=(0,)),
    "torch.aten.masked_fill.Tensor": _with(None, bools_as_uint8=(0, 2)),
    **dict.fromkeys(
        ("torch.aten.max_pool2d", "torch.aten.avg_pool2d", "torch.aten.adaptive_avg_pool2d",
         "torch.aten.adaptive_max_pool2d"),
        _with(None, rows=_rows_through(0, min_rank=4, max_rank=4)),
    ),
    **dict.fromkeys(
        ("torch.aten.max_pool1d", "torch.aten.avg_pool1d", "torch.aten.adaptive_avg_pool1d"),
        _with(None, rows=_rows_through(0, min_rank=3, max_rank=3)),
    ),
    "torch.aten.batch_norm": _with(None, rows=_rows_through(0, min_rank=2, fixed={5: False})),
    "torch.aten.dropout": _with(None, rows=_rows_through(0, fixed={2: False})),
    "torch.aten.layer_norm": _with(None, rows=_rows_layer_norm),
    "torch.aten.embedding": _with(None, rows=_rows_through(1)),
    **dict.fromkeys(
        ("torch.aten.softmax.int", "torch.aten.log_softmax.int", "torch.aten._softmax", "torch.aten._log_softmax",
         "torch.aten.argmax", "torch.aten.argmin", "torch.aten.max.dim", "torch.aten.min.dim",
         "torch.aten.cumsum"),
        _with(None, rows=_rows_with_dim(1)),
    ),
    **dict.fromkeys(
        ("torch.aten.mean.dim", "torch.aten.sum.dim_IntList"), _with(None, rows=_rows_with_dim(1, dims_are_list=True))
    ),
}

# Sizes that depend on data: the host computes them (numpy gives torch's order: row-major
# positions, the selected elements in that order) and sub-DNNs take them as runtime dims.
_DATA_SIZES: dict[str, HostSpec] = {
    "torch.aten.nonzero": _with("np.argwhere(x).astype(np.int64)", shape=_nonzero_shape),
    "torch.aten.masked_select": _with("rt.masked_select(x, mask)", shape=_selected_shape),
    # `torch.unique(x, return_inverse=True, return_counts=True)`: (values, inverse, counts),
    # a tuple the results unpack; numpy sorts as torch does, NaNs last and each its own value
    "torch.aten._unique2": _with(
        "(np.unique(x, equal_nan=False), np.unique(x, return_inverse=True, equal_nan=False)[1].reshape(np.shape(x)).astype(np.int64),"
        " np.unique(x, return_counts=True, equal_nan=False)[1].astype(np.int64))",
        shape=_unique_shapes, unpacks=True,
    ),
    # `torch.unique(x, dim=d, return_inverse=True, return_counts=True)` of integers or bools
    # (the frontend refuses floats: torch's order of NaN slices is not numpy's): slices
    # sorted lexicographically, as numpy sorts them; the inverse is 1-d, of x's dim d
    "torch.aten.unique_dim": _with("rt.unique_dim(x, dim)", shape=_unique_dim_shapes, unpacks=True),
    # `torch.unique_consecutive(x, return_inverse=True, return_counts=True, dim=d)`: runs of
    # elements (of slices along d), NaN != NaN as in torch
    "torch.aten.unique_consecutive": _with("rt.unique_consecutive(x, return_inverse, return_counts, dim)", shape=_consecutive_shapes, unpacks=True),
    "torch.aten.repeat_interleave.self_Tensor": _with("np.repeat(x, repeats, axis=dim)", shape=_repeated_shape),
    "torch.aten.repeat_interleave.Tensor": _with(
        "np.repeat(np.arange(np.size(repeats)), repeats).astype(repeats.dtype)", shape=_repeated_indices_shape
    ),
}

# Random draws: the host program runs them on numpy (dycl.runtime.random_draws), with the
# law of the torch op; a bool or integer `dtype` comes from the result type.
_RANDOM: dict[str, HostSpec] = {
    "torch.aten.bernoulli": "rt.bernoulli(p)",
    # (`x.bernoulli(p)`: x's shape and dtype; keywords keep the operands in order)
    **dict.fromkeys(("torch.aten.bernoulli.p", "torch.aten.bernoulli.Tensor"), "rt.bernoulli(shape=np.shape(x), p=p, dtype=dtype)"),
    "torch.aten.rand": "rt.rand(size, dtype)",
    "torch.aten.rand_like": "rt.rand(np.shape(x), dtype)",
    "torch.aten.randn": "rt.randn(size, dtype)",
    "torch.aten.randn_like": "rt.randn(np.shape(x), dtype)",
    "torch.aten.randint.low": "rt.randint(low, high, size, dtype)",
    "torch.aten.randint": "rt.randint(0, high, size, dtype)",
    "torch.aten.multinomial": "rt.multinomial(probs, num_samples, replacement)",
    "torch.aten.uniform": "rt.uniform(x, low, high)",
    "torch.aten.normal_functional": "rt.normal(x, mean, std)",
    "torch.aten.exponential": "rt.exponential(x, lambd)",
}

# Effects, and torch-mlir's placeholder for a value no path defines.
_EFFECTS: dict[str, HostSpec] = dict.fromkeys(
    ("torch.prim.RaiseException", "torch.prim.Print", "torch.aten.warn", "torch.prim.Uninitialized", "dycl.error")
)

_CONSTANTS: dict[str, HostSpec] = dict.fromkeys(
    op.name
    for op in (
        t.ConstantIntOp, t.ConstantFloatOp, t.ConstantBoolOp, t.ConstantNoneOp, t.ConstantStrOp,
        t.ConstantDeviceOp, t.ValueTensorLiteralOp,
    )
)

_RECORDS: list[TorchOpInfo] = [
    *_records(Category.HOST, _HOST_OPS),
    *_records(Category.TENSOR_QUERY, _TENSOR_QUERIES),
    *_records(Category.IDENTITY, _IDENTITIES),
    *_records(Category.RESHAPE, _RESHAPES),
    *_records(Category.STRIDED_VIEW, _STRIDED_VIEWS),
    *_records(Category.TENSOR_MATH, _TENSOR_MATH),
    *_records(Category.DATA_SIZE, _DATA_SIZES),
    *_records(Category.RANDOM, _RANDOM),
    *_records(Category.EFFECT, _EFFECTS),
    *_records(Category.CONSTANT, _CONSTANTS),
]

_BY_NAME: dict[str, TorchOpInfo] = {info.name: info for info in _RECORDS}
assert len(_BY_NAME) == len(_RECORDS), "an op is listed twice"

# The scalar binary family `torch.aten.<op>.<kind>`: `add.int`, `lt.float`, `eq.bool`...
_SCALAR_BINARY = {
    "add": "a + b", "sub": "a - b", "mul": "a * b", "div": "a / b", "floordiv": "a // b",
    "remainder": "a % b", "eq": "a == b", "ne": "a != b", "lt": "a < b", "le": "a <= b",
    "gt": "a > b", "ge": "a >= b", "__and__": "a & b", "__or__": "a | b", "__is__": "a is b",
    "__isnot__": "a is not b",
}
_SCALAR_KINDS = frozenset({"int", "float", "bool", "float_int", "int_float"})

SIZE_QUERY = "torch.aten.size.int"
SIZE_ARITHMETIC = frozenset({"torch.aten.add.int", "torch.aten.sub.int", "torch.aten.mul.int", "torch.aten.neg.int"})
"""Int arithmetic that every backend computes on sizes exactly as Python does (torch.export's
SymInts, ONNX shape arithmetic, Relax shape expressions): a size computed from `SIZE_QUERY`
and these may sit in a sub-DNN (`dycl.passes._common.size_leaves`). Not `//` (the ONNX
exporter divides sizes with `Div`, which truncates below 0) nor `max`/`min`."""

_TORCH_NAMESPACE = "torch."
_VALUE_NAMESPACES = (_TORCH_NAMESPACE, "torch_c.", "dycl.")


def _scalar_binary(name: str) -> TorchOpInfo | None:
    parts = name.split(".")
    if len(parts) == 4 and parts[:2] == ["torch", "aten"] and parts[3] in _SCALAR_KINDS:
        if (expression := _SCALAR_BINARY.get(parts[2])) is not None:
            return TorchOpInfo(name, Category.HOST, HostCode.of(expression))
    return None


@functools.lru_cache(maxsize=4096)
def _info_by_name(name: str) -> TorchOpInfo | None:
    if (info := _BY_NAME.get(name)) is not None:
        return info
    if not name.startswith(_VALUE_NAMESPACES[:2]):
        return None
    return _scalar_binary(name) or TorchOpInfo(name, Category.TENSOR_MATH)


_NOT_TORCH = TorchOpInfo("", Category.NOT_TORCH)


def op_info(op: Operation | str) -> TorchOpInfo:
    """The record of a torch / torch_c op (by op or name). Unlisted torch ops are tensor
    math; ops of other dialects get an empty record (category NOT_TORCH)."""
    name = op if isinstance(op, str) else t.op_name(op)
    return _info_by_name(name) or _NOT_TORCH


def op_macs(op: Operation) -> int:
    """The op's multiply-accumulate estimate (its record's `macs`), 0 where it has none."""
    estimate = op_info(op).macs
    return (estimate(op) or 0) if estimate is not None else 0


def is_torch_op(op: Operation) -> bool:
    """An op of torch-mlir's `torch` dialect (registered here or not)."""
    return t.op_name(op).startswith(_TORCH_NAMESPACE)


def has_value_semantics(op: Operation) -> bool:
    """A torch, torch_c or dycl op whose only effect is its results: unused, it is dead.
    (xDSL's dead-code elimination keeps unregistered ops, whose effects it cannot know.)"""
    return t.op_name(op).startswith(_VALUE_NAMESPACES) and op_info(op).category is not Category.EFFECT


def is_computation_free(op: Operation) -> bool:
    return op_info(op).category.computation_free


# -------------------------------------------------------------- random ops

# Arguments under which a random op of torch draws nothing: dropout outside training or of
# probability 0 (`F.dropout(x, p, self.training)` in eval mode, an `nn.LSTM`'s `dropout`).
_DRAWS_NOTHING_WHEN = {"train": False, "training": False, "p": 0.0, "dropout": 0.0, "dropout_p": 0.0}


@functools.lru_cache(maxsize=1024)
def _seeded_arguments(name: str) -> tuple[str, ...] | None:
    """The argument names of the aten op `name` if torch tags it `nondeterministic_seeded`
    (it draws from a generator), else None."""
    import torch

    parts = name.split(".")
    if len(parts) < 3 or parts[:2] != ["torch", "aten"]:
        return None
    try:
        overload = getattr(getattr(torch.ops.aten, parts[2]), parts[3] if len(parts) > 3 else "default")
    except (AttributeError, RuntimeError):
        return None
    if torch.Tag.nondeterministic_seeded not in overload.tags:
        return None
    return tuple(a.name for a in overload._schema.arguments)


def refused_random(name: str, constant: Callable[[int], Any]) -> bool:
    """Whether the torch op `name` draws random numbers that DyCL does not reproduce: torch
    tags it `nondeterministic_seeded`, it is no `RANDOM` record, and its constant arguments
    (`constant(k)`: operand k's value, or NO_VALUE) do not make it draw nothing (dropout in
    eval mode or of p = 0, `rrelu` with lower == upper)."""
    if op_info(name).category is Category.RANDOM or (arguments := _seeded_arguments(name)) is None:
        return False
    values = {arg: constant(k) for k, arg in enumerate(arguments)}
    for arg, value in _DRAWS_NOTHING_WHEN.items():
        given = values.get(arg, NO_VALUE)
        if given is value if isinstance(value, bool) else not isinstance(given, bool) and given == value:
            return False
    lower, upper = values.get("lower", NO_VALUE), values.get("upper", NO_VALUE)
    return lower is NO_VALUE or lower != upper


# -------------------------------------------------------------- torch calls


class TorchOpCall:
    """A torch op resolved once per op name: operands map onto the schema in order,
    keyword-only schema arguments are passed as keywords (positionally they fail).
    Raises AttributeError, RuntimeError or ValueError when torch has no such op."""

    def __init__(self, name: str):
        import torch

        ns, opname, *overload = name.removeprefix(_TORCH_NAMESPACE).split(".", 2)
        packet = getattr(getattr(torch.ops, ns), opname)
        self.fn = getattr(packet, overload[0] if overload else "default")
        self.kwarg_names = [a.name for a in self.fn._schema.arguments if a.kwarg_only]
        self.n_positional = len(self.fn._schema.arguments) - len(self.kwarg_names)

    def __call__(self, args: Sequence[Any]) -> Any:
        positional = args[: self.n_positional]
        keywords = dict(zip(self.kwarg_names, args[self.n_positional :]))
        return self.fn(*positional, **keywords)


def literal_tensor(op: t.ValueTensorLiteralOp):
    """The literal as a torch tensor of its element type."""
    import torch

    from dycl.dialects.dtypes import torch_dtype

    return torch.from_numpy(op.raw_array()).to(torch_dtype(op.value.get_element_type()))


__all__ = [
    "Category",
    "HostCode",
    "NO_VALUE",
    "SIZE_ARITHMETIC",
    "SIZE_QUERY",
    "TorchOpCall",
    "TorchOpInfo",
    "constant_value",
    "has_value_semantics",
    "is_computation_free",
    "is_torch_op",
    "literal_tensor",
    "materialize",
    "op_info",
    "refused_random",
    "static_list_elements",
]
