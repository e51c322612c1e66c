"""Python builtins and comprehensions over host values (issue 13.4).

A comprehension whose operands are all tensors and import-time constants stays inside a
captured run (Python evaluates it while the run is traced). When it reads a value the host
holds (a Python scalar from `.item()`, a list of tensors, a list from `.tolist()`), it is
unrolled here: its iterable must have items known at import time (a constant, a tuple, a
list built in straight-line code, a tensor's rows along a static dimension), each element is
compiled with the target bound to the item, and the result is a list value (a list of
tensors, a fixed structure, or a constant). `any`, `all`, `sum`, `max`, `min`, `len`, `list`
and `tuple` take such sequences (a generator expression is one only as their argument):
truth values fold with host `and`/`or`, sums with the host `+` of each operand kind, and
`max`/`min` of non-int values (with or without `key=`) select the first best item with
`torch.where` in one run, comparing keys as float64 tensors (Python's strict `>`/`<`, NaN
included).
"""

from __future__ import annotations

import ast
import builtins

import torch

from dycl.frontend import host_sets, list_ops, lists, nodes
from dycl.frontend import values as V
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import RuntimeSize
from dycl.frontend.nodes import located
from dycl.frontend.rewrite import fresh_id

COMPREHENSIONS = (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)


def _describe(node: ast.AST) -> str:
    return f"`{source_text(node)}`"


# ----- iteration --------------------------------------------------------------------------


def comprehension_as_loop(c, stmt: ast.stmt, env) -> list[ast.stmt] | None:
    """`out = [e for t in it if cond]` whose items are decided at run time (`it` a list of
    runtime length, or a tensor's rows kept by a test of their values), as the loop Python
    runs for it: `__out = []`, `for __t in it: if cond: __out.append(e)`, `out = __out`
    (the target renamed, as the comprehension's own scope keeps it; the list made under a
    fresh name, as `it` and `e` may read `out`). Else None: the comprehension is unrolled."""
    comp = stmt.value if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else None
    if not isinstance(comp, ast.ListComp) or len(comp.generators) != 1 or comp.generators[0].is_async:
        return None
    generator = comp.generators[0]
    iterable = env.get(generator.iter.id) if isinstance(generator.iter, ast.Name) else None
    if not isinstance(generator.target, ast.Name) or not isinstance(iterable, V.Dyn):
        return None
    runtime_list = V.is_list_type(iterable.type) and lists.items_of(iterable) is None
    filtered_rows = bool(generator.ifs) and V.is_tensor_type(iterable.type)
    if not (runtime_list or filtered_rows):
        return None
    item, out = f"__item{fresh_id()}", f"__comprehension{fresh_id()}"
    renamed = {generator.target.id: item}
    body = [nodes.parsed(f"{out}.append(__element)", stmt)[0]]
    body[0].value.args = [_renamed(comp.elt, renamed)]
    for test in reversed(generator.ifs):
        body = [ast.copy_location(ast.If(test=_renamed(test, renamed), body=body, orelse=[]), stmt)]
    loop = ast.copy_location(ast.For(target=ast.Name(item, ast.Store()), iter=generator.iter, body=body, orelse=[]), stmt)
    made = [*nodes.parsed(f"{out} = []", stmt), nodes.Loop(loop, nodes.ReturnTo(out, -1)),
            ast.copy_location(ast.Assign(targets=stmt.targets, value=ast.Name(out, ast.Load())), stmt)]
    for sub in (n for s in made for n in ast.walk(s.node if isinstance(s, nodes.Loop) else s)):
        if "lineno" in sub._attributes and not hasattr(sub, "lineno"):
            ast.copy_location(sub, stmt)
    return [nodes.written_as(s, stmt) for s in made]


def _renamed(expr: ast.expr, names: dict[str, str]) -> ast.expr:
    """A copy of `expr` reading `names[n]` for each name n (not inside a nested scope of its own)."""
    import copy

    class Renamer(ast.NodeTransformer):
        def visit_Name(self, node):
            return ast.copy_location(ast.Name(names[node.id], node.ctx), node) if node.id in names else node

        def visit_Lambda(self, node):
            return node

    return Renamer().visit(copy.deepcopy(expr))


