"""Tensors indexed on the host by runtime ints: `x[:k]` and `emb[:k, t]` read as host slices
and selects, `out[:k, t] = v` (or `+=`) stored into the view and scattered back. A dim cut by
a runtime bound is known only at run time (`[?, 8]`). Each function takes the compiler as its
context.
"""

from __future__ import annotations

import ast
import dataclasses

import torch

from dycl.frontend import aliases, host_numpy, lists
from dycl.frontend import values as V
from dycl.frontend.desugar import source_text


def sliced_on_host(c, expr: ast.Subscript, holder, env) -> V.Dyn | None:
    """`x[:k]`, `emb[:k, t]`: a tensor indexed by slices (step 1) and ints, some of them
    runtime ints, as host slices and selects; a dim cut by a runtime bound is known only at
    run time (`[?, 8]`). Such a view may not be changed in place, nor its tensor while it
    lives: where it lies in the tensor is a runtime value. None for any other index
    (computed by a run)."""
    keys = _host_index_keys(c, expr, holder, env)
    if keys is None:
        return None
    chain = _host_views(c, holder, keys)
    if not chain:
        return None
    value = chain[-1][-1]
    memory = aliases.storage_of(holder.example)
    return dataclasses.replace(value, may_share=value.may_share | holder.may_share | ({memory} if memory is not None else set()))


def _host_index_keys(c, expr: ast.Subscript, holder, env) -> list | None:
    """The keys of `holder[...]` when the host indexes it: slices of step 1 and ints, some
    bound or index a runtime int; None otherwise."""
    if not (isinstance(holder, V.Dyn) and V.is_tensor_type(holder.type) and holder.type.shape is not None
            and isinstance(holder.example, torch.Tensor)):
        return None
    parts = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
    if len(parts) > holder.type.rank or not all(_plain_index(p, env) for p in parts):
        return None  # (plain parts have no effects: the run that computes it otherwise may compute them again)
    def value(node):  # (a numpy integer, `order[0]`, indexes as the Python int it is)
        found = c.expression(node, env)
        return host_numpy.integer_item(c, found) or found if host_numpy.is_numpy(found) else found
    keys = []
    for part in parts:
        if isinstance(part, ast.Slice):
            keys.append(slice(*(None if b is None else value(b) for b in (part.lower, part.upper, part.step))))
        else:
            keys.append(value(part))

    def index(value) -> bool:
        return value is None or isinstance(value, V.Const) and lists.is_int(value.value) or isinstance(value, V.Dyn) and value.type == V.INT
    flat = [b for k in keys for b in ((k.start, k.stop, k.step) if isinstance(k, slice) else (k,))]
    steps = [k.step for k in keys if isinstance(k, slice) and k.step is not None]
    if (not all(index(b) for b in flat) or not any(isinstance(b, V.Dyn) for b in flat)
            or not all(isinstance(k, slice) or k is not None for k in keys) or not all(isinstance(st, V.Const) and st.value == 1 for st in steps)):
        return None
    return keys


def _host_views(c, holder: V.Dyn, keys: list) -> list[tuple] | None:
    """The host slices and selects of `holder[keys]`, one (base, dim, key, view) each."""
    example = lambda b: None if b is None else b.example if isinstance(b, V.Dyn) else b.value
    value, shape, dim, chain = holder, list(holder.type.shape), 0, []
    for key in keys:
        if isinstance(key, slice):
            if key.start is None and key.stop is None:
                dim += 1
                continue
            picked = value.example[(slice(None),) * dim + (slice(example(key.start), example(key.stop)),)]
            shape[dim] = None if isinstance(key.start, V.Dyn) or isinstance(key.stop, V.Dyn) or shape[dim] is None else picked.shape[dim]
            bounds = [c._materialize(b, "slice bound") if b is not None else c.builder.constant(None) for b in (key.start, key.stop)]
            operands = [c.builder.constant(dim), *bounds, c.builder.constant(1)]
            view = c.builder.host_op("torch.aten.slice.Tensor", [value, *operands], holder.type.with_shape(shape), picked)
            chain.append((value, "torch.aten.slice_scatter", operands, view))
            dim += 1
        else:
            at = example(key)
            if not -value.example.shape[dim] <= at < value.example.shape[dim]:
                if not value.example.shape[dim]:
                    return None
                at = 0  # (another path's index: this example is never compared)
            del shape[dim]
            operands = [c.builder.constant(dim), c._materialize(key, "index")]
            view = c.builder.host_op("torch.aten.select.int", [value, *operands], holder.type.with_shape(shape), value.example.select(dim, at))
            chain.append((value, "torch.aten.select_scatter", operands, view))
        value = view
    return chain


