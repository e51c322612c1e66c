"""Sizes known only at run time, read on the host: `rows.size(0)`, `rows.shape[0]`,
`rows.size()[0]`, `rows.numel()`, `rows.nelement()` of a tensor one of whose dims is a
runtime size (`rows = x[mask]`, `x[:k]`, `idx = m.nonzero().squeeze(1)`).

Inside a captured run such a read is a symbolic int: fine as a result or a size, but a
comparison of it (`if rows.size(0) > 0:`, `empty = rows.numel() == 0`) is a symbolic bool
no run can return. So in a comparison the read is a host op (`torch.aten.size.int`,
`torch.aten.numel`), as `len(rows)` always is, and the comparison is host code. A dim known
when the model is imported stays a constant (the run folds it).
"""

from __future__ import annotations

import ast

import torch

from dycl.frontend import values as V

_SIZE_METHODS = frozenset({"size", "numel", "nelement"})


def _runtime_tensor(env: dict, node: ast.expr) -> V.Dyn | None:
    """The value of a name bound to a tensor with a dim known only at run time."""
    if not isinstance(node, ast.Name):
        return None
    value = env.get(node.id)
    if isinstance(value, V.Dyn) and V.is_tensor_type(value.type) and value.type.shape is not None and None in value.type.shape:
        return value
    return None


def _rank(tensor: V.Dyn) -> int:
    """The rank the program sees: a complex tensor's type is its real view's, one dim more."""
    example = tensor.example
    return example.dim() if isinstance(example, torch.Tensor) and example.is_complex() else tensor.type.rank


def _constant_dim(node: ast.expr, rank: int) -> int | None:
    """A dim written as an int literal (`-1` too), made positive; None otherwise."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        value = -node.operand.value if type(node.operand.value) is int else None
    elif isinstance(node, ast.Constant) and type(node.value) is int:
        value = node.value
    else:
        return None
    if value is None or not -rank <= value < rank:
        return None
    return value % rank


def _read(env: dict, node: ast.expr) -> tuple[V.Dyn, int | None] | None:
    """(tensor, dim) of `t.size(d)`, `t.size(dim=d)`, `t.shape[d]`, `t.size()[d]` with dim d
    a runtime size; (tensor, None) of `t.numel()`/`t.nelement()` with any runtime dim."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _SIZE_METHODS:
        tensor = _runtime_tensor(env, node.func.value)
        if tensor is None:
            return None
        if node.func.attr != "size":
            # (a complex tensor is its real view: its numel is not the host's `numel`)
            return (tensor, None) if not node.args and not node.keywords and _rank(tensor) == tensor.type.rank else None
        dims = [*node.args, *(k.value for k in node.keywords if k.arg == "dim")]
        if len(dims) != 1 or any(k.arg != "dim" for k in node.keywords):
            return None
        dim = _constant_dim(dims[0], _rank(tensor))
        return (tensor, dim) if dim is not None and tensor.type.shape[dim] is None else None
    if isinstance(node, ast.Subscript):
        whole = node.value
        if isinstance(whole, ast.Attribute) and whole.attr == "shape":
            receiver = whole.value
        elif (isinstance(whole, ast.Call) and isinstance(whole.func, ast.Attribute) and whole.func.attr == "size"
              and not whole.args and not whole.keywords):
            receiver = whole.func.value
        else:
            return None
        tensor = _runtime_tensor(env, receiver)
        if tensor is None:
            return None
        dim = _constant_dim(node.slice, _rank(tensor))
        return (tensor, dim) if dim is not None and tensor.type.shape[dim] is None else None
    return None


def compares_runtime_size(node: ast.AST, env: dict, written_in_run: set[str]) -> bool:
    """Whether `node` is a comparison (or a `min`/`max`) that reads a size known only at run
    time (the host reads it), of a name not assigned in the run being formed (`written_in_run`: its value
    is not known yet). Other uses of such a size (`F.pad(seqs, (0, n - seqs.size(1)))`)
    stay in the run, where export keeps it a symbolic int."""
    if not (isinstance(node, ast.Compare) or isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("min", "max") and not node.keywords):  # (`min(k, rows.size(0))`: a Min no run returns)
        return False
    return any(
        _read(env, sub) is not None and not any(isinstance(n, ast.Name) and n.id in written_in_run for n in ast.walk(sub))
        for sub in ast.walk(node)
    )


def host_size(c, node: ast.expr, env: dict) -> V.Dyn | None:
    """The host op reading the size `node` asks for; None: `node` is no such read."""
    read = _read(env, node)
    if read is None:
        return None
    tensor, dim = read
    if dim is None:
        return c.builder.host_op("torch.aten.numel", [tensor], V.INT, tensor.example.numel())
    return c.builder.host_op("torch.aten.size.int", [tensor, c.builder.constant(dim)], V.INT, tensor.example.shape[dim])