def iterate(c, value, node: ast.AST, what: str) -> list:
    """The items of an iterable value, known at import time (else a located refusal)."""
    items = lists.items_of(value)
    if items is not None:
        return list(items)
    if isinstance(value, V.Const):
        try:
            return [V.Const(v) for v in value.value]
        except TypeError as error:
            raise c.error(node, f"{what}: TypeError: {error}") from None
    if isinstance(value, V.Dyn) and V.is_list_type(value.type):
        raise RuntimeSize.of(c.error(  # (compiled per length where the lengths are known)
            node,
            f"{what} over a list whose length is only known at runtime",
            "stack it (`torch.stack(lst)`) and compute on the tensor, or compute each item "
            "where it is appended",
        ))
    if isinstance(value, V.Dyn) and V.is_tensor_type(value.type):
        return tensor_rows(c, value, node, what)
    raise c.error(node, f"{what} over {V.describe_type(value.type) if isinstance(value, V.Dyn) else 'a runtime value'}")


def tensor_rows(c, value: V.Dyn, node, what: str) -> list:
    """`for row in t`: t[0], t[1], ... along a dimension whose size is static."""
    if not value.type.shape or value.type.shape[0] is None:
        raise c.error(
            node, f"{what} over the rows of a tensor whose first dimension is not static",
            "index it with a range of a constant length",
        )
    name = f"__rows{fresh_id()}"
    rows = []
    for k in range(value.type.shape[0]):
        expr = ast.copy_location(ast.Subscript(value=ast.Name(name, ast.Load()), slice=ast.Constant(k), ctx=ast.Load()), node)
        rows.append(c.tensor_expression(expr, {name: value}))
    return rows


def bind_target(c, target: ast.expr, item, scope: dict) -> None:
    if isinstance(target, ast.Name):
        scope[target.id] = item
        return
    if isinstance(target, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in target.elts):
        parts = lists.items_of(item)
        if parts is None:
            raise c.error(target, f"unpacking a runtime value into {_describe(target)}", "index it explicitly")
        if len(parts) != len(target.elts):
            raise c.error(target, f"unpacking {len(parts)} values into {_describe(target)}")
        for sub, part in zip(target.elts, parts):
            bind_target(c, sub, part, scope)
        return
    raise c.error(target, f"comprehension target {_describe(target)}", "use names or tuples of names")


def comprehension_items(c, expr, env: dict) -> list:
    """The element values of a list comprehension / generator expression, in order."""
    if isinstance(expr, (ast.SetComp, ast.DictComp)):
        kind = "set" if isinstance(expr, ast.SetComp) else "dict"
        raise c.error(
            expr, f"{kind} comprehension over values computed at runtime",
            "build a list with a list comprehension (or a loop) instead",
        )
    targets = {n.id for gen in expr.generators for n in ast.walk(gen.target) if isinstance(n, ast.Name)}
    results = []

    def loop(k: int, scope: dict) -> None:
        if k == len(expr.generators):
            before = {name: scope[name] for name in env}
            results.append(c.expression(expr.elt, scope))
            _check_unchanged(c, expr, env, before, scope, targets)
            return
        generator = expr.generators[k]
        if generator.is_async:
            raise c.error(expr, "async comprehension", "forward must be a plain function")
        for item in iterable_items(c, generator.iter, scope, f"comprehension {_describe(expr)}"):
            inner = dict(scope)
            bind_target(c, generator.target, item, inner)
            if all(_filter(c, condition, inner, expr) for condition in generator.ifs):
                loop(k + 1, inner)

    loop(0, dict(env))
    return results


def _filter(c, condition: ast.expr, scope: dict, expr) -> bool:
    test = c.condition(condition, scope)
    if not isinstance(test, V.Const):
        raise c.error(
            condition,
            f"comprehension filter `if {source_text(condition)}` on a runtime value",
            "write it as a loop: `out = []`, `for ...:`, `if cond: out.append(...)`",
        )
    return bool(test.value)


def _check_unchanged(c, expr, env, before, scope, targets) -> None:
    for name, value in before.items():
        if name not in targets and scope.get(name) is not value:
            raise c.error(
                expr, f"comprehension {_describe(expr)} changes `{name}` in place",
                "write it as a `for` loop",
            )


def host_list_comprehension(c, expr: ast.ListComp, env) -> V.EnvValue:
    return V.Tup(tuple(comprehension_items(c, expr, env)), "list")


def host_generator(c, expr, env) -> V.EnvValue:
    if isinstance(expr, ast.GeneratorExp):
        raise c.error(
            expr, f"generator expression {_describe(expr)} used as a value",
            "use a list comprehension `[...]` (a generator is compiled only as the argument of "
            "any/all/sum/max/min/list/tuple)",
        )
    comprehension_items(c, expr, env)  # refuses set/dict comprehensions with their message
    raise AssertionError("unreachable")


