"""Expressions that need the host: `host_<expression class>`.

`expression` dispatches here by AST node type (`host_<node>`) when an expression needs values
that must stay outside captured runs (Python scalars from tensor data, lists of
data-dependent length, conditions). Tensor math over operands computed this way is one
captured run (`_apply`). `host_expressions.py` holds the helpers; builtins and numpy calls are
the tables of `host_builtins.py` and `host_numpy.py`. Each function takes the compiler as its
context.
"""

from __future__ import annotations

import ast
import builtins
import copy

import torch

from dycl.frontend import host_builtins, host_expressions, host_numpy, host_sets, list_ops, lists, packed, predicates, sizes, tensor_lists
from dycl.frontend import expressions as X
from dycl.frontend import values as V
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import FrontendError, RuntimeSize
from dycl.frontend.nodes import OPERAND_PREFIX, replace_nodes
from dycl.frontend.rewrite import fresh_id
from dycl.dialects.torch_ops import LIST_ITEM, LIST_LENGTH

_COMPARISON_WORDS = {ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}
_SCALAR_EXAMPLES = {V.INT: 0, V.FLOAT: 0.0, V.BOOL: False}  # (an item of a list empty on the example path: `_runtime_item`)


def host_Call(c, expr: ast.Call, env) -> V.EnvValue:
    size = sizes.host_size(c, expr, env)
    if size is not None:
        return size
    if isinstance(expr.func, ast.Attribute) and expr.func.attr in X.SCALAR_METHODS and not expr.args:
        tensor = c._materialize(c.expression(expr.func.value, env), "tensor")
        example = eager(c, expr, lambda: tensor.example.item())
        return c.builder.host_op("torch.aten.item", [tensor], V.type_of_example(example), example)
    if isinstance(expr.func, ast.Attribute) and expr.func.attr == "tolist" and not expr.args and not expr.keywords:
        tensor = c.expression(expr.func.value, env)
        if isinstance(tensor, V.Dyn) and V.is_tensor_type(tensor.type):
            return tensor_lists.tolist(c, tensor, expr)
    func = c._try_constant(expr.func, env, quiet=True)
    result = predicates.host_call(c, expr, env, func)
    if result is not None:
        return result
    handler = host_expressions.handler_of(host_builtins.HANDLERS, func)
    if handler is not None:
        result = handler(c, expr, env)
        if result is not None:
            return result
    if host_numpy.is_numpy_function(func):
        return host_numpy.numpy_call(c, expr, env, func)
    receiver = None
    if func is V.MISSING and isinstance(expr.func, ast.Attribute) and (
        expr.func.attr == "numpy" or isinstance(expr.func.value, ast.Name) or c._needs_host(expr.func.value, env, set())
    ):
        receiver = c.expression(expr.func.value, env)  # `t.numpy()`, `probs.max()` on a numpy value
        result = host_numpy.method_call(c, expr, env, receiver)
        if result is not None:
            return result
    if X.known(host_numpy.TORCH_FROM_NUMPY, func):
        result = host_numpy.torch_from_numpy(c, expr, env, func)
        if result is not None:
            return result
    if func is V.MISSING and isinstance(expr.func, ast.Attribute) and expr.func.attr == "index":
        container = receiver if receiver is not None else c.expression(expr.func.value, env)
        if _scalar_items(container) is not None:
            return _list_index(c, expr, env, container)
    args = [c.expression(a, env) for a in expr.args]
    if func is torch.tensor and len(args) == 1 and isinstance(args[0], V.Dyn) and V.list_item_scalar(args[0].type) is not None:
        return _tensor_of_runtime_list(c, expr, env, args[0])
    if func is torch.tensor and len(args) == 1 and _scalar_items(args[0]) is not None and V.has_dyn(args[0]):
        return _tensor_of_runtime_list(c, expr, env, _runtime_number_list(c, expr, _scalar_items(args[0])), static_length=True)
    made_or_read = packed.call(c, expr, env, func, args)
    if made_or_read is not None:
        return made_or_read
    if X.known(X.SCALAR_BUILTINS, func) and len(args) == 1 and not expr.keywords:
        (arg,) = args
        arg = c._materialize(arg, "argument")
        example = eager(c, expr, lambda: func(arg.example))
        source_kind = "Tensor" if V.is_tensor_type(arg.type) else V.scalar_name(arg.type)
        if V.type_of_example(example) == arg.type:
            return arg
        return c.builder.host_op(host_expressions.conversion_op(func, source_kind), [arg], V.type_of_example(example), example)
    if func is builtins.len and len(args) == 1 and isinstance(args[0], V.Dyn) and V.is_list_type(args[0].type):
        return c.builder.host_op(LIST_LENGTH, [args[0]], V.INT, len(args[0].example))
    host_numpy.refuse_numpy_argument(c, expr, args, func)
    if X.known(X.LIST_FUNCTIONS, func) and args and isinstance(args[0], lists.StaticList) and args[0].items:
        # items known: stacked inside a run, with a static shape
        return _apply(c, expr, env, host_expressions.call_operands(expr, receiver, [V.Tup(args[0].items, "list"), *args[1:]]))
    if X.known(X.LIST_FUNCTIONS, func) and args and isinstance(args[0], V.Dyn) and args[0].type == V.TENSOR_LIST:
        return _stack_or_cat(c, expr, func, args, env)
    # Anything else: tensor math over the already-computed operands.
    return _apply(c, expr, env, host_expressions.call_operands(expr, receiver, args))


