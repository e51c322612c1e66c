"""numpy versions of the computation-free torch ops that generated host code calls.

Each mirrors the torch op of the same name on value semantics (no caller mutates a
tensor, so views are safe: the one buffer a sub-DNN writes in place is one the host program
gives it, which nothing else reads, `in_place`). Results are always `np.ndarray`, never numpy scalars:
the backends' runtimes take arrays only. The random ops the host program draws are in
`random_draws`, and reached from here (`rt.bernoulli`).
"""

from __future__ import annotations

import numpy as np

from dycl.runtime.random_draws import bernoulli, exponential, multinomial, normal, rand, randint, randn, uniform

_INT64_MAX = 2**63 - 1


def in_place(runner, given: tuple[int, ...]):
    """The runner of a call site that gives the sub-DNN the buffers of its arguments at
    positions `given`: the host program passes there a value that the runtime owns (a
    state slot's) and that nothing reads after the call, so an output the sub-DNN computes
    from it may be written into its buffer (the manifest record's `in_place`). A runner
    that cannot do that (TVM, a wrapper) is returned as it is."""
    variant = getattr(runner, "in_place", None)
    return runner if variant is None else variant(given)


def flatten(x: np.ndarray, start: int = 0, end: int = -1) -> np.ndarray:
    if x.ndim == 0:
        return x.reshape(1)
    start, end = start % x.ndim, end % x.ndim
    return x.reshape(x.shape[:start] + (-1,) + x.shape[end + 1 :])


def unflatten(x: np.ndarray, dim: int, sizes) -> np.ndarray:
    dim %= x.ndim
    return x.reshape(x.shape[:dim] + tuple(sizes) + x.shape[dim + 1 :])


def squeeze_dim(x: np.ndarray, dim: int) -> np.ndarray:
    # torch leaves a dimension that is not 1 alone instead of raising.
    if x.ndim == 0 or x.shape[dim] != 1:
        return x
    return np.squeeze(x, axis=dim)


def squeeze_dims(x: np.ndarray, dims) -> np.ndarray:
    axes = tuple(d % x.ndim for d in dims if x.ndim and x.shape[d] == 1)
    return np.squeeze(x, axis=axes) if axes else x


def expand(x: np.ndarray, sizes) -> np.ndarray:
    offset = len(sizes) - x.ndim
    shape = [x.shape[i - offset] if s == -1 else s for i, s in enumerate(sizes)]
    return np.broadcast_to(x, shape)


def select(x: np.ndarray, dim: int, index: int) -> np.ndarray:
    if dim:  # (dim 0 skips the index tuple: BlockDrop's host reads its policy so, twice a block)
        dim %= x.ndim
        x = x[(slice(None),) * dim + (index,)]
    else:
        x = x[index]
    return x if type(x) is np.ndarray else np.asarray(x)


def slice_tensor(x: np.ndarray, dim: int = 0, start=None, end=None, step: int = 1) -> np.ndarray:
    dim %= x.ndim
    if end is not None and end >= _INT64_MAX:
        end = None
    return x[(slice(None),) * dim + (slice(start, end, step),)]


def narrow(x: np.ndarray, dim: int, start: int, length: int) -> np.ndarray:
    """`x.narrow(dim, start, length)` at a runtime `start` or `length`: a negative start counts
    from the end; a range past either end is torch's error."""
    size = x.shape[dim % x.ndim]
    first = start + size if start < 0 else start
    if not 0 <= first <= size or length < 0 or first + length > size:
        raise IndexError(f"narrow: start ({start}) + length ({length}) exceeds dimension size ({size})")
    return slice_tensor(x, dim, first, first + length)


def select_scatter(base: np.ndarray, src, dim: int, index: int) -> np.ndarray:
    """`base` with `src` stored at `index` of `dim` (a store at a runtime int index)."""
    out = np.array(base, copy=True)
    out[(slice(None),) * (dim % out.ndim) + (index,)] = src
    return out


def slice_scatter(base: np.ndarray, src, dim: int = 0, start=None, end=None, step: int = 1) -> np.ndarray:
    out = np.array(base, copy=True)
    if end is not None and end >= _INT64_MAX:
        end = None
    out[(slice(None),) * (dim % out.ndim) + (slice(start, end, step),)] = src
    return out


