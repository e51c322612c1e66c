"""Stores at index tensors (`index_put`: `hx[idx] = v`, `accum[idx] += h`, `x[:, idx] = v`)
as Relax `scatter_nd`, for `dycl.backends.tvm`'s Relax import.

Relax's own `index_put` takes one index tensor per dim and, given an index of a symbolic
length (`idx = mask.nonzero().squeeze(1)`: a runtime dim of the sub-DNN), fails to compile
("Cannot broadcast index shapes: [(n, 4), (n, 4)]"); at a static length 0 its lowering
divides by zero. `scatter_nd` takes the index tuples of the indexed dims only, stacked on a
last axis (`[*B, k]`, `B` the indices' broadcast shape), and the values at the shape
PyTorch's indexing result has: any length, 0 included, at run time.

Semantics kept from PyTorch: negative indices count from the end; the values broadcast to
the indexed shape, and where the sizes are known only at run time (the values' rows and the
index's length are separate runtime dims of the sub-DNN) a Relax `match_cast` gives them
one size, which the scatter kernel checks its arguments have when it runs, raising where
eager raises; `accumulate=True` adds every duplicate index's
values (`scatter_nd`'s "add"), and a plain store at duplicate indices, where PyTorch does
not say which value wins, keeps the last, as PyTorch's CPU kernel does.
"""

from __future__ import annotations

from typing import Any


def store_at_indices(importer, node) -> Any:
    """The Relax value of `index_put(data, indices, values, accumulate)` whose indices are
    integer tensors (None for a dim taken whole), as `scatter_nd`."""
    from tvm import relax

    emit = importer.block_builder.emit
    args = importer.retrieve_args(node)
    data, indices, values = args[0], list(args[1]), args[2]
    accumulate = args[3] if len(args) > 3 else node.kwargs.get("accumulate", False)
    shape = list(data.ty.shape)
    given = [k for k, index in enumerate(indices) if index is not None]
    rest = [k for k in range(len(shape)) if k not in given]

    # Each index: int64, counted from the end where negative, one position per row. Made
    # before any match_cast of a size they share: a match_cast to a size already known
    # rebinds it for the views after it (TVM 0.27's shape lowering), and a view of an index
    # at a rebound length would silently cut it; kernels check their arguments' sizes.
    columns = [_from_the_end(importer, _as_int64(emit, indices[k]), shape[k]) for k in given]
    columns = [emit(relax.op.expand_dims(c, [-1])) for c in columns]
    index_shape = _broadcast_shape([list(c.ty.shape)[:-1] for c in columns])
    if len(columns) == 1:
        positions = columns[0]
    else:
        columns = [_conform(importer, c, [*index_shape, 1])[0] for c in columns]
        positions = emit(relax.op.concat(columns, axis=-1))

    # PyTorch's layout of the indexed result: the index dims where the indices stand if they
    # are adjacent, else first; scatter_nd wants them first, then the other dims in order
    adjacent = given == list(range(given[0], given[-1] + 1))
    before = given[0] if adjacent else 0
    result_shape = [shape[k] for k in rest[:before]] + index_shape + [shape[k] for k in rest[before:]]
    updates, checked = _conform(importer, values, result_shape)
    width = len(index_shape)
    if before:
        index_dims_first = [*range(before, before + width), *range(before), *range(before + width, len(result_shape))]
        updates = emit(relax.op.permute_dims(updates, index_dims_first))

    if any(_is_zero(size) for size in index_shape):
        return _after(importer, data, updates) if checked else data  # nothing stored
    if given != list(range(len(given))):
        order = given + rest
        data = emit(relax.op.permute_dims(data, order))
    stored = emit(relax.op.scatter_nd(data, positions, updates, "add" if accumulate else "update"))
    if given != list(range(len(given))):
        inverse = sorted(range(len(order)), key=order.__getitem__)
        stored = emit(relax.op.permute_dims(stored, inverse))
    return stored