def eager(c, node, compute):
    """A Python conversion of an example value, as eager Python would do it; its error (a
    tensor of several elements to a bool, ...) is the program's, located at `node`."""
    try:
        return compute()
    except (RuntimeError, ValueError, TypeError) as error:
        raise c.error(node, f"`{source_text(node)}`: {type(error).__name__}: {error}") from None


def _stack_or_cat(c, expr, func, args, env):
    dim = args[1] if len(args) > 1 else V.Const(0)
    for keyword in expr.keywords:
        if keyword.arg == "dim":
            dim = c.expression(keyword.value, env)
    if not isinstance(dim, V.Const):
        raise c.error(expr, "runtime `dim` of stack/cat", "use a constant dim")
    items = args[0].example
    example = func(items, dim.value) if items else None
    if example is None:
        raise RuntimeSize.of(c.error(expr, f"`{source_text(expr)}` of a list that is empty on the example path", "append at least once before the condition, or check DyCL's example inputs"))
    name = X.LIST_FUNCTIONS[func]
    type_ = X.stacked_type(example, dim.value)
    return c.builder.host_op(f"torch.aten.{name}", [args[0], c.builder.constant(int(dim.value))], type_, example)


def host_Compare(c, expr: ast.Compare, env) -> V.EnvValue:
    operands = [c.expression(e, env) for e in [expr.left, *expr.comparators]]
    if len(operands) == 2 and type(expr.ops[0]) in (ast.In, ast.NotIn) and isinstance(operands[0], V.Const) and (
        isinstance(operands[1], V.Tup) and isinstance(operands[1].kind, V.DictKind)
    ):  # `"aux" in outputs`: its keys are known here
        return V.Const((operands[0].value in operands[1].kind.keys) == isinstance(expr.ops[0], ast.In))
    if len(operands) == 2 and type(expr.ops[0]) in (ast.Is, ast.IsNot) and any(isinstance(o, V.Maybe) for o in operands):
        return is_none_test(c, expr, operands)
    if len(operands) == 2 and type(expr.ops[0]) in (ast.Is, ast.IsNot) and any(
        isinstance(o, V.Const) and o.value is None for o in operands
    ) and any(isinstance(o, V.Dyn) for o in operands):
        # a runtime value is never None (`top_k is not None` of an optional input compiled
        # for its example's int only: optional.py's `fixed_kinds`)
        return V.Const(isinstance(expr.ops[0], ast.IsNot))
    if len(operands) == 2 and type(expr.ops[0]) in (ast.In, ast.NotIn) and not host_expressions.is_tensor(operands[0]):
        return _membership(c, expr, *operands)
    if any(host_expressions.is_tensor(o) for o in operands):
        return host_numpy.mark(_apply(c, expr, env, host_expressions.known_values([expr.left, *expr.comparators], operands)), operands)
    if all(isinstance(o, V.Const) for o in operands) and all(type(op) in X.PY_COMPARE for op in expr.ops):
        # known here although it reads runtime values (`len(lst) > 1` of a list of known items)
        return V.Const(all(X.PY_COMPARE[type(op)](a.value, b.value) for op, a, b in zip(expr.ops, operands, operands[1:])))
    result = None
    for (op, left, right) in zip(expr.ops, operands, operands[1:]):
        name = X.COMPARE_OPS.get(type(op))
        if name is None:
            raise c.error(expr, f"`{source_text(expr)}`: `{_COMPARISON_WORDS.get(type(op), type(op).__name__)}` between runtime values")
        pair = _scalar_pair(c, left, right, expr)
        example = X.PY_COMPARE[type(op)](pair[0].example, pair[1].example)
        kind = V.scalar_name(pair[0].type)
        value = c.builder.host_op(f"torch.aten.{name}.{kind}", list(pair), V.BOOL, example)
        result = value if result is None else c.builder.host_op(
            "torch.aten.__and__.bool", [result, value], V.BOOL, result.example and value.example
        )
    return result


