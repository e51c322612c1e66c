"""Host-level expressions: the handlers `FunctionCompiler.expression` dispatches to by AST
node type when an expression needs values that must stay outside captured runs (Python
scalars from tensor data, lists of data-dependent length, conditions).

Each handler takes the compiler (`self`), the expression and the environment. Tensor math
over operands computed this way is one captured run (`_apply`).
"""

from __future__ import annotations

import ast
import builtins
import copy
from dataclasses import dataclass

import torch
from torch_mlir import ir

from dycl.frontend import expressions as X
from dycl.frontend import host_builtins, host_numpy, lists
from dycl.frontend import values as V
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import FrontendError, RuntimeSize
from dycl.frontend.nodes import OPERAND_PREFIX, replace_nodes
from dycl.frontend.rewrite import fresh_id
from dycl.dialects.torch_ops import LIST_ITEM, LIST_LENGTH


def _is_tensor(value: V.EnvValue) -> bool:
    return isinstance(value, V.Dyn) and V.is_tensor_type(value.type) or (
        isinstance(value, V.Tup) and any(_is_tensor(i) for i in value.items)
    )


def _host_call(self, expr: ast.Call, env) -> V.EnvValue:
    if isinstance(expr.func, ast.Attribute) and expr.func.attr in X.SCALAR_METHODS and not expr.args:
        tensor = self._materialize(self.expression(expr.func.value, env), "tensor")
        example = _eager(self, expr, lambda: tensor.example.item())
        return self.builder.host_op("torch.aten.item", [tensor], V.type_of_example(example), example)
    func = self._try_constant(expr.func, env, quiet=True)
    handler = _handler(host_builtins.HANDLERS, func)
    if handler is not None:
        result = handler(self, expr, env)
        if result is not None:
            return result
    if host_numpy.is_numpy_function(func):
        return host_numpy.numpy_call(self, expr, env, func)
    receiver = None
    if func is V.MISSING and isinstance(expr.func, ast.Attribute) and (
        expr.func.attr == "numpy" or isinstance(expr.func.value, ast.Name) or self._needs_host(expr.func.value, env, set())
    ):
        receiver = self.expression(expr.func.value, env)  # `t.numpy()`, `probs.max()` on a numpy value
        result = host_numpy.method_call(self, expr, env, receiver)
        if result is not None:
            return result
    if X.known(host_numpy.TORCH_FROM_NUMPY, func):
        result = host_numpy.torch_from_numpy(self, expr, env, func)
        if result is not None:
            return result
    args = [self.expression(a, env) for a in expr.args]
    if X.known(X.SCALAR_BUILTINS, func) and len(args) == 1 and not expr.keywords:
        (arg,) = args
        arg = self._materialize(arg, "argument")
        example = _eager(self, expr, lambda: func(arg.example))
        source_kind = "Tensor" if V.is_tensor_type(arg.type) else V.scalar_name(arg.type)
        if V.type_of_example(example) == arg.type:
            return arg
        return self.builder.host_op(conversion_op(func, source_kind), [arg], V.type_of_example(example), example)
    if func is torch.equal:
        a, b = (self._materialize(a, "argument") for a in args)
        return self.builder.host_op("torch.aten.equal", [a, b], V.BOOL, torch.equal(a.example, b.example))
    if func is torch.is_nonzero:
        (a,) = (self._materialize(a, "argument") for a in args)
        return self.builder.host_op("torch.aten.Bool.Tensor", [a], V.BOOL, _eager(self, expr, lambda: bool(a.example)))
    if func is builtins.len and len(args) == 1 and isinstance(args[0], V.Dyn) and V.is_list_type(args[0].type):
        return self.builder.host_op(LIST_LENGTH, [args[0]], V.INT, len(args[0].example))
    host_numpy.refuse_numpy_argument(self, expr, args, func)
    if X.known(X.LIST_FUNCTIONS, func) and args and isinstance(args[0], lists.StaticList) and args[0].items:
        # items known: stacked inside a run, with a static shape
        return _apply(self, expr, env, _call_operands(expr, receiver, [V.Tup(args[0].items, "list"), *args[1:]]))
    if X.known(X.LIST_FUNCTIONS, func) and args and isinstance(args[0], V.Dyn) and args[0].type == V.TENSOR_LIST:
        return _stack_or_cat(self, expr, func, args, env)
    # Anything else: tensor math over the already-computed operands.
    return _apply(self, expr, env, _call_operands(expr, receiver, args))