def store_on_host(c, stmt: ast.stmt, env: dict) -> bool:
    """`out[:k, t] = v` (or `+=`) with a runtime slice bound: the host takes the view, stores `v`
    (broadcast and cast to the view, as `copy_` does) and scatters it back; every alias
    of `out` sees the change. False (nothing computed) for any other statement."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AugAssign) else []
    if not (len(targets) == 1 and isinstance(targets[0], ast.Subscript) and isinstance(targets[0].value, ast.Name)):
        return False
    target = targets[0]
    holder = env.get(target.value.id)
    parts = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
    bounds = [b for p in parts if isinstance(p, ast.Slice) for b in (p.lower, p.upper) if b is not None]
    if not any(isinstance(b, ast.Name) and isinstance(env.get(b.id), V.Dyn) and env[b.id].type == V.INT for b in bounds):
        return False
    keys = _host_index_keys(c, target, holder, env)
    chain = _host_views(c, holder, keys) if keys is not None else None
    if not chain:
        return False
    if holder.may_share:
        raise c._path_dependent_alias(stmt, target.value.id)
    view = chain[-1][-1]
    source = c.expression(stmt.value, env)
    if isinstance(stmt, ast.AugAssign):  # `out[:k] += v`: the view's new value, of its dtype (as torch's in-place op)
        combined = ast.unparse(ast.BinOp(ast.Name("__view", ast.Load()), stmt.op, ast.Name("__value", ast.Load())))
        source = c.written_expression(combined, stmt, {"__view": view, "__value": source})
        if not (isinstance(source, V.Dyn) and V.is_tensor_type(source.type) and source.type.element_type == view.type.element_type):
            raise c.error(stmt, f"`{source_text(stmt)}` makes a {V.describe_type(source.type)} that `{target.value.id}` cannot hold in place",
                          f"convert it first (`... = (...).to({target.value.id}.dtype)`)")
    if isinstance(source, V.Const) and isinstance(source.value, (bool, int, float)):
        source = c.written_expression("__dycl_torch.full_like(__view, __value)", stmt, {"__view": view, "__value": source})
    elif None in view.type.shape and _runtime_shaped(source):
        source = _broadcast_on_host(c, stmt, source, view)
    elif not (isinstance(source, V.Dyn) and source.type == view.type):
        source = c.written_expression("__value.expand_as(__view).to(__view.dtype)", stmt, {"__view": view, "__value": source})
    try:  # the store on the examples, as eager makes it (another path's may not fit)
        with torch.no_grad():
            view.example.copy_(source.example)
    except Exception:
        pass
    new = source
    for base, scatter, operands, _ in reversed(chain):
        new = c.builder.host_op(scatter, [base, new, *operands], base.type, base.example)
    c._rebind_mutated(env, None, stmt, [(holder, V.Dyn(new.value, holder.type, holder.example))])
    return True


def _runtime_shaped(value) -> bool:
    return isinstance(value, V.Dyn) and V.is_tensor_type(value.type) and value.type.shape is not None and None in value.type.shape


def _broadcast_on_host(c, stmt: ast.stmt, source: V.Dyn, view: V.Dyn) -> V.Dyn:
    """`source` as `copy_` stores it into `view`, both with a dim known only at run time:
    cast to the view's dtype, then broadcast by the host to the view's sizes as they are at
    run time. (A run would capture `expand_as` of two runtime dims as one size, and a row
    broadcast over k rows, `buf[:k] = x[-1:]`, would then fail wherever k is not 1. A source
    of static shape is expanded by a run: there the view's dim is the only runtime one.)"""
    if source.type.element_type != view.type.element_type:  # (the view stays out of the run: its dim is another size)
        dtype = str(view.example.dtype).removeprefix("torch.")
        source = c.written_expression(f"__value.to(__dycl_torch.{dtype})", stmt, {"__value": source})
    sizes = [c.builder.constant(n) if n is not None else c.builder.host_op(
        "torch.aten.size.int", [view, c.builder.constant(d)], V.INT, view.example.shape[d]) for d, n in enumerate(view.type.shape)]
    listed = lists.static_list(c, sizes, V.SCALAR_LISTS[V.INT])
    try:
        example = source.example.expand_as(view.example)
    except RuntimeError:  # (another path's examples: this one is never compared)
        example = view.example.clone()
    return c.builder.host_op("torch.aten.expand", [source, listed, c.builder.constant(False)], view.type, example)


def _plain_index(node: ast.expr, env) -> bool:
    """An index part the host may compute before knowing whether it stores: constants and
    names of Python scalars, in arithmetic and slices."""
    if isinstance(node, ast.Slice):
        return all(part is None or _plain_index(part, env) for part in (node.lower, node.upper, node.step))
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and (
            host_numpy.is_numpy(env.get(node.value.id)) or lists.is_list(env.get(node.value.id))):
        return _plain_index(node.slice, env)  # an item of a numpy array or a list (`order[0]`, `lengths[i]`)
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and not (isinstance(env.get(sub.id), V.Const) or isinstance(env.get(sub.id), V.Dyn) and (
                not V.is_tensor_type(env[sub.id].type) or host_numpy.is_numpy(env[sub.id]) and not env[sub.id].type.shape)):
            return False
        if not isinstance(sub, (ast.Name, ast.Constant, ast.UnaryOp, ast.BinOp, ast.operator, ast.unaryop, ast.Load)):
            return False
    return True