def sequence_argument(c, node: ast.expr, env, what: str) -> list:
    """The items of an argument that is iterated: a comprehension or any iterable value."""
    if isinstance(node, (ast.GeneratorExp, ast.ListComp)):
        return comprehension_items(c, node, env)
    return iterable_items(c, node, env, what)


def iterable_items(c, node: ast.expr, env, what: str) -> list:
    """Items of `for ... in node`: `zip`, `enumerate` and `reversed` of host sequences are
    taken apart here (their items are known); anything else is evaluated and iterated."""
    if isinstance(node, ast.Call) and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args):
        func = c._try_constant(node.func, env, quiet=True)
        if func is builtins.zip and node.args:
            columns = [iterable_items(c, a, env, what) for a in node.args]
            return [V.Tup(tuple(row), "tuple") for row in zip(*columns)]
        if func is builtins.enumerate and len(node.args) == 1:
            return [V.Tup((V.Const(k), item), "tuple") for k, item in enumerate(iterable_items(c, node.args[0], env, what))]
        if func is builtins.reversed and len(node.args) == 1:
            return list(reversed(iterable_items(c, node.args[0], env, what)))
    return iterate(c, c.expression(node, env), node, what)


# ----- truth values -------------------------------------------------------------------------


def truth(c, value, node) -> V.EnvValue:
    """bool(value) as Python computes it: a constant, or a host bool."""
    if isinstance(value, V.Const):
        return V.Const(bool(value.value))
    if isinstance(value, V.Tup):
        return V.Const(bool(value.items))
    if isinstance(value, lists.StaticList):
        return V.Const(bool(value.items))
    if isinstance(value, V.Dyn) and V.is_list_type(value.type):
        n = list_ops.length(c, value)
        return c.builder.host_op("torch.aten.ne.int", [n, c.builder.constant(0)], V.BOOL, len(value.example) != 0)
    if isinstance(value, V.Dyn) and V.is_tensor_type(value.type):
        if value.example.numel() != 1:
            raise c.error(
                node, f"truth value of a tensor with {value.example.numel()} elements",
                "reduce it first: `.any()` / `.all()`",
            )
        return c.builder.host_op("torch.aten.Bool.Tensor", [value], V.BOOL, bool(value.example))
    if isinstance(value, V.Dyn) and value.type == V.BOOL:
        return value
    if isinstance(value, V.Dyn) and value.type in (V.INT, V.FLOAT):
        kind = "int" if value.type == V.INT else "float"
        return c.builder.host_op(f"torch.aten.Bool.{kind}", [value], V.BOOL, bool(value.example))
    raise c.error(node, f"truth value of a {value!r}")


def _fold_bools(c, values, node, is_any: bool) -> V.EnvValue:
    result = None
    for value in values:
        value = truth(c, value, node)
        if isinstance(value, V.Const):
            if value.value == is_any:
                return V.Const(is_any)  # decided whatever the others are
            continue
        if result is None:
            result = value
        else:
            name = "__or__" if is_any else "__and__"
            example = (result.example or value.example) if is_any else (result.example and value.example)
            result = c.builder.host_op(f"torch.aten.{name}.bool", [result, value], V.BOOL, example)
    return result if result is not None else V.Const(not is_any)


# ----- the builtins ---------------------------------------------------------------------------


def _one_argument(c, expr: ast.Call, name: str, keywords=()) -> ast.expr:
    if len(expr.args) != 1 or isinstance(expr.args[0], ast.Starred) or any(k.arg not in keywords for k in expr.keywords):
        raise c.error(expr, f"{_describe(expr)}: `{name}` with these arguments on runtime values", f"call `{name}(iterable)`")
    return expr.args[0]


def _any(c, expr, env):
    result, items = _one_op_or_items(c, _one_argument(c, expr, "any"), env, "any", "torch.aten.any.bool", V.BOOL)
    return result if result is not None else _fold_bools(c, items, expr, True)


def _all(c, expr, env):
    result, items = _one_op_or_items(c, _one_argument(c, expr, "all"), env, "all", "torch.aten.all.bool", V.BOOL)
    return result if result is not None else _fold_bools(c, items, expr, False)