def _membership(c, expr: ast.Compare, item: V.EnvValue, container: V.EnvValue) -> V.EnvValue:
    """`k in (1, 2)` / `k not in [0, 3]` of a runtime Python scalar: `k == 1 or k == 2`, as
    Python's `in` compares (an item of another kind, a str or None, is never equal)."""
    if isinstance(container, V.Const) and isinstance(container.value, (list, tuple, set, frozenset)):
        candidates = [V.Const(v) for v in container.value]
    elif isinstance(container, V.Tup) and not isinstance(container.kind, V.DictKind):
        candidates = list(container.items)
    elif isinstance(container, V.Dyn) and container.type == V.SCALAR_LISTS[V.INT]:
        return host_sets.contains(c, expr, item, container)  # (a runtime list or set of ints)
    else:
        raise c.error(expr, f"`{source_text(expr)}`: `in` on a {V.kind_of(container)} of runtime values", "compare with each item (`k == a or k == b`)")
    found = None
    for candidate in candidates:
        if isinstance(candidate, V.Const) and not isinstance(candidate.value, (bool, int, float)):
            continue  # (a str, None: never equal to a number)
        if host_expressions.is_tensor(candidate) or not isinstance(candidate, (V.Const, V.Dyn)):
            raise c.error(expr, f"`{source_text(expr)}`: `in` over a container holding a {V.kind_of(candidate)}", "compare with each item (`k == a or k == b`)")
        a, b = _scalar_pair(c, item, candidate, expr)
        equal = c.builder.host_op(f"torch.aten.eq.{V.scalar_name(a.type)}", [a, b], V.BOOL, a.example == b.example)
        found = equal if found is None else c.builder.host_op(
            "torch.aten.__or__.bool", [found, equal], V.BOOL, found.example or equal.example
        )
    if found is None:
        return V.Const(isinstance(expr.ops[0], ast.NotIn))
    if isinstance(expr.ops[0], ast.NotIn):
        return c.builder.host_op("torch.aten.__not__", [found], V.BOOL, not found.example)
    return found


def _tensor_of_runtime_list(c, expr: ast.Call, env, value: V.Dyn, static_length: bool = False) -> V.Dyn:
    """`torch.tensor(lst, dtype=...)` of a list of runtime length (`lists`); a device or
    `requires_grad` changes nothing the host program computes. (`static_length`: the list
    has a length known here, not 0: a list of runtime numbers known item by item.)"""
    options = {k.arg: c._try_constant(k.value, env, quiet=True) for k in expr.keywords}
    if any(k not in ("dtype", "device", "requires_grad") or v is V.MISSING for k, v in options.items()) or (
        options.get("dtype") is not None and not isinstance(options["dtype"], torch.dtype)
    ):
        raise c.error(expr, f"`{source_text(expr)}`: `torch.tensor` of a list of runtime length with these options", "give `dtype=` a torch dtype, or leave it out")
    if options.get("dtype") is None and V.list_item_scalar(value.type) != V.FLOAT and not static_length:
        raise c.error(  # (torch infers the dtype from the items: an empty list has none)
            expr, f"`{source_text(expr)}` of a list of {V.scalar_name(V.list_item_scalar(value.type))}s whose length is known only at "
            "runtime: its dtype depends on that length (an empty list makes a float32 tensor)",
            "give the dtype: `torch.tensor(lst, dtype=torch.long)`",
        )
    return tensor_lists.tensor_of_runtime_list(c, expr, value, options.get("dtype"), static_length)


def _runtime_number_list(c, node, items: list) -> V.Dyn:
    """A list of Python numbers known item by item (some of them runtime values) as one
    runtime list, its items of the kind torch.tensor makes of them all (any float: floats;
    else any int: ints)."""
    kinds = {V.type_of_example(V.example_of(i)) for i in items}
    kind = V.FLOAT if V.FLOAT in kinds else V.INT if V.INT in kinds else V.BOOL
    converted = []
    for item in items:
        item = c.builder.materialize(item)
        if item.type != kind:
            item = c.builder.host_op(host_expressions.conversion_op({V.FLOAT: float, V.INT: int}[kind], V.scalar_name(item.type)),
                                     [item], kind, {V.FLOAT: float, V.INT: int}[kind](item.example))
        converted.append(item)
    list_type = V.SCALAR_LISTS[kind]
    op = c.builder.op(lists.LIST_CONSTRUCT, [i.value for i in converted], [list_type])
    return V.Dyn(op.result, list_type, [i.example for i in converted])