def _eager(self, node, compute):
    """A Python conversion of an example value, as eager Python would do it; its error (a
    tensor of several elements to a bool, ...) is the program's, located at `node`."""
    try:
        return compute()
    except (RuntimeError, ValueError, TypeError) as error:
        raise self.error(node, f"`{source_text(node)}`: {type(error).__name__}: {error}") from None


def _call_operands(expr: ast.Call, receiver, args: list) -> dict:
    """Values already computed for a call's operands (see `_apply`): the receiver of a
    method call, the positional arguments."""
    known = _known_values(list(expr.args), args)
    if receiver is not None and isinstance(expr.func, ast.Attribute):
        known[id(expr.func.value)] = receiver
    return known


def _known_values(nodes, values) -> dict:
    """{id(node): value} of sub-expressions already computed (never computed twice)."""
    return {id(node): value for node, value in zip(nodes, values) if not isinstance(node, ast.Starred)}


def conversion_op(func, source_kind: str) -> str:
    """The op of `bool(v)`/`int(v)`/`float(v)` for a value of kind int/float/bool/Tensor (of
    another kind than the result: the same kind is the value itself)."""
    if func is float and source_kind in ("int", "bool"):
        source_kind = "Scalar"  # (torch has no Float.int: Float.Scalar takes any number)
    return f"torch.aten.{X.SCALAR_BUILTINS[func]}.{source_kind}"


def _handler(table: dict, func):
    try:
        return table.get(func)
    except TypeError:  # an unhashable constant
        return None


def _stack_or_cat(self, expr, func, args, env):
    dim = args[1] if len(args) > 1 else V.Const(0)
    for keyword in expr.keywords:
        if keyword.arg == "dim":
            dim = self.expression(keyword.value, env)
    if not isinstance(dim, V.Const):
        raise self.error(expr, "runtime `dim` of stack/cat", "use a constant dim")
    items = args[0].example
    example = func(items, dim.value) if items else None
    if example is None:
        raise RuntimeSize.of(self.error(expr, f"`{source_text(expr)}` of a list that is empty on the example path", "append at least once before the condition, or check DyCL's example inputs"))
    name = X.LIST_FUNCTIONS[func]
    type_ = X.stacked_type(example, dim.value)
    return self.builder.host_op(f"torch.aten.{name}", [args[0], self.builder.constant(int(dim.value))], type_, example)


def _host_compare(self, expr: ast.Compare, env) -> V.EnvValue:
    operands = [self.expression(e, env) for e in [expr.left, *expr.comparators]]
    if len(operands) == 2 and type(expr.ops[0]) in (ast.Is, ast.IsNot) and any(isinstance(o, V.Maybe) for o in operands):
        return is_none_test(self, expr, operands)
    if any(_is_tensor(o) for o in operands):
        return host_numpy.mark(_apply(self, expr, env, _known_values([expr.left, *expr.comparators], operands)), operands)
    if all(isinstance(o, V.Const) for o in operands) and all(type(op) in X.PY_COMPARE for op in expr.ops):
        # known here although it reads runtime values (`len(lst) > 1` of a list of known items)
        return V.Const(all(X.PY_COMPARE[type(op)](a.value, b.value) for op, a, b in zip(expr.ops, operands, operands[1:])))
    result = None
    for (op, left, right) in zip(expr.ops, operands, operands[1:]):
        name = X.COMPARE_OPS.get(type(op))
        if name is None:
            raise self.error(expr, f"`{type(op).__name__}` comparison of runtime values")
        pair = _scalar_pair(self, left, right, expr)
        example = X.PY_COMPARE[type(op)](pair[0].example, pair[1].example)
        kind = V.scalar_name(pair[0].type)
        value = self.builder.host_op(f"torch.aten.{name}.{kind}", list(pair), V.BOOL, example)
        result = value if result is None else self.builder.host_op(
            "torch.aten.__and__.bool", [result, value], V.BOOL, result.example and value.example
        )
    return result


def none_test_branches(test: ast.expr, env: dict) -> tuple[dict, dict]:
    """What `if v is None:` / `if v is not None:` tells each branch about a `v` that is None
    on some paths: None in one, its value in the other."""
    negated = False
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, negated = test.operand, not negated
    if not (
        isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.left, ast.Name) and isinstance(env.get(test.left.id), V.Maybe)
        and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None
    ):
        return {}, {}
    name = test.left.id
    present, absent = {name: env[name].value}, {name: V.Const(None)}
    is_not = isinstance(test.ops[0], ast.IsNot) != negated
    return (present, absent) if is_not else (absent, present)