def _one_op_or_items(c, node: ast.expr, env, name: str, op: str, item: str):
    """`name(node)`, the argument evaluated once: (one host op, None) for a variable holding
    a runtime-length list of `item`s (Python's builtin on the host: `max([])` raises
    ValueError there too), else (None, the argument's items)."""
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return None, sequence_argument(c, node, env, f"`{name}`")
    value = c.expression(node, env)
    if not (lists.is_runtime_list(value) and value.type == V.SCALAR_LISTS[item]):
        return None, iterate(c, value, node, f"`{name}`")
    try:
        example = getattr(builtins, name)(value.example)
    except ValueError:
        example = 0
    return c.builder.host_op(op, [value], item if name in ("max", "min") else V.BOOL, example), None


def _len(c, expr, env):
    node = _one_argument(c, expr, "len")
    value = c.expression(node, env)
    if isinstance(value, V.Dyn) and V.is_list_type(value.type):
        return V.Const(list_ops.length(c, value)) if isinstance(value, lists.StaticList) else list_ops.length(c, value)
    items = lists.items_of(value)
    if items is not None:
        return V.Const(len(items))
    if isinstance(value, V.Dyn) and V.is_tensor_type(value.type) and value.type.shape and value.type.shape[0] is not None:
        return V.Const(value.type.shape[0])  # a static size (of a numpy array too)
    if isinstance(value, V.Dyn) and V.is_tensor_type(value.type) and value.type.shape and isinstance(value.example, torch.Tensor):
        # a size known only at run time (`len(x[:k])`, `len(mask.nonzero())`): the host reads it
        return c.builder.host_op("torch.aten.size.int", [value, c.builder.constant(0)], V.INT, len(value.example))
    return None  # a tensor or anything else: the caller's default


def _set(c, expr, env):
    """`set(keep)` of runtime ints: the sorted list of its distinct items (host_sets.py),
    used only where a set's order does not show."""
    node = _one_argument(c, expr, expr.func.id if isinstance(expr.func, ast.Name) else "set") if expr.args else None
    if node is None or isinstance(node, COMPREHENSIONS):
        return None
    ranged = _runtime_range(c, node, env)
    value = ranged if ranged is not None else c.expression(node, env)
    if isinstance(value, V.Const):
        try:  # (known here: Python's own set)
            return V.Const(c._eval_constant(expr.func, env)(value.value))
        except Exception:
            return None
    host_sets.check_context(c, expr)
    return value if isinstance(value, host_sets.SortedSet) else host_sets.distinct(c, expr, value, "a set")


def _runtime_range(c, node: ast.expr, env) -> V.EnvValue | None:
    """The items of `range(...)` of runtime ints, as a runtime list (ascending for a positive
    step: a set of them is that list), else None."""
    if not (isinstance(node, ast.Call) and c._try_constant(node.func, env, quiet=True) is builtins.range
            and 1 <= len(node.args) <= 3 and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args)):
        return None
    bounds = [c.expression(a, env) for a in node.args]
    if all(isinstance(b, V.Const) for b in bounds):
        return V.Const(range(*(b.value for b in bounds)))
    names = [f"__r{k}" for k in range(len(bounds))]
    made = host_sets.compiled(c, node, f"__out = list(__none)\nfor __v in range({', '.join(names)}):\n    __out.append(__v)\n", dict(zip(names, bounds)))
    step = bounds[2] if len(bounds) == 3 else V.Const(1)
    if isinstance(made, V.Dyn) and isinstance(step, V.Const) and step.value > 0:
        return host_sets.SortedSet(made.value, made.type, list(made.example))
    return made


def _sorted(c, expr, env):
    """`sorted(lst)` / `sorted(lst, reverse=True)` of runtime ints (host_sets.py); None for
    anything else (a constant, a `key=`: the caller's default)."""
    if len(expr.args) != 1 or isinstance(expr.args[0], ast.Starred) or any(k.arg != "reverse" for k in expr.keywords):
        return None
    reverse = c._try_constant(expr.keywords[0].value, env, quiet=True) if expr.keywords else False
    if type(reverse) is not bool:
        raise c.error(expr, f"{_describe(expr)}: `reverse` known only at run time", "pass a constant")
    value = c.expression(expr.args[0], env)
    if isinstance(value, V.Const) or not (lists.is_list(value) or isinstance(value, V.Tup)):
        return None
    return host_sets.sorted_list(c, expr, value, reverse)