def _as_int64(emit, index):
    from tvm import relax

    return index if index.ty.dtype == "int64" else emit(relax.op.astype(index, "int64"))


def _from_the_end(importer, index, size):
    """`index` with its negative values counted from the end of a dim of `size`. A dim of
    static size has been wrapped in the graph already (`idx % n`); here the symbolic ones."""
    from tvm import relax, tirx

    if isinstance(size, tirx.IntImm) or isinstance(size, int):
        return index
    emit = importer.block_builder.emit
    extent = emit(relax.op.shape_to_tensor(relax.ShapeExpr([size])))  # [1] int64, read at run time
    negative = emit(relax.op.less(index, relax.const(0, "int64")))
    return emit(relax.op.where(negative, emit(relax.op.add(index, extent)), index))


def _static(size) -> int | None:
    from tvm import tirx

    if isinstance(size, int):
        return size
    return int(size.value) if isinstance(size, tirx.IntImm) else None


def _same(a, b) -> bool:
    """Whether two sizes are the same expression (a symbolic size only equals itself)."""
    from tvm_ffi import structural_equal

    return bool(structural_equal(a, b))


def _is_zero(size) -> bool:
    return _static(size) == 0


def _broadcast_shape(shapes: list[list]) -> list:
    """The broadcast of index shapes (right-aligned): in each dim the first size that is not
    a static 1 (the others are checked against it by `_conform`)."""
    rank = max(len(s) for s in shapes)
    result = []
    for d in range(rank):
        sizes = [s[len(s) - rank + d] for s in shapes if len(s) - rank + d >= 0]
        result.append(next((size for size in sizes if _static(size) != 1), sizes[0]))
    return result


def _conform(importer, tensor, shape: list) -> tuple[Any, bool]:
    """(`tensor` broadcast to `shape` (right-aligned, PyTorch's rule). A size that may differ
    from the one it must equal (a separate runtime dim, or a static size against a runtime
    one) is checked when the sub-DNN runs, by a `match_cast`: first to fresh sizes, so that a
    contradiction among static sizes (an arm for a size the program never pairs with this
    one) still compiles, and raises if it is ever taken; whether it is checked)."""
    from tvm import relax, tirx

    builder = importer.block_builder
    own = list(tensor.ty.shape)
    if len(own) > len(shape):
        raise ValueError(f"index_put: values of rank {len(own)} for an indexed shape of rank {len(shape)}")
    wanted, checked = [], False
    for size, target in zip(own, shape[len(shape) - len(own):]):
        if _static(size) == 1 or _same(size, target):
            wanted.append(size)
            continue
        static, other = _static(size), _static(target)
        if static is not None and other is not None and static != other and static != 1:
            checked = True  # (a contradiction: raises when run)
        wanted.append(target)
        checked |= static is None or other is None
    if checked:
        fresh = [tirx.Var(f"store_dim{k}", "int64") for k in range(len(own))]
        tensor = builder.match_cast(tensor, relax.TensorType(fresh, tensor.ty.dtype))
        tensor = builder.match_cast(tensor, relax.TensorType(wanted, tensor.ty.dtype))
    if len(wanted) != len(shape) or not all(_same(a, b) for a, b in zip(wanted, shape)):
        tensor = builder.emit(relax.op.broadcast_to(tensor, relax.ShapeExpr(shape)))
    return tensor, checked


def _after(importer, data, checked):
    """`data` unchanged, once `checked` (values of no elements, at the shape their match_cast
    checks) has been computed: their sum, 0, added (else dead-code elimination would drop
    the check)."""
    from tvm import relax

    emit = importer.block_builder.emit
    dtype = data.ty.dtype
    if dtype == "bool":
        return data
    nothing = emit(relax.op.astype(emit(relax.op.sum(checked)), dtype))
    return emit(relax.op.add(data, nothing))