def pad(x: np.ndarray, pad, mode: str = "constant", value=None) -> np.ndarray:
    """`torch.nn.functional.pad` with a constant: `pad` gives (before, after) widths from the
    last dim backwards; a negative width cuts."""
    if mode != "constant":
        raise NotImplementedError(f"pad mode {mode!r} on the host")
    widths = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):
        widths[x.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    x = x[tuple(slice(max(-a, 0), x.shape[d] - max(-b, 0)) for d, (a, b) in enumerate(widths))]
    return np.pad(x, [(max(a, 0), max(b, 0)) for a, b in widths], constant_values=0 if value is None else value)


def masked_select(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """`torch.masked_select`: both broadcast to one shape, the selected elements in order."""
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return np.ascontiguousarray(np.broadcast_to(x, shape)[np.broadcast_to(mask.astype(bool), shape)])


def _check_slices(x: np.ndarray, dim: int) -> None:
    """Torch raises where a dim other than `dim` is empty (a slice of nothing)."""
    if any(size == 0 for d, size in enumerate(x.shape) if d != dim % x.ndim):
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")


def unique_dim(x: np.ndarray, dim: int):
    """`torch.unique(x, dim=dim, return_inverse=True, return_counts=True)` of integers or
    bools: numpy sorts the slices lexicographically as torch does; the inverse is 1-d."""
    _check_slices(x, dim)
    values, inverse, counts = np.unique(x, axis=dim, return_inverse=True, return_counts=True)
    return values, inverse.reshape(-1).astype(np.int64), counts.astype(np.int64)


def unique_consecutive(x: np.ndarray, return_inverse: bool = True, return_counts: bool = True, dim: int | None = None):
    """`torch.unique_consecutive(x, return_inverse, return_counts, dim)`: (values, inverse,
    counts), all three whatever the flags (the frontend asks for all three). A run starts
    where an element (a slice along `dim`) differs from the one before; NaN != NaN, so each
    NaN is a run of its own, as in torch. The inverse has x's shape (of `dim`: 1-d)."""
    if dim is None:
        rows = np.reshape(x, (-1, 1))
    else:
        _check_slices(x, dim)
        rows = np.moveaxis(x, dim, 0).reshape(x.shape[dim], int(np.prod(np.delete(x.shape, dim % x.ndim))))
    keep = np.concatenate(([True], (rows[1:] != rows[:-1]).any(axis=1)))[: len(rows)]
    starts = np.flatnonzero(keep)
    inverse = (np.cumsum(keep) - 1).astype(np.int64)
    counts = np.diff(np.append(starts, len(rows))).astype(np.int64)
    if dim is None:
        return np.ascontiguousarray(rows[keep, 0]), inverse.reshape(np.shape(x)), counts
    return np.ascontiguousarray(np.take(x, starts, axis=dim)), inverse, counts


def stack(tensors, dim: int = 0) -> np.ndarray:
    return np.stack(tensors, axis=dim)


def cat(tensors, dim: int = 0) -> np.ndarray:
    return np.concatenate(tensors, axis=dim)


def split(x: np.ndarray, size: int, dim: int = 0) -> list[np.ndarray]:
    """torch.split with a chunk size: equal chunks of `size`, the last one shorter."""
    dim %= x.ndim
    return np.split(x, list(range(size, x.shape[dim], size)), axis=dim)


def split_with_sizes(x: np.ndarray, sizes, dim: int = 0) -> list[np.ndarray]:
    return np.split(x, list(np.cumsum(sizes)[:-1]), axis=dim % x.ndim)


def chunk(x: np.ndarray, chunks: int, dim: int = 0) -> list[np.ndarray]:
    dim %= x.ndim
    size = -(-x.shape[dim] // chunks)  # torch: chunks of ceil(n / chunks)
    return split(x, size, dim)


def unbind(x: np.ndarray, dim: int = 0) -> list[np.ndarray]:
    return [select(x, dim, i) for i in range(x.shape[dim])]