def _list(c, expr, env):
    if not expr.args:
        return V.Tup((), "list")
    node = _one_argument(c, expr, "list")
    if not isinstance(node, (ast.GeneratorExp, ast.ListComp)):
        value = c.expression(node, env)
        if lists.is_runtime_list(value):
            return V.Dyn(value.value, value.type, list(value.example))  # a copy: a new list object
        if isinstance(value, V.Const):
            try:
                return V.Const(list(value.value))
            except TypeError as error:
                raise c.error(expr, f"{_describe(expr)}: TypeError: {error}") from None
        return V.Tup(tuple(iterate(c, value, node, "`list`")), "list")
    return V.Tup(tuple(sequence_argument(c, node, env, "`list`")), "list")


def _tuple(c, expr, env):
    if not expr.args:
        return V.Const(())
    node = _one_argument(c, expr, "tuple")
    return V.Tup(tuple(sequence_argument(c, node, env, "`tuple`")), "tuple")


def _sum(c, expr, env):
    if not 1 <= len(expr.args) <= 2 or any(k.arg != "start" for k in expr.keywords):
        raise c.error(expr, f"{_describe(expr)}: `sum` with these arguments", "call `sum(iterable)` or `sum(iterable, start)`")
    items = sequence_argument(c, expr.args[0], env, "`sum`")
    start = V.Const(0)
    if len(expr.args) == 2:
        start = c.expression(expr.args[1], env)
    for keyword in expr.keywords:
        start = c.expression(keyword.value, env)
    if all(isinstance(i, V.Const) for i in items) and isinstance(start, V.Const):
        try:
            return V.Const(sum((i.value for i in items), start.value))
        except TypeError as error:
            raise c.error(expr, f"{_describe(expr)}: TypeError: {error}") from None
    if not any(isinstance(l, V.Dyn) and not V.is_tensor_type(l.type) for i in items + [start] for l in V.leaves(i)):
        return c.written_expression("__dycl_builtins.sum(__items, __start)", expr, {"__items": V.Tup(tuple(items), "list"), "__start": start})
    total = start
    for item in items:  # Python's left fold, each `+` as host scalars or tensor math
        total = _binary(c, expr, ast.Add(), total, item)
    return total


def _binary(c, node, op, left, right):
    a, b = f"__lhs{fresh_id()}", f"__rhs{fresh_id()}"
    binop = ast.copy_location(ast.BinOp(left=ast.Name(a, ast.Load()), op=op, right=ast.Name(b, ast.Load())), node)
    for sub in ast.walk(binop):
        ast.copy_location(sub, node)
    return c.expression(binop, {a: left, b: right})


def _key_function(c, expr: ast.Call, env):
    """item -> key value for `key=` (a lambda is inlined; any other callable is called)."""
    keys = [k for k in expr.keywords if k.arg == "key"]
    if not keys or (isinstance(keys[0].value, ast.Constant) and keys[0].value.value is None):
        return None
    key = keys[0].value
    if isinstance(key, ast.Lambda):
        params = key.args
        if len(params.args) != 1 or params.vararg or params.kwarg or params.kwonlyargs or params.posonlyargs:
            raise c.error(key, f"`key={source_text(key)}` with other than one parameter", "use `key=lambda item: ...`")
        name = params.args[0].arg

        def call(item):
            return c.expression(key.body, {**env, name: item})

        return call

    def call(item):
        temp = f"__keyitem{fresh_id()}"
        node = located(ast.Call(func=key, args=[ast.Name(temp, ast.Load())], keywords=[]), expr)
        return c.expression(node, {**env, temp: item})

    return call


def _max(c, expr, env):
    return _extremum(c, expr, env, largest=True)


def _min(c, expr, env):
    return _extremum(c, expr, env, largest=False)


def _extremum(c, expr: ast.Call, env, largest: bool):
    name = "max" if largest else "min"
    if any(k.arg not in ("key", "default") for k in expr.keywords) or any(isinstance(a, ast.Starred) for a in expr.args):
        raise c.error(expr, f"{_describe(expr)}: `{name}` with these arguments", f"call `{name}(a, b, ...)` or `{name}(iterable, key=...)`")
    if not expr.args:
        raise c.error(expr, f"{_describe(expr)}: `{name}` of nothing")
    if len(expr.args) == 1 and not expr.keywords:
        over_runtime_list, items = _one_op_or_items(c, expr.args[0], env, name, f"torch.prim.{name}.self_int", V.INT)
        if over_runtime_list is not None:
            return over_runtime_list
    elif len(expr.args) == 1:
        items = sequence_argument(c, expr.args[0], env, f"`{name}`")
    else:
        if any(k.arg == "default" for k in expr.keywords):
            raise c.error(expr, f"{_describe(expr)}: TypeError: `default` with several positional arguments")
        items = [c.expression(a, env) for a in expr.args]
    if not items:
        default = [k.value for k in expr.keywords if k.arg == "default"]
        if default:
            return c.expression(default[0], env)
        raise c.error(expr, f"{_describe(expr)}: ValueError: {name}() arg is an empty sequence", "check the example inputs")
    key_of = _key_function(c, expr, env)
    keys = [key_of(item) for item in items] if key_of is not None else list(items)
    if all(isinstance(k, V.Const) for k in keys):  # decided while importing
        best = 0
        for k in range(1, len(items)):
            if (keys[k].value > keys[best].value) if largest else (keys[k].value < keys[best].value):
                best = k
        return items[best]
    if key_of is None and all(_is_int(i) for i in items):  # ints: the host's max/min
        result = items[0].value if isinstance(items[0], V.Const) else items[0]
        for item in items[1:]:
            result = (list_ops._max if largest else list_ops._min)(c, result, item.value if isinstance(item, V.Const) else item)
        return V.Const(result) if not isinstance(result, V.Dyn) else result
    return _select(c, expr, items, keys, largest)