def is_none_test(self, expr: ast.Compare, operands) -> V.EnvValue:
    """`v is None` / `v is not None` of a value that is None on some paths: its `present`."""
    value, other = operands if isinstance(operands[0], V.Maybe) else operands[::-1]
    if not (isinstance(other, V.Const) and other.value is None):
        raise self.error(expr, f"`{source_text(expr)}`: `is` between a value that is None on some paths and another value", "compare with None: `v is None`")
    present = self.builder.materialize(value.present)
    if isinstance(expr.ops[0], ast.IsNot):
        return present
    return self.builder.host_op("torch.aten.__not__", [present], V.BOOL, not present.example)


def _scalar_pair(self, left, right, node):
    """Both operands as IR scalars of one kind, as Python's numeric tower mixes them: a bool
    with an int is an int, anything with a float is a float."""
    for side in (left, right):
        refuse_truth_value(self, node, side)
        if not (isinstance(side, V.Dyn) or (isinstance(side, V.Const) and isinstance(side.value, (bool, int, float)))):
            raise self.error(node, f"`{source_text(node)}`: arithmetic on a {V.kind_of(side)} and runtime values")
    left, right = self._materialize(left, "operand"), self._materialize(right, "operand")
    for side in (left, right):
        if side.type not in (V.INT, V.FLOAT, V.BOOL):
            raise self.error(node, f"`{source_text(node)}`: arithmetic on {V.describe_type(side.type)}")
    if left.type == right.type:
        return left, right
    target = V.FLOAT if V.FLOAT in (left.type, right.type) else V.INT

    def convert(side):
        if side.type == V.BOOL:
            side = self.builder.host_op("torch.aten.Int.bool", [side], V.INT, int(side.example))
        if side.type == V.INT and target == V.FLOAT:
            side = self.builder.host_op("torch.aten.Float.Scalar", [side], V.FLOAT, float(side.example))
        return side

    return convert(left), convert(right)


