"""numpy on runtime tensors (issue 13.5): `np.argmax(confs)`, `np.max(probs)`,
`t.cpu().numpy()`, `np.array(lst)`, ... lowered to the torch ops that compute the same values.

Research code moves a tensor to numpy to decide something (`e = entropy(p).data.cpu().numpy()`,
`if e < t:`, `k = np.argmax(confs)`, `float(np.mean(confs))`). A numpy value computed from
runtime tensors is kept as the tensor with the same values and dtype, marked `NumpyValue`
(`.numpy()` is the tensor's own memory, as numpy's array is): what reads it is compiled only
where numpy and torch agree (comparisons; arithmetic on floating arrays with Python numbers or
arrays of the same dtype; integer arithmetic other than `/`; indexing; `float()`/`int()`/
`bool()`; `.item()`); anything else that takes it is refused at its line.

The numpy functions: `argmax`/`argmin` (without `axis`: a Python int, as numpy's np.int64 is
used as an index), `max`/`amax`/`min`/`amin`/`mean`/`sum` (a 0-d value, numpy's scalar;
with `axis`/`keepdims`: an array), `array`/`asarray`/`stack` of tensors or lists of tensors
(stacked like numpy converts them), `where(cond, a, b)` when numpy's result dtype is torch's.
`np.where(cond)` (index arrays whose length depends on the data) and every other numpy call on
runtime values are refused, naming the call. numpy on import-time constants is evaluated by
Python as before.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import numpy as np
import torch
from torch_mlir import ir

from dycl.frontend import lists
from dycl.frontend import values as V
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import RuntimeSize
from dycl.frontend.rewrite import fresh_id


@dataclass(frozen=True)
class NumpyValue(V.Dyn):
    """A numpy array (or numpy scalar, 0-d) computed from runtime tensors: the torch tensor
    holding the same values and dtype."""


def as_numpy(value):
    if isinstance(value, V.Dyn) and V.is_tensor_type(value.type) and not isinstance(value, NumpyValue):
        return NumpyValue(value.value, value.type, value.example)
    return value


def as_torch(value):
    if isinstance(value, NumpyValue):
        return V.Dyn(value.value, value.type, value.example)
    return value


def is_numpy(value) -> bool:
    return any(isinstance(leaf, NumpyValue) for leaf in V.leaves(value)) if isinstance(value, (V.Dyn, V.Tup)) else False


def integer_item(c, value) -> V.Dyn | None:
    """A 0-d integer tensor (a numpy integer) as the Python int it indexes and counts as
    (`lst[k]`, `self.experts[k]`, `range(k)`); None for any other value."""
    example = value.example if isinstance(value, V.Dyn) else None
    if not (isinstance(example, torch.Tensor) and example.dim() == 0):
        return None
    if example.dtype.is_floating_point or example.dtype.is_complex or example.dtype == torch.bool:
        return None
    return c.builder.host_op("torch.aten.Int.Tensor", [value], V.INT, int(example))


def is_numpy_function(func) -> bool:
    if isinstance(func, np.ufunc):
        return True
    module = getattr(func, "__module__", None) or ""
    return callable(func) and (module == "numpy" or module.startswith("numpy."))


def _describe(node) -> str:
    return f"`{source_text(node)}`"


def _dtype(value) -> torch.dtype | None:
    if isinstance(value, V.Dyn) and isinstance(value.example, torch.Tensor):
        return value.example.dtype
    return None


# ----- operands ---------------------------------------------------------------------------


def array_operand(c, node: ast.expr, env, call) -> V.Dyn:
    """What numpy makes an array of: a tensor, a numpy value, or a list/tuple of tensors
    (stacked, as numpy converts equal-shaped tensors) or of Python numbers of one kind."""
    value = c.expression(node, env)
    if isinstance(value, V.Dyn) and V.is_tensor_type(value.type):
        return as_torch(value)
    if isinstance(value, lists.KnownLengths):
        raise RuntimeSize.of(c.error(  # compiled once per length: a static shape in each
            call, f"{_describe(call)} of a list whose length depends on the path",
            "stack it where its length is known",
        ))
    if isinstance(value, V.Dyn) and value.type == V.TENSOR_LIST and not isinstance(value, lists.StaticList):
        if not value.example:
            raise RuntimeSize.of(c.error(
                call, f"{_describe(call)} of a list that is empty on the example path",
                "check DyCL's example inputs: the list must have items when the model is imported",
            ))
        return _stack_runtime_list(c, value)
    items = lists.items_of(value)
    if items is None or not items:
        raise c.error(
            call, f"{_describe(call)}: numpy of a {V.kind_of(value)} computed at runtime",
            "compute it with torch on the tensor",
        )
    kinds = {V.kind_of(i) for i in items}
    if len(kinds) != 1 or not kinds <= {"tensor", "int", "float", "bool"}:
        raise c.error(
            call, f"{_describe(call)} of a list mixing {', '.join(sorted(kinds))}",
            "give numpy a list of tensors of one shape and dtype, or of Python numbers of one kind",
        )
    (kind,) = kinds
    if kind == "tensor":
        types = {i.type for i in items}
        if len(types) != 1:
            raise c.error(call, f"{_describe(call)} of tensors of different shapes or dtypes", "stack tensors of one shape and dtype")
        return _run(c, call, "__dycl_torch.stack(__items)", {"__items": V.Tup(tuple(as_torch(i) for i in items), "list")})
    if kind == "bool":
        raise c.error(call, f"{_describe(call)} of a list of runtime bools", "compute it with torch on a bool tensor")
    # Python numbers: float64 / int64 arrays, as numpy makes them
    scalars = [_scalar_tensor(c, i, kind) for i in items]
    return _run(c, call, "__dycl_torch.stack(__items)", {"__items": V.Tup(tuple(scalars), "list")})


def _stack_runtime_list(c, value: V.Dyn) -> V.Dyn:
    """torch.stack of a list whose length is only known at runtime (the host's stack op)."""
    from dycl.frontend import expressions as X

    example = torch.stack(value.example)
    return c.builder.host_op("torch.aten.stack", [value, c.builder.constant(0)], X.stacked_type(example, 0), example)


def _scalar_tensor(c, value, kind: str) -> V.Dyn:
    value = c.builder.materialize(value)
    if kind == "float":
        example = torch.tensor(value.example, dtype=torch.float64)
    else:
        example = torch.tensor(value.example)
    return c.builder.host_op("torch.prim.NumToTensor.Scalar", [value], V.type_of_example(example), example)


def _run(c, node, source: str, bindings: dict) -> V.Dyn:
    return as_torch(c.written_expression(source, node, bindings))


# ----- numpy functions ---------------------------------------------------------------------

_REDUCTIONS = {
    np.argmax: "argmax", np.argmin: "argmin",
    np.max: "amax", np.amax: "amax", np.min: "amin", np.amin: "amin",
    np.mean: "mean", np.sum: "sum",
}


def _options(c, call: ast.Call, env, allowed: tuple[str, ...], positional: list[str]) -> dict:
    """Constant keyword (or extra positional) options of a numpy call."""
    options = {}
    for name, node in zip(positional, call.args[1:]):
        options[name] = node
    if len(call.args) > 1 + len(positional):
        raise c.error(call, f"{_describe(call)}: too many arguments for DyCL's lowering", "pass options by keyword")
    for keyword in call.keywords:
        if keyword.arg not in allowed:
            raise c.error(
                call, f"{_describe(call)}: numpy option `{keyword.arg}` on runtime values",
                "compute it with torch on the tensor",
            )
        options[keyword.arg] = keyword.value
    values = {}
    for name, node in options.items():
        value = c.expression(node, env)
        if not isinstance(value, V.Const):
            raise c.error(call, f"{_describe(call)}: `{name}` computed at runtime", f"make `{name}` a constant")
        values[name] = value.value
    return values


def reduction(c, call: ast.Call, env, name: str, receiver=None):
    """np.<name>(x[, axis, keepdims]) or x.<name>() on a numpy value."""
    if receiver is None:
        if not call.args or isinstance(call.args[0], ast.Starred):
            raise c.error(call, f"{_describe(call)}: numpy reduction without an operand")
        tensor = array_operand(c, call.args[0], env, call)
        options = _options(c, call, env, ("axis", "keepdims"), ["axis"])
    else:
        tensor = as_torch(receiver)
        options = _options_for_method(c, call, env)
    axis, keepdims = options.get("axis"), bool(options.get("keepdims", False))
    if axis is not None and not (isinstance(axis, int) and not isinstance(axis, bool)):
        raise c.error(call, f"{_describe(call)}: `axis={axis!r}`", "reduce along one int axis, or all of them")
    dtype = tensor.example.dtype
    bindings = {"__a": tensor}
    if name in ("argmax", "argmin"):
        if axis is None:
            if keepdims:
                raise c.error(call, f"{_describe(call)}: keepdims without an axis", "drop keepdims")
            return integer_item(c, _run(c, call, f"__dycl_torch.{name}(__a)", bindings))
        return as_numpy(_run(c, call, f"__dycl_torch.{name}(__a, dim={axis}, keepdim={keepdims})", bindings))
    if name == "mean" and not dtype.is_floating_point:
        # numpy's mean of ints and bools is float64
        suffix = ", dtype=__dycl_torch.float64"
    else:
        suffix = ""
    if name == "mean" and dtype.is_complex:
        raise c.error(call, f"{_describe(call)} of complex values", "compute it with torch")
    if axis is None:
        source = f"__dycl_torch.{name}(__a{suffix})"
        if name in ("amax", "amin"):  # all of them: max/min of the flattened values
            source = f"__dycl_torch.{name[1:]}(__a)"
        result = _run(c, call, source, bindings)
        if keepdims:
            result = _run(c, call, f"__r.reshape([1] * {tensor.example.dim()})", {"__r": result})
        return as_numpy(result)
    return as_numpy(_run(c, call, f"__dycl_torch.{name}(__a, dim={axis}, keepdim={keepdims}{suffix})", bindings))


def _options_for_method(c, call, env) -> dict:
    return _options(c, ast.Call(func=call.func, args=[ast.Constant(None), *call.args], keywords=call.keywords), env, ("axis", "keepdims"), ["axis"])


def array(c, call: ast.Call, env, copy: bool):
    if len(call.args) != 1 or call.keywords:
        raise c.error(call, f"{_describe(call)}: numpy array options on runtime values", "convert a tensor or a list of tensors, without options")
    value = c.expression(call.args[0], env)
    if isinstance(value, V.Dyn) and V.is_tensor_type(value.type):
        if copy:
            return as_numpy(_run(c, call, "__a.clone()", {"__a": as_torch(value)}))
        return as_numpy(value)
    return as_numpy(array_operand(c, call.args[0], env, call))


def stack(c, call: ast.Call, env):
    if not call.args:
        raise c.error(call, f"{_describe(call)} of nothing")
    options = _options(c, call, env, ("axis",), ["axis"])
    axis = options.get("axis", 0)
    if not (isinstance(axis, int) and not isinstance(axis, bool)):
        raise c.error(call, f"{_describe(call)}: `axis={axis!r}`", "stack along one int axis")
    items = lists.items_of(c.expression(call.args[0], env))
    if items is None or not items or not all(isinstance(i, V.Dyn) and V.is_tensor_type(i.type) for i in items):
        raise c.error(call, f"{_describe(call)}: np.stack of other than a list of tensors known here", "use torch.stack")
    if len({i.type for i in items}) != 1:
        raise c.error(call, f"{_describe(call)} of tensors of different shapes or dtypes", "stack tensors of one shape and dtype")
    bindings = {"__items": V.Tup(tuple(as_torch(i) for i in items), "list")}
    return as_numpy(_run(c, call, f"__dycl_torch.stack(__items, dim={axis})", bindings))


def where(c, call: ast.Call, env):
    if len(call.args) == 1 and not call.keywords:
        raise c.error(
            call,
            f"{_describe(call)}: `np.where(cond)` gives index arrays whose length depends on the data",
            "assign it as a statement of its own, `hits = np.where(cond)[0]` (DyCL gathers the "
            "indices of a 1-d mask into a list of ints), or compute what you need from the mask "
            "with torch: `mask.any()` for `len(hits) > 0`, `int(mask.int().argmax())` for `hits[0]`",
        )
    if len(call.args) != 3 or call.keywords:
        raise c.error(call, f"{_describe(call)}: np.where with these arguments", "np.where(cond, a, b)")
    cond, a, b = (c.expression(arg, env) for arg in call.args)
    operands = [a, b]
    tensors = [o for o in operands if isinstance(o, V.Dyn) and V.is_tensor_type(o.type)]
    if not tensors:
        raise c.error(call, f"{_describe(call)}: np.where choosing between Python numbers", "use torch.where on tensors of the dtype you need")
    dtypes = {t.example.dtype for t in tensors}
    scalars = [o for o in operands if isinstance(o, V.Const)]
    ok = len(dtypes) == 1 and all(
        isinstance(s.value, (int, float)) and not isinstance(s.value, bool)
        and (next(iter(dtypes)).is_floating_point or isinstance(s.value, int))
        for s in scalars
    ) and len(tensors) + len(scalars) == 2
    if not ok:
        raise c.error(
            call, f"{_describe(call)}: numpy and torch give this np.where different dtypes",
            "use torch.where with operands of one dtype",
        )
    return as_numpy(_run(c, call, "__dycl_torch.where(__c, __a, __b)", {"__c": as_torch(cond), "__a": as_torch(a), "__b": as_torch(b)}))


_STABLE_SORTS = ("stable", "mergesort")
_UNSTABLE_SORTS = {None: "quicksort", "quicksort": "quicksort", "heapsort": "heapsort"}


def argsort(c, call: ast.Call, env):
    """np.argsort(a) of a 1-d array. A stable sort is tensor code; numpy's default sort (a
    vectorized quicksort) and heapsort put equal items in an order of their own, which no
    torch op reproduces: the host runs numpy itself on them (`dycl.numpy_argsort`)."""
    if len(call.args) != 1 or any(k.arg != "kind" for k in call.keywords):
        raise c.error(call, f"{_describe(call)}: np.argsort with these options on a runtime value", "np.argsort(a) or np.argsort(a, kind='stable') of a 1-d array")
    kind = _options(c, call, env, ("kind",), []).get("kind")
    tensor = array_operand(c, call.args[0], env, call)
    if tensor.example.dim() != 1:
        raise c.error(call, f"{_describe(call)} of a {tensor.example.dim()}-d array", "sort a 1-d array (`a.reshape(-1)`), or use torch.argsort")
    if kind not in _STABLE_SORTS:
        if kind not in _UNSTABLE_SORTS:
            raise c.error(call, f"{_describe(call)}: np.argsort with kind={kind!r}", "kind='stable', 'quicksort' or 'heapsort'")
        kind = _UNSTABLE_SORTS[kind]
        order = torch.from_numpy(np.argsort(tensor.example.detach().numpy(), kind=kind))
        type_ = V.type_of_example(order)
        op = c.builder.op("dycl.numpy_argsort", [tensor.value], [type_], {"kind": ir.StringAttr.get(kind)})
        return NumpyValue(op.result, type_, order)
    # A stable argsort from comparisons (torch's sort.stable has no ONNX/TVM lowering): the
    # rank of item i counts the items before it in numpy's order (smaller, or equal and
    # earlier; NaN after everything, as numpy sorts it); the order puts i at its rank.
    source = (
        "(lambda a, n: (lambda nan, j: (lambda before: __dycl_torch.zeros(n, dtype=__dycl_torch.int64).scatter("
        "0, before.sum(1), __dycl_torch.arange(n)))("
        "(a[None, :] < a[:, None]) & ~nan[None, :] | (nan[:, None] & ~nan[None, :]) "
        "| (((a[None, :] == a[:, None]) | (nan[:, None] & nan[None, :])) & (j[None, :] < j[:, None]))"
        "))(__dycl_torch.isnan(a), __dycl_torch.arange(n)))(__a, __a.shape[0])"
    )
    return as_numpy(_run(c, call, source, {"__a": tensor}))


def numpy_call(c, call: ast.Call, env, func):
    """A numpy function with a runtime operand (its constant calls never get here)."""
    name = _REDUCTIONS.get(func) if _hashable(func) else None
    if name is not None:
        return reduction(c, call, env, name)
    if func is np.array:
        return array(c, call, env, copy=True)
    if func is np.asarray:
        return array(c, call, env, copy=False)
    if func is np.stack:
        return stack(c, call, env)
    if func is np.where:
        return where(c, call, env)
    if func is np.argsort:
        return argsort(c, call, env)
    raise c.error(
        call,
        f"{_describe(call)}: numpy `{getattr(func, '__name__', func)}` on a runtime value",
        "compute it with torch on the tensor (DyCL lowers np.argmax/argmin/max/min/mean/sum/"
        "array/asarray/stack/where(cond, a, b)/argsort)",
    )


def _hashable(func) -> bool:
    try:
        hash(func)
        return True
    except TypeError:
        return False


# ----- methods of numpy values, .numpy(), torch.from_numpy ------------------------------

_METHODS = {"argmax": "argmax", "argmin": "argmin", "max": "amax", "min": "amin", "mean": "mean", "sum": "sum"}


def method_call(c, call: ast.Call, env, receiver):
    """`x.numpy()` on a tensor, or a method of a numpy value; None when neither applies."""
    method = call.func.attr
    if method == "numpy" and isinstance(receiver, V.Dyn) and V.is_tensor_type(receiver.type):
        if call.args or call.keywords:
            raise c.error(call, f"{_describe(call)} with arguments", "call `.numpy()`")
        return as_numpy(receiver)
    if not isinstance(receiver, NumpyValue):
        return None
    if method in _METHODS:
        return reduction(c, call, env, _METHODS[method], receiver=receiver)
    if method == "copy" and not call.args and not call.keywords:
        return as_numpy(_run(c, call, "__a.clone()", {"__a": as_torch(receiver)}))
    raise c.error(
        call, f"{_describe(call)}: numpy method `.{method}()` on a runtime value",
        "compute it with torch before `.numpy()`",
    )


@dataclass(frozen=True)
class ReversedArray(NumpyValue):
    """`a[::-1]` of a numpy value: numpy's view with a negative stride, which torch does not
    take (`torch.from_numpy` raises on it; `.copy()` first)."""


def reversed_view(c, expr: ast.Subscript, holder, env) -> V.EnvValue | None:
    """`a[::-1]`, `a[:, ::-1]` of a numpy value: the values of `torch.flip` along the dims
    sliced with step -1 (torch's slices take no negative step), then the other slices.
    None when the index has no negative step; other negative steps are refused."""
    parts = list(expr.slice.elts) if isinstance(expr.slice, ast.Tuple) else [expr.slice]
    steps = [c._try_constant(p.step, env, quiet=True) if isinstance(p, ast.Slice) and p.step is not None else None for p in parts]
    if not any(isinstance(s, int) and s < 0 for s in steps):
        return None
    bounds = [[c._try_constant(b, env, quiet=True) if b is not None else None for b in (p.lower, p.upper)]
              if isinstance(p, ast.Slice) else None for p in parts]
    if any(b is None or any(v is V.MISSING for v in b) for b in bounds) or any(s is V.MISSING for s in steps):
        raise c.error(expr, f"{_describe(expr)}: a negative step on a numpy value, with an index other than slices of constant bounds",
                      "reverse it alone (`a[::-1]`), then index the result")
    if any(isinstance(s, int) and s < 0 and (s != -1 or b != [None, None]) for s, b in zip(steps, bounds)):
        raise c.error(expr, f"{_describe(expr)}: a negative step other than `::-1` on a numpy value",
                      "reverse with `a[::-1]`, then slice the result with a positive step")
    dims = tuple(k for k, s in enumerate(steps) if s == -1)
    kept = ", ".join(":" if s == -1 else f"{_text(b[0])}:{_text(b[1])}:{_text(s)}" for s, b in zip(steps, bounds))
    flipped = _run(c, expr, f"__dycl_torch.flip(__a, {dims!r})[{kept}]", {"__a": as_torch(holder)})
    return ReversedArray(flipped.value, flipped.type, flipped.example)


def _text(value) -> str:
    return "" if value is None else repr(value)


TORCH_FROM_NUMPY = {torch.from_numpy, torch.as_tensor}


def torch_from_numpy(c, call: ast.Call, env, func):
    if len(call.args) != 1 or call.keywords:
        return None
    value = c.expression(call.args[0], env)
    if isinstance(value, ReversedArray):  # (eager raises: a negative stride)
        raise c.error(call, f"{_describe(call)}: ValueError: a numpy array with a negative stride (`a[::-1]`) is not taken by torch",
                      "copy it first: `torch.from_numpy(a[::-1].copy())`")
    if isinstance(value, NumpyValue):
        return as_torch(value)  # the same memory
    return None


def attribute(c, node: ast.Attribute, value):
    """`.shape`/`.ndim`/`.size` of a numpy value (None: not a numpy value)."""
    if not isinstance(value, NumpyValue):
        return None
    shape = value.type.shape
    if node.attr == "ndim" and shape is not None:
        return V.Const(len(shape))
    if node.attr == "shape" and shape is not None and None not in shape:
        return V.Const(tuple(shape))
    if node.attr == "size" and shape is not None and None not in shape:
        return V.Const(int(np.prod(shape)) if shape else 1)
    raise c.error(node, f"{_describe(node)}: `.{node.attr}` of a numpy value computed at runtime", "read it from the tensor before `.numpy()`")


# ----- operators on numpy values ----------------------------------------------------------


def check_binary(c, node, op: ast.operator, left, right) -> None:
    """Arithmetic where numpy and torch give the same dtype (numpy only: no torch tensor)."""
    operands = [left, right]
    if any(isinstance(o, V.Dyn) and V.is_tensor_type(o.type) and not isinstance(o, NumpyValue) for o in operands):
        return  # a torch tensor takes part: torch's semantics, as in eager
    dtypes = [_dtype(o) for o in operands if _dtype(o) is not None]
    others = [o for o in operands if _dtype(o) is None]
    floating = all(d.is_floating_point for d in dtypes)
    integral = all(not d.is_floating_point and d != torch.bool for d in dtypes)
    same = len(set(dtypes)) == 1

    def kind(o):
        if isinstance(o, V.Const):
            return type(o.value)
        return {V.INT: int, V.FLOAT: float, V.BOOL: bool}.get(getattr(o, "type", None))

    ok = same and (
        (floating and all(kind(o) in (int, float) for o in others))
        or (integral and all(kind(o) is int for o in others) and not isinstance(op, ast.Div))
    )
    if not ok:
        raise c.error(
            node, f"{_describe(node)}: numpy and torch give this arithmetic different dtypes",
            "compute it with torch before `.numpy()` (or convert: `torch.from_numpy(a)`)",
        )


def mark(result, operands):
    """The result of an operation on numpy values (and Python numbers) is a numpy value."""
    values = [o for o in operands if o is not None]
    if any(isinstance(o, NumpyValue) for o in values) and not any(
        isinstance(o, V.Dyn) and V.is_tensor_type(o.type) and not isinstance(o, NumpyValue) for o in values
    ):
        return as_numpy(result)
    return result


def refuse_numpy_argument(c, call: ast.Call, args, func) -> None:
    if any(is_numpy(a) for a in args):
        name = getattr(func, "__qualname__", None) or source_text(call.func)
        raise c.error(
            call, f"{_describe(call)} takes a numpy value computed at runtime (`{name}` is not lowered for numpy)",
            "convert it first: `torch.from_numpy(a)`, `float(a)`, `int(a)`",
        )


def refuse_numpy_result(c, node, value) -> None:
    """forward must not return numpy values (the compiled model returns tensors)."""
    if is_numpy(value):
        raise c.error(
            node, "forward returns a numpy value computed at runtime",
            "return `float(v)` / `int(v)` or a tensor (`torch.from_numpy(v)`)",
        )


def temp_name() -> str:
    return f"__np{fresh_id()}"