def _scalar_items(container) -> list | None:
    """The items of a list or tuple of Python numbers whose items are known here (runtime
    ones among them: `vals = t.tolist()` of a static length), else None."""
    if isinstance(container, V.Const) and isinstance(container.value, (list, tuple)):
        items = [V.Const(v) for v in container.value]
    elif isinstance(container, V.Tup) and container.kind in ("list", "tuple"):
        items = list(container.items)
    else:
        return None
    numbers = all(
        isinstance(i, V.Const) and type(i.value) in (bool, int, float)
        or isinstance(i, V.Dyn) and i.type in (V.INT, V.FLOAT, V.BOOL) for i in items
    )
    return items if numbers else None


def _list_index(c, expr: ast.Call, env, container) -> V.EnvValue:
    """`lst.index(v)` (beam search's `scores.index(max(scores))`) over a list of known
    length: the first k with `lst[k] == v`, chosen on the host item by item from the last,
    and eager's ValueError where no item is equal. (Python's `index` also matches an item
    that *is* v; only a NaN is not equal to itself, and a NaN is never found here.) With a
    start (and stop), `lst.index(v, i, j)`, only the positions in `lst[i:j]` as `index`
    bounds them (from the end when negative, then clamped at 0) are candidates: decided here
    for constant bounds, by a host test per position for runtime ones."""
    if not 1 <= len(expr.args) <= 3 or expr.keywords or any(isinstance(a, ast.Starred) for a in expr.args):
        raise c.error(expr, f"`{source_text(expr)}`: `index` with these arguments", "call `lst.index(v)`, `lst.index(v, start)` or `lst.index(v, start, stop)`")
    items = _scalar_items(container)
    wanted = c.expression(expr.args[0], env)
    if host_expressions.is_tensor(wanted) or not isinstance(wanted, (V.Const, V.Dyn)):
        raise c.error(expr, f"`{source_text(expr)}`: `index` of a {V.kind_of(wanted)} in a list of Python numbers", "look up a Python number (`float(v)`, `int(v)`)")
    bounds = [c.expression(a, env) for a in expr.args[1:]]
    for bound in bounds:
        if not (isinstance(bound, V.Const) and type(bound.value) is int or isinstance(bound, V.Dyn) and bound.type == V.INT):
            raise c.error(expr, f"`{source_text(expr)}`: a bound of `index` that is a {V.kind_of(bound)}", "give ints")
    example = eager(c, expr, lambda: [V.example_of(i) for i in items].index(V.example_of(wanted), *(V.example_of(b) for b in bounds)))
    position: V.EnvValue = V.Const(-1)  # (not found)
    for k in reversed(range(len(items))):
        if isinstance(items[k], V.Const) and isinstance(wanted, V.Const):
            equal = V.Const(items[k].value == wanted.value)
        else:
            a, b = _scalar_pair(c, items[k], wanted, expr)
            equal = c.builder.host_op(f"torch.aten.eq.{V.scalar_name(a.type)}", [a, b], V.BOOL, a.example == b.example)
        equal = _within_bounds(c, equal, k, len(items), bounds)
        if isinstance(equal, V.Const):
            position = V.Const(k) if equal.value else position
            continue
        later = position
        (chosen,) = c.select(equal, lambda k=k: [c.builder.constant(k).value], lambda: [c.builder.materialize(later).value])
        position = V.Dyn(chosen, V.INT, example)
    if isinstance(position, V.Const):
        if position.value == -1:
            raise c.error(expr, f"`{source_text(expr)}`: ValueError: the value is not in the list", "check the example inputs")
        return position
    found = c.builder.host_op("torch.aten.ne.int", [position, c.builder.constant(-1)], V.BOOL, True)
    c.runtime_check(found, expr, f"`{source_text(expr)}`: the value is not in the list", kind="ValueError")
    return position