def _is_int(value) -> bool:
    return (isinstance(value, V.Const) and type(value.value) is int) or (isinstance(value, V.Dyn) and value.type == V.INT)


def _as_tensor_operand(c, value, node, role: str):
    """A key or item as something a run takes: tensors, floats (made 0-d tensors by the run),
    ints and bools as 0-d tensors made on the host, constants as they are."""
    if isinstance(value, V.Const):
        if isinstance(value.value, (bool, int, float)):
            return value
        raise c.error(node, f"{_describe(node)}: a {role} that is a {type(value.value).__name__}", "compare numbers or one-element tensors")
    if isinstance(value, V.Dyn) and V.is_tensor_type(value.type):
        if value.example.numel() != 1 and role == "key":
            raise c.error(node, f"{_describe(node)}: a key tensor with {value.example.numel()} elements", "reduce it to one value")
        return value
    if isinstance(value, V.Dyn) and value.type == V.FLOAT:
        return value
    if isinstance(value, V.Dyn) and value.type in (V.INT, V.BOOL):
        if value.type == V.BOOL:
            value = c.builder.host_op("torch.aten.Int.bool", [value], V.INT, int(value.example))
        example = torch.tensor(value.example)
        return c.builder.host_op("torch.prim.NumToTensor.Scalar", [value], V.type_of_example(example), example)
    raise c.error(node, f"{_describe(node)}: a {role} that is a {value!r}", "compare numbers or one-element tensors")


def _select(c, expr, items, keys, largest: bool):
    kinds = {V.kind_of(i) for i in items}
    if len(kinds) != 1:
        raise c.error(expr, f"{_describe(expr)} chooses among values of different kinds ({', '.join(sorted(kinds))})", "compare values of one kind")
    (kind,) = kinds
    if kind == "tensor":
        types = {i.type for i in items}
        if len(types) != 1:
            raise c.error(expr, f"{_describe(expr)} chooses among tensors of different shapes or dtypes", "choose an index, then index the tensors")
    if kind not in ("tensor", "int", "float", "bool"):
        raise c.error(expr, f"{_describe(expr)} chooses among values that are not numbers or tensors at runtime", "choose an index (`max(range(n), key=...)`), then index")
    bindings = {
        "__keys": V.Tup(tuple(_as_tensor_operand(c, k, expr, "key") for k in keys), "list"),
        "__items": V.Tup(tuple(_as_tensor_operand(c, i, expr, "item") for i in items), "list"),
    }
    chosen = c.written_expression(f"__dycl_select(__keys, __items, {largest})", expr, bindings)
    if kind == "tensor":
        return chosen
    convert = {"int": ("Int", V.INT, int), "float": ("Float", V.FLOAT, float), "bool": ("Bool", V.BOOL, bool)}[kind]
    return c.builder.host_op(f"torch.aten.{convert[0]}.Tensor", [chosen], convert[1], convert[2](chosen.example))


HANDLERS = {
    builtins.any: _any,
    builtins.all: _all,
    builtins.len: _len,
    builtins.list: _list,
    builtins.set: _set,
    builtins.frozenset: _set,
    builtins.sorted: _sorted,
    builtins.tuple: _tuple,
    builtins.sum: _sum,
    builtins.max: _max,
    builtins.min: _min,
}
# Builtins whose arguments a captured run cannot decide on (Python `bool()` of tensors):
# computed on the host whenever they read a runtime value.
DECIDING = {builtins.any, builtins.all}