def _host_binop(self, expr: ast.BinOp, env) -> V.EnvValue:
    left, right = self.expression(expr.left, env), self.expression(expr.right, env)
    if isinstance(expr.op, ast.Add) and (lists.is_list(left) or lists.is_list(right)):
        ops = lists.ListOps(self, expr, f"`{source_text(expr)}`")
        if not (lists.is_list(left) and lists.is_list(right)):
            raise self.error(expr, f"`{source_text(expr)}` adds a list and a {V.kind_of(right if lists.is_list(left) else left)}", "add lists to lists")
        return ops.concat(left, right)
    if isinstance(expr.op, ast.Mult) and (lists.is_list(left) or lists.is_list(right)):
        lst, count = (left, right) if lists.is_list(left) else (right, left)
        ops = lists.ListOps(self, expr, f"`{source_text(expr)}`")
        if not (isinstance(count, V.Const) and type(count.value) is int):
            raise self.error(expr, f"`{source_text(expr)}` repeats a list a number of times computed at runtime", "repeat it a constant number of times")
        items = lists.items_of(lst)
        if items is None:
            raise self.error(expr, f"`{source_text(expr)}` repeats a list whose length is only known at runtime", "build the list in a loop")
        return ops.rebuild(lst, list(items) * count.value)
    if _is_tensor(left) or _is_tensor(right):
        if host_numpy.is_numpy(left) or host_numpy.is_numpy(right):
            host_numpy.check_binary(self, expr, expr.op, left, right)
        return host_numpy.mark(_apply(self, expr, env, _known_values([expr.left, expr.right], [left, right])), [left, right])
    spec = X.BINARY_OPS.get(type(expr.op))
    if spec is None:
        raise self.error(expr, f"`{type(expr.op).__name__}` on runtime Python scalars")
    name, always_float = spec
    a, b = _scalar_pair(self, left, right, expr)
    if a.type == V.BOOL:
        a, b = (self.builder.host_op("torch.aten.Int.bool", [s], V.INT, int(s.example)) for s in (a, b))
    if always_float and a.type == V.INT:
        a, b = (self.builder.host_op("torch.aten.Float.Scalar", [s], V.FLOAT, float(s.example)) for s in (a, b))
    py = {ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y, ast.Mult: lambda x, y: x * y,
          ast.FloorDiv: lambda x, y: x // y, ast.Mod: lambda x, y: x % y, ast.Div: lambda x, y: x / y}[type(expr.op)]
    example = py(a.example, b.example)
    return self.builder.host_op(f"torch.aten.{name}.{V.scalar_name(a.type)}", [a, b], V.type_of_example(example), example)


def _host_unary(self, expr: ast.UnaryOp, env) -> V.EnvValue:
    operand = self.expression(expr.operand, env)
    if isinstance(expr.op, ast.Not):
        as_bool = _to_bool(self, operand, expr)
        if isinstance(as_bool, V.Const):
            return V.Const(not as_bool.value)
        return self.builder.host_op("torch.aten.__not__", [as_bool], V.BOOL, not as_bool.example)
    if _is_tensor(operand):
        return host_numpy.mark(_apply(self, expr, env, _known_values([expr.operand], [operand])), [operand])
    if isinstance(expr.op, ast.USub):
        value = self._materialize(operand, "operand")
        return self.builder.host_op(f"torch.aten.neg.{V.scalar_name(value.type)}", [value], value.type, -value.example)
    raise self.error(expr, f"`{type(expr.op).__name__}` on a runtime Python scalar")


def _to_bool(self, value: V.EnvValue, node) -> V.EnvValue:
    return host_builtins.truth(self, value, node)


def _host_boolop(self, expr: ast.BoolOp, env) -> V.EnvValue:
    """`a and b` / `a or b` as Python evaluates them: an operand is computed only when the
    ones before it do not decide (an `scf.if` when they decide at runtime), and the value is
    the operand that decided (a bool when all operands are bools)."""
    return _boolop(self, expr, list(expr.values), env, isinstance(expr.op, ast.And))


def _boolop(self, expr, values, env, is_and: bool) -> V.EnvValue:
    first = self.expression(values[0], env)
    if len(values) == 1:
        return first
    truth = host_builtins.truth(self, first, values[0])
    if isinstance(truth, V.Const):
        return _boolop(self, expr, values[1:], env, is_and) if truth.value == is_and else first
    if _is_bool(first) and all(_is_simple(v) for v in values[1:]):
        # the rest cannot fail or cost anything: computed eagerly, combined on the host
        rest = _boolop(self, expr, values[1:], env, is_and)
        if _is_bool(rest):
            rest = host_builtins.truth(self, rest, expr)
            if isinstance(rest, V.Const):
                return rest if rest.value != is_and else truth
            name = "__and__" if is_and else "__or__"
            example = (truth.example and rest.example) if is_and else (truth.example or rest.example)
            return self.builder.host_op(f"torch.aten.{name}.bool", [truth, rest], V.BOOL, example)

    def rest(scope):
        return _boolop(self, expr, values[1:], scope, is_and)

    def decided(scope):
        return first

    then_fn, else_fn = (rest, decided) if is_and else (decided, rest)
    return _conditional(self, expr, env, truth, then_fn, else_fn, truth_if_mixed=True)


def _is_bool(value) -> bool:
    return (isinstance(value, V.Const) and isinstance(value.value, bool)) or (isinstance(value, V.Dyn) and value.type == V.BOOL)


def _is_simple(node: ast.AST) -> bool:
    """Names, constants, comparisons and `not`/and/or of them: nothing that can raise."""
    return all(
        isinstance(n, (ast.Name, ast.Constant, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Load, ast.cmpop, ast.boolop, ast.Not))
        for n in ast.walk(node)
    )


def _host_subscript(self, expr: ast.Subscript, env) -> V.EnvValue:
    holder = self.expression(expr.value, env)
    if not (lists.is_list(holder) or isinstance(holder, V.Tup) or isinstance(holder, V.Const) and isinstance(holder.value, tuple)):
        return host_numpy.mark(_apply(self, expr, env, _known_values([expr.value], [holder])), [holder])
    key = lists.subscript_key(self, expr.slice, env)
    ops = lists.ListOps(self, expr, f"`{source_text(expr)}`")
    if isinstance(holder, V.Tup) and holder.kind != "list":  # a tuple: items known
        constant = lists.const_key(key)
        if constant is None:
            return _runtime_index_into_known(self, expr, env, holder, key)
        _, picked = ops.python(holder, lambda items: items[constant])
        return V.Tup(tuple(picked), holder.kind) if isinstance(constant, slice) else picked
    picked = ops.get(holder, key)
    if picked is not None:
        return picked
    if not (isinstance(holder, V.Dyn) and V.is_list_type(holder.type)):
        return _runtime_index_into_known(self, expr, env, holder, key)
    return _runtime_item(self, expr, holder, key)


def _runtime_index_into_known(self, expr: ast.Subscript, env, holder, key) -> V.EnvValue:
    """A list or tuple whose items are known here, read at a runtime index: on the host
    when the items are tensors, or Python scalars of one type (the host's `lst[k]` has
    Python's meaning: negative from the end, IndexError past it); else a run."""
    items = lists.items_of(holder)
    kinds = {lists.list_type_of_item(item) for item in items or ()}
    if len(kinds) != 1 or None in kinds:
        return _apply(self, expr, env, _known_values([expr.value], [holder]))
    return _runtime_item(self, expr, lists.static_list(self, items, kinds.pop()), key)


def _runtime_item(self, expr: ast.Subscript, holder: V.Dyn, key) -> V.EnvValue:
    """`holder[key]` with a runtime int `key`, read on the host."""
    index = self._materialize(key, "index")
    index = host_numpy.integer_item(self, index) or index  # (a numpy integer: through `__index__`)
    if index.type != V.INT:
        raise self.error(expr, f"indexing a list with {V.describe_type(index.type)}", "index it with an int")
    if not holder.example:
        raise RuntimeSize.of(self.error(
            expr, f"`{source_text(expr)}` of a list that is empty on the example path",
            "check DyCL's example inputs: the list must have items when the model is imported",
        ))
    example = lists.safe_item(holder.example, index.example)
    return self.builder.host_op(LIST_ITEM, [holder, index], lists.item_ir_type(holder), example)


def _host_attribute(self, expr: ast.Attribute, env) -> V.EnvValue:
    value = self.expression(expr.value, env)
    result = host_numpy.attribute(self, expr, value)
    if result is not None:
        return result
    return _apply(self, expr, env, _known_values([expr.value], [value]))


def host_tuple(self, expr, env) -> V.EnvValue:
    kind = "list" if isinstance(expr, ast.List) else "tuple"
    return V.Tup(tuple(self.expression(e, env) for e in expr.elts), kind)


def _host_ifexp(self, expr: ast.IfExp, env) -> V.EnvValue:
    """`a if cond else b`: a constant condition picks a branch; a runtime one becomes an
    `scf.if` whose regions compute only their own branch (as Python evaluates only one)."""
    test = host_builtins.truth(self, self.expression(expr.test, env), expr.test)
    if isinstance(test, V.Const):
        return self.expression(expr.body if test.value else expr.orelse, env)
    return _conditional(
        self, expr, env, test,
        lambda scope: self.expression(expr.body, scope),
        lambda scope: self.expression(expr.orelse, scope),
        refinements=none_test_branches(expr.test, env),
    )


def _conditional(self, expr, env, test: V.Dyn, then_fn, else_fn, truth_if_mixed: bool = False,
                 refinements: tuple[dict, dict] = ({}, {})) -> V.EnvValue:
    """The value `then_fn(scope)` or `else_fn(scope)` computes, chosen by the runtime bool
    `test`: an scf.if whose regions compute only their own branch, joined like an if.
    With truth_if_mixed (`a and b` of a bool and a tensor), values of different kinds are
    joined as their truth values: a `TruthValue`, which only a condition may use.
    `refinements` are what each branch knows of a value None on some paths (`is None`)."""
    flag = self.builder.to_i1(test)
    draft = ir.Operation.create("scf.if", results=[], operands=[flag], regions=2)
    blocks, values = [], []
    for region, branch, refined in zip(draft.regions, (then_fn, else_fn), refinements):
        block = region.blocks.append()
        before = {**env, **refined}
        scope = dict(before)
        with ir.InsertionPoint(block):
            values.append(branch(scope))
        changed = sorted(n for n in before if scope.get(n) is not before[n])
        if changed:
            draft.erase()
            raise self.error(
                expr, f"`{source_text(expr)}` changes `{changed[0]}` on one of its paths",
                "write it as an `if` statement",
            )
        blocks.append(block)
    then_value, else_value = values
    mixed = truth_if_mixed and V.kind_of(then_value, detailed=True) != V.kind_of(else_value, detailed=True)
    if mixed:
        for k, block in enumerate(blocks):
            with ir.InsertionPoint(block):
                values[k] = self._materialize(host_builtins.truth(self, values[k], expr), "truth value")
        then_value, else_value = values
    name = source_text(expr)
    saved, self._join_node = self._join_node, expr
    try:
        with ir.InsertionPoint(blocks[0]):
            then_leaves, structure = self._leaves_for_join(then_value, else_value, name)
        with ir.InsertionPoint(blocks[1]):
            else_leaves, _ = self._leaves_for_join(else_value, then_value, name)
        types = [self._join_type(a.type, b.type, name) for a, b in zip(then_leaves, else_leaves)]
    except FrontendError:
        draft.erase()
        raise
    finally:
        self._join_node = saved
    for block, leaves in zip(blocks, (then_leaves, else_leaves)):
        with ir.InsertionPoint(block):
            ir.Operation.create("scf.yield", operands=[self._cast(leaf, t).value for leaf, t in zip(leaves, types)])
    if_op = ir.Operation.create(
        "scf.if", results=[self.builder.type(t) for t in types], operands=[flag], regions=2, ip=ir.InsertionPoint(draft)
    )
    for old, new in zip(blocks, if_op.regions):
        new_block = new.blocks.append()
        for op in list(old.operations):
            new_block.append(op)
    draft.erase()
    taken = then_leaves if test.example else else_leaves  # the example path's values
    leaves = [V.Dyn(result, t, leaf.example) for result, t, leaf in zip(if_op.results, types, taken)]
    if mixed:
        (leaf,) = leaves
        return TruthValue(leaf.value, leaf.type, leaf.example, source=name)
    return V.rebuild(structure, leaves)


@dataclass(frozen=True)
class TruthValue(V.Dyn):
    """The truth of `a and b` / `a or b` whose operands are of different kinds (a bool and a
    tensor): exact as a condition; Python's value (one of the operands) has no one type here."""

    source: str = ""


def refuse_truth_value(self, node, value) -> None:
    for leaf in V.leaves(value) if isinstance(value, (V.Tup, V.Dyn)) else ():
        if isinstance(leaf, TruthValue):
            raise self.error(
                node, f"the value of `{leaf.source}` (one of its operands, a bool or a tensor depending on the path)",
                "use it only as a condition, or write `bool(a) and bool(b)`",
            )


HOST_EXPRESSIONS = {
    ast.Call: _host_call,
    ast.Compare: _host_compare,
    ast.BinOp: _host_binop,
    ast.UnaryOp: _host_unary,
    ast.BoolOp: _host_boolop,
    ast.Subscript: _host_subscript,
    ast.Tuple: host_tuple,
    ast.List: host_tuple,
    ast.IfExp: _host_ifexp,
    ast.Attribute: _host_attribute,
    ast.ListComp: host_builtins.host_list_comprehension,
    ast.GeneratorExp: host_builtins.host_generator,
    ast.SetComp: host_builtins.host_generator,
    ast.DictComp: host_builtins.host_generator,
}


def _apply(self, expr: ast.expr, env, known: dict | None = None) -> V.EnvValue:
    """Tensor math over sub-expressions that needed host handling: each operand slot (a
    direct child expression, a method call's receiver, a slice bound) is computed first (host
    ops or runs) and becomes an input of one run. `known` holds values already computed for
    some of these nodes, by id of the node (`_known_values`)."""
    known = known or {}
    children = list(_operand_slots(expr))
    local = {}
    replacements = {}
    for child in children:
        if not self._needs_host(child, env, set()):
            continue
        value = known.get(id(child))
        if value is None:
            value = self.expression(child, env)
        refuse_truth_value(self, child, value)
        name = f"{OPERAND_PREFIX}{fresh_id()}"
        local[name] = value
        replacements[id(child)] = name
    memo: dict = {}
    copied = copy.deepcopy(expr, memo)
    by_copy = {id(memo[key]): name for key, name in replacements.items()}
    rewritten = replace_nodes(copied, by_copy)
    scoped = {**env, **local}
    result = self.tensor_expression(ast.copy_location(rewritten, expr), scoped)
    for name in env:  # a run that mutates a tensor in place rebinds it (and its aliases)
        if scoped[name] is not env[name]:
            env[name] = scoped[name]
    return result


def _operand_slots(expr: ast.expr):
    """Sub-expressions that can be computed first and passed in: direct operands, the
    receiver of a method call (`t.argmax()` -> `t`), keyword values."""
    for child in ast.iter_child_nodes(expr):
        while isinstance(child, (ast.Attribute, ast.keyword, ast.Starred)):
            child = child.value
        if isinstance(child, ast.Slice):  # `x[:n]`: its bounds are the operands
            yield from (part for part in (child.lower, child.upper, child.step) if part is not None)
        elif isinstance(child, ast.expr):
            yield child