def _within_bounds(c, equal: V.EnvValue, k: int, n: int, bounds: list) -> V.EnvValue:
    """`equal` and position k in [start, stop) as `list.index` bounds them (n items)."""
    for bound, holds in zip(bounds, (lambda k, b: k >= b, lambda k, b: k < b)):
        if isinstance(equal, V.Const) and not equal.value:
            return equal
        if isinstance(bound, V.Const):
            limit = bound.value + n if bound.value < 0 else bound.value
            inside = V.Const(holds(k, max(limit, 0)))
        else:
            limit = list_ops._wrapped(c, bound, n)  # (from the end when negative; k >= 0 clamps)
            name = "ge" if holds(1, 1) else "lt"
            inside = c.builder.host_op(f"torch.aten.{name}.int", [c.builder.constant(k), limit], V.BOOL, holds(k, limit.example))
        if isinstance(inside, V.Const):
            equal = equal if inside.value else V.Const(False)
        elif isinstance(equal, V.Const):
            equal = inside
        else:
            equal = c.builder.host_op("torch.aten.__and__.bool", [equal, inside], V.BOOL, equal.example and inside.example)
    return equal


def is_none_test(c, expr: ast.Compare, operands) -> V.EnvValue:
    """`v is None` / `v is not None` of a value that is None on some paths: its `present`."""
    value, other = operands if isinstance(operands[0], V.Maybe) else operands[::-1]
    if not (isinstance(other, V.Const) and other.value is None):
        raise c.error(expr, f"`{source_text(expr)}`: `is` between a value that is None on some paths and another value", "compare with None: `v is None`")
    present = c.builder.materialize(value.present)
    if isinstance(expr.ops[0], ast.IsNot):
        return present
    return c.builder.host_op("torch.aten.__not__", [present], V.BOOL, not present.example)


def _scalar_pair(c, left, right, node):
    """Both operands as IR scalars of one kind, as Python's numeric tower mixes them: a bool
    with an int is an int, anything with a float is a float."""
    for side in (left, right):
        c.refuse_truth_value(node, side)
        if not (isinstance(side, V.Dyn) or (isinstance(side, V.Const) and isinstance(side.value, (bool, int, float)))):
            raise c.error(node, f"`{source_text(node)}`: arithmetic on a {V.kind_of(side)} and runtime values")
    left, right = c._materialize(left, "operand"), c._materialize(right, "operand")
    for side in (left, right):
        if side.type not in (V.INT, V.FLOAT, V.BOOL):
            raise c.error(node, f"`{source_text(node)}`: arithmetic on {V.describe_type(side.type)}")
    if left.type == right.type:
        return left, right
    target = V.FLOAT if V.FLOAT in (left.type, right.type) else V.INT

    def convert(side):
        if side.type == V.BOOL:
            side = c.builder.host_op("torch.aten.Int.bool", [side], V.INT, int(side.example))
        if side.type == V.INT and target == V.FLOAT:
            side = c.builder.host_op("torch.aten.Float.Scalar", [side], V.FLOAT, float(side.example))
        return side

    return convert(left), convert(right)


def host_BinOp(c, expr: ast.BinOp, env) -> V.EnvValue:
    left, right = c.expression(expr.left, env), c.expression(expr.right, env)
    if type(expr.op) in host_sets.SET_OPERATORS and host_sets.is_set_operation(left, right):
        host_sets.check_context(c, expr)
        return host_sets.combine(c, expr, host_sets.as_set(c, expr, left), host_sets.as_set(c, expr, right))
    if isinstance(expr.op, ast.Add) and (lists.is_list(left) or lists.is_list(right)):
        ops = list_ops.ListOps(c, expr, f"`{source_text(expr)}`")
        if not (lists.is_list(left) and lists.is_list(right)):
            raise c.error(expr, f"`{source_text(expr)}` adds a list and a {V.kind_of(right if lists.is_list(left) else left)}", "add lists to lists")
        return ops.concat(left, right)
    if isinstance(expr.op, ast.Mult) and (lists.is_list(left) or lists.is_list(right)):
        lst, count = (left, right) if lists.is_list(left) else (right, left)
        ops = list_ops.ListOps(c, expr, f"`{source_text(expr)}`")
        if not (isinstance(count, V.Const) and type(count.value) is int):
            raise c.error(expr, f"`{source_text(expr)}` repeats a list a number of times computed at runtime", "repeat it a constant number of times")
        items = lists.items_of(lst)
        if items is None:
            raise c.error(expr, f"`{source_text(expr)}` repeats a list whose length is only known at runtime", "build the list in a loop")
        return ops.rebuild(lst, list(items) * count.value)
    if host_expressions.is_tensor(left) or host_expressions.is_tensor(right):
        if host_numpy.is_numpy(left) or host_numpy.is_numpy(right):
            host_numpy.check_binary(c, expr, expr.op, left, right)
        return host_numpy.mark(_apply(c, expr, env, host_expressions.known_values([expr.left, expr.right], [left, right])), [left, right])
    spec = X.BINARY_OPS.get(type(expr.op))
    if spec is None:
        raise c.error(expr, f"`{type(expr.op).__name__}` on runtime Python scalars")
    name, always_float = spec
    a, b = _scalar_pair(c, left, right, expr)
    if a.type == V.BOOL:
        a, b = (c.builder.host_op("torch.aten.Int.bool", [s], V.INT, int(s.example)) for s in (a, b))
    if always_float and a.type == V.INT:
        a, b = (c.builder.host_op("torch.aten.Float.Scalar", [s], V.FLOAT, float(s.example)) for s in (a, b))
    py = {ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y, ast.Mult: lambda x, y: x * y,
          ast.FloorDiv: lambda x, y: x // y, ast.Mod: lambda x, y: x % y, ast.Div: lambda x, y: x / y}[type(expr.op)]
    example = py(a.example, b.example)
    return c.builder.host_op(f"torch.aten.{name}.{V.scalar_name(a.type)}", [a, b], V.type_of_example(example), example)


def host_UnaryOp(c, expr: ast.UnaryOp, env) -> V.EnvValue:
    operand = c.expression(expr.operand, env)
    if isinstance(expr.op, ast.Not):
        as_bool = _to_bool(c, operand, expr)
        if isinstance(as_bool, V.Const):
            return V.Const(not as_bool.value)
        return c.builder.host_op("torch.aten.__not__", [as_bool], V.BOOL, not as_bool.example)
    if host_expressions.is_tensor(operand):
        return host_numpy.mark(_apply(c, expr, env, host_expressions.known_values([expr.operand], [operand])), [operand])
    if isinstance(expr.op, ast.USub):
        value = c._materialize(operand, "operand")
        return c.builder.host_op(f"torch.aten.neg.{V.scalar_name(value.type)}", [value], value.type, -value.example)
    raise c.error(expr, f"`{type(expr.op).__name__}` on a runtime Python scalar")


def _to_bool(c, value: V.EnvValue, node) -> V.EnvValue:
    return host_builtins.truth(c, value, node)


def host_BoolOp(c, expr: ast.BoolOp, env) -> V.EnvValue:
    """`a and b` / `a or b` as Python evaluates them: an operand is computed only when the
    ones before it do not decide (an `scf.if` when they decide at runtime), and the value is
    the operand that decided (a bool when all operands are bools)."""
    return _boolop(c, expr, list(expr.values), env, isinstance(expr.op, ast.And))


def _boolop(c, expr, values, env, is_and: bool) -> V.EnvValue:
    first = c.expression(values[0], env)
    if len(values) == 1:
        return first
    truth = host_builtins.truth(c, first, values[0])
    if isinstance(truth, V.Const):
        return _boolop(c, expr, values[1:], env, is_and) if truth.value == is_and else first
    if host_expressions.is_bool(first) and all(host_expressions.is_simple(v) for v in values[1:]):
        # the rest cannot fail or cost anything: computed eagerly, combined on the host
        rest = _boolop(c, expr, values[1:], env, is_and)
        if host_expressions.is_bool(rest):
            rest = host_builtins.truth(c, rest, expr)
            if isinstance(rest, V.Const):
                return rest if rest.value != is_and else truth
            name = "__and__" if is_and else "__or__"
            example = (truth.example and rest.example) if is_and else (truth.example or rest.example)
            return c.builder.host_op(f"torch.aten.{name}.bool", [truth, rest], V.BOOL, example)

    def rest(scope):
        return _boolop(c, expr, values[1:], scope, is_and)

    def decided(scope):
        return first

    then_fn, else_fn = (rest, decided) if is_and else (decided, rest)
    # (`self.key is not None and torch.equal(x, self.key)`: the rest knows `self.key`)
    return c._conditional(expr, env, truth, then_fn, else_fn, truth_if_mixed=True,
                          refinements=host_expressions.none_test_branches(values[0], env))


def host_Subscript(c, expr: ast.Subscript, env) -> V.EnvValue:
    size = sizes.host_size(c, expr, env)
    if size is not None:
        return size
    holder = c.expression(expr.value, env)
    if isinstance(holder, V.Packed):
        key = c._try_constant(expr.slice, env, quiet=True)
        if type(key) is not int:
            raise packed.refuse(c, expr, "indexes with something other than a constant int")
        return packed.read(c, expr, holder, key)
    if not (lists.is_list(holder) or isinstance(holder, V.Tup) or isinstance(holder, V.Const) and isinstance(holder.value, tuple)):
        reversed_rows = host_numpy.reversed_view(c, expr, holder, env) if host_numpy.is_numpy(holder) else None
        if reversed_rows is not None:  # (`x.numpy()[::-1]`)
            return reversed_rows
        sliced = c._sliced_on_host(expr, holder, env)
        if sliced is not None:
            return host_numpy.mark(sliced, [holder])
        return host_numpy.mark(_apply(c, expr, env, host_expressions.known_values([expr.value], [holder])), [holder])
    if isinstance(holder, V.Tup) and isinstance(holder.kind, V.DictKind):
        return _dict_item(c, expr, holder, c.expression(expr.slice, env))
    key = list_ops.subscript_key(c, expr.slice, env)
    ops = list_ops.ListOps(c, expr, f"`{source_text(expr)}`")
    if isinstance(holder, V.Tup) and holder.kind != "list":  # a tuple: items known
        constant = list_ops.const_key(key)
        if constant is None:
            return _runtime_index_into_known(c, expr, env, holder, key)
        _, picked = ops.python(holder, lambda items: items[constant])
        return V.Tup(tuple(picked), holder.kind) if isinstance(constant, slice) else picked
    picked = ops.get(holder, key)
    if picked is not None:
        return picked
    if not (isinstance(holder, V.Dyn) and V.is_list_type(holder.type)):
        return _runtime_index_into_known(c, expr, env, holder, key)
    return _runtime_item(c, expr, holder, key)


def _dict_item(c, expr: ast.Subscript, holder: V.Tup, key: V.EnvValue) -> V.EnvValue:
    """`d[key]` of a dict whose keys are known here."""
    if not isinstance(key, V.Const):
        raise c.error(expr, f"`{source_text(expr)}` reads a dict at a key computed at runtime", "pick the item with an `if` on the key")
    if key.value not in holder.kind.keys:
        raise c.error(expr, f"`{source_text(expr)}`: KeyError: {key.value!r} (the dict has {', '.join(map(repr, holder.kind.keys)) or 'no keys'})")
    return holder.items[holder.kind.keys.index(key.value)]


def host_Dict(c, expr: ast.Dict, env) -> V.EnvValue:
    """`{"logits": y, "exit": k}` with keys known here (a `**d` spreads a dict's items)."""
    entries: dict = {}
    for key_node, value_node in zip(expr.keys, expr.values):
        value = c.expression(value_node, env)
        if key_node is None:
            if isinstance(value, V.Const) and type(value.value) is dict:
                value = V.dict_value({k: V.Const(v) for k, v in value.value.items()})
            if not (isinstance(value, V.Tup) and isinstance(value.kind, V.DictKind)):
                raise c.error(value_node, f"`**{source_text(value_node)}` spreads a {V.kind_of(value)} into a dict")
            entries.update(zip(value.kind.keys, value.items))
            continue
        key = c._try_constant(key_node, env)
        if key is V.MISSING or type(key) not in (str, int):
            raise c.error(key_node, f"a dict key `{source_text(key_node)}` that is not a str or int known when the model is imported", "key the dict by constant strs or ints")
        entries[key] = value
    return V.dict_value(entries)


def _runtime_index_into_known(c, expr: ast.Subscript, env, holder, key) -> V.EnvValue:
    """A list or tuple whose items are known here, read at a runtime index: on the host
    when the items are tensors, or Python scalars of one type (the host's `lst[k]` has
    Python's meaning: negative from the end, IndexError past it); else a run."""
    items = lists.items_of(holder)
    kinds = {lists.list_type_of_item(item) for item in items or ()}
    if len(kinds) != 1 or None in kinds:
        return _apply(c, expr, env, host_expressions.known_values([expr.value], [holder]))
    return _runtime_item(c, expr, lists.static_list(c, items, kinds.pop()), key)


def _runtime_item(c, expr: ast.Subscript, holder: V.Dyn, key) -> V.EnvValue:
    """`holder[key]` with a runtime int `key`, read on the host."""
    index = c._materialize(key, "index")
    index = host_numpy.integer_item(c, index) or index  # (a numpy integer: through `__index__`)
    if index.type != V.INT:
        raise c.error(expr, f"indexing a list with {V.describe_type(index.type)}", "index it with an int")
    scalar = V.list_item_scalar(holder.type)
    if not holder.example and scalar is None:
        raise RuntimeSize.of(c.error(
            expr, f"`{source_text(expr)}` of a list that is empty on the example path",
            "check DyCL's example inputs: the list must have items when the model is imported",
        ))
    # (a Python number read from a list empty on the example path, in a loop over it that
    # the example does not enter: any number of its type stands for it, as the host op is
    # exact for every value)
    example = lists.safe_item(holder.example, index.example) if holder.example else _SCALAR_EXAMPLES[scalar]
    return c.builder.host_op(LIST_ITEM, [holder, index], lists.item_ir_type(holder), example)


def host_Attribute(c, expr: ast.Attribute, env) -> V.EnvValue:
    value = c.expression(expr.value, env)
    if isinstance(value, V.Packed):
        return packed.read(c, expr, value, expr.attr)
    result = host_numpy.attribute(c, expr, value)
    if result is not None:
        return result
    return _apply(c, expr, env, host_expressions.known_values([expr.value], [value]))


def host_Tuple(c, expr, env) -> V.EnvValue:
    kind = "list" if isinstance(expr, ast.List) else "tuple"
    return V.Tup(tuple(c.expression(e, env) for e in expr.elts), kind)


def host_IfExp(c, expr: ast.IfExp, env) -> V.EnvValue:
    """`a if cond else b`: a constant condition picks a branch; a runtime one becomes an
    `scf.if` whose regions compute only their own branch (as Python evaluates only one)."""
    test = host_builtins.truth(c, c.expression(expr.test, env), expr.test)
    if isinstance(test, V.Const):
        return c.expression(expr.body if test.value else expr.orelse, env)
    return c._conditional(
        expr, env, test,
        lambda scope: c.expression(expr.body, scope),
        lambda scope: c.expression(expr.orelse, scope),
        refinements=host_expressions.none_test_branches(expr.test, env),
    )


def refuse_truth_value(c, node, value) -> None:
    for leaf in V.leaves(value) if isinstance(value, (V.Tup, V.Dyn)) else ():
        if isinstance(leaf, host_expressions.TruthValue):
            raise c.error(
                node, f"the value of `{leaf.source}` (one of its operands, a bool or a tensor depending on the path)",
                "use it only as a condition, or write `bool(a) and bool(b)`",
            )


def _apply(c, expr: ast.expr, env, known: dict | None = None) -> V.EnvValue:
    """Tensor math over sub-expressions that needed host handling: each operand slot (a
    direct child expression, a method call's receiver, a slice bound) is computed first (host
    ops or runs) and becomes an input of one run. `known` holds values already computed for
    some of these nodes, by id of the node (`host_expressions.known_values`)."""
    known = known or {}
    children = list(host_expressions.operand_slots(expr, env))
    local = {}
    replacements = {}
    for child in children:
        if not c._needs_host(child, env, set()):
            continue
        value = known.get(id(child))
        if value is None:
            value = c.expression(child, env)
        c.refuse_truth_value(child, value)
        name = f"{OPERAND_PREFIX}{fresh_id()}"
        local[name] = value
        replacements[id(child)] = name
    memo: dict = {}
    copied = copy.deepcopy(expr, memo)
    by_copy = {id(memo[key]): name for key, name in replacements.items()}
    rewritten = replace_nodes(copied, by_copy)
    scoped = {**env, **local}
    try:
        result = c.tensor_expression(ast.copy_location(rewritten, expr), scoped)
    except FrontendError as error:
        raise _quoting(error, rewritten, expr) from None
    for name in env:  # a run that mutates a tensor in place rebinds it (and its aliases)
        if scoped[name] is not env[name]:
            env[name] = scoped[name]
    return result


def host_ListComp(c, expr: ast.ListComp, env) -> V.EnvValue:
    return host_builtins.host_list_comprehension(c, expr, env)


def host_GeneratorExp(c, expr: ast.expr, env) -> V.EnvValue:
    return host_builtins.host_generator(c, expr, env)


def _quoting(error: FrontendError, rewritten: ast.expr, written: ast.expr) -> FrontendError:
    """`error` quoting the expression as the user wrote it (`torch.tensor(durations)`), not
    with the operands computed before its run (`torch.tensor(<runtime value>)`)."""
    shown, source = source_text(rewritten), source_text(written)
    if shown == source or shown not in error.construct:
        return error
    return type(error)(error.construct.replace(shown, source), error.hint, file=error.file, line=error.line)
