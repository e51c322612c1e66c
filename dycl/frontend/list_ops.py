"""Reading, slicing and changing a list value with Python's semantics (`ListOps`).

On lists whose items are known here every operation is done on the item values with
Python's own list semantics (negative indices, clamped slices, IndexError). On runtime
lists, slices, `pop`, `del`, `insert`, `extend` and `+` are built from the list ops
(length, item, append) and host int ops in an `scf.while` that copies the kept items.
"""

from __future__ import annotations

import ast

from torch_mlir import ir

from xdsl.ir import Attribute
from dycl.frontend import values as V
from dycl.frontend.errors import FrontendError, RuntimeSize
from dycl.frontend.lists import (
    StaticList,
    as_runtime_list,
    check_item_kind,
    common_list_type,
    is_int,
    is_runtime_list,
    item_ir_type,
    items_of,
    safe_item,
)
from dycl.dialects.torch_ops import LIST_SET_ITEM, LIST_APPEND, LIST_CONSTRUCT, LIST_ITEM, LIST_LENGTH


def subscript_key(c, node: ast.expr, env):
    """The key of `x[node]`: an index value, or a `slice` of index values and None."""
    if isinstance(node, ast.Slice):
        parts = [None if part is None else c.expression(part, env) for part in (node.lower, node.upper, node.step)]
        return slice(*parts)
    return c.expression(node, env)


def const_key(key):
    """A list key (an index value, or a `slice` of index values/None) as the Python int or
    slice it is when every part is a constant; None when some part is known only at runtime."""
    if isinstance(key, slice):
        bounds = []
        for bound in (key.start, key.stop, key.step):
            if bound is None or (isinstance(bound, V.Const) and bound.value is None):
                bounds.append(None)
            elif isinstance(bound, V.Const) and is_int(bound.value):
                bounds.append(bound.value)
            else:
                return None
        return slice(*bounds)
    if isinstance(key, V.Const) and (is_int(key.value) or isinstance(key.value, slice)):
        return key.value
    return None


# ----- host ints (Python ints fold; V.Dyn ints become host ops) ------------------------


def example_or_value(x):
    return x.example if isinstance(x, V.Dyn) else x


def _binary(c, name: str, a, b, fold):
    if not isinstance(a, V.Dyn) and not isinstance(b, V.Dyn):
        return fold(a, b)
    operands = [c.builder.materialize(V.Const(x)) if not isinstance(x, V.Dyn) else x for x in (a, b)]
    example = fold(example_or_value(a), example_or_value(b))
    return c.builder.host_op(name, operands, V.type_of_example(example), example)


def _add(c, a, b):
    return _binary(c, "torch.aten.add.int", a, b, lambda x, y: x + y)


def _mul(c, a, b):
    return _binary(c, "torch.aten.mul.int", a, b, lambda x, y: x * y)


def _max(c, a, b):
    return _binary(c, "torch.prim.max.int", a, b, max)


def _min(c, a, b):
    return _binary(c, "torch.prim.min.int", a, b, min)


def _is_negative(c, a):
    """int(a < 0) as a host int."""
    if not isinstance(a, V.Dyn):
        return int(a < 0)
    less = c.builder.host_op("torch.aten.lt.int", [a, c.builder.constant(0)], V.BOOL, a.example < 0)
    return c.builder.host_op("torch.aten.Int.bool", [less], V.INT, int(less.example))


def length(c, lst):
    """len(lst): a Python int for lists whose items are known, else a host op."""
    items = items_of(lst)
    if items is not None:
        return len(items)
    return c.builder.host_op(LIST_LENGTH, [lst], V.INT, len(lst.example))


def _wrapped(c, k, n):
    """k + n if k < 0 else k (no clamping)."""
    if not isinstance(k, V.Dyn):
        return _add(c, k, n) if k < 0 else k
    return _add(c, k, _mul(c, _is_negative(c, k), n))


def _clamped(c, k, n):
    """A slice bound as Python normalizes it: wrapped, then clamped to [0, n]."""
    return _min(c, _max(c, _wrapped(c, k, n), 0), n)


# ----- runtime lists ------------------------------------------------------------------


def _append_items(c, dest: V.Dyn, items) -> V.Dyn:
    for item in items:
        item = c.builder.materialize(item)
        op = c.builder.op(LIST_APPEND, [dest.value, item.value], [dest.type])
        dest = V.Dyn(op.result, dest.type, dest.example + [item.example])
    return dest


def _copy_range(c, src: V.Dyn, start, stop, dest: V.Dyn) -> V.Dyn:
    """dest + src[start:stop] for bounds already in [0, len(src)] (an `scf.while` on host ops)."""
    items = items_of(src)
    if items is not None and not isinstance(start, V.Dyn) and not isinstance(stop, V.Dyn):
        return _append_items(c, dest, items[start:stop])
    builder = c.builder
    start_value = builder.materialize(V.Const(start)) if not isinstance(start, V.Dyn) else start
    stop_value = builder.materialize(V.Const(stop)) if not isinstance(stop, V.Dyn) else stop
    example = dest.example + src.example[example_or_value(start):example_or_value(stop)]
    read_type = item_ir_type(src)
    int_type, list_type = builder.type(V.INT), builder.type(dest.type)
    op = ir.Operation.create(
        "scf.while", results=[int_type, list_type], operands=[start_value.value, dest.value], regions=2
    )
    before = op.regions[0].blocks.append(int_type, list_type)
    with ir.InsertionPoint(before):
        index = V.Dyn(before.arguments[0], V.INT, example_or_value(start))
        more = builder.host_op("torch.aten.lt.int", [index, stop_value], V.BOOL, True)
        ir.Operation.create("scf.condition", operands=[builder.to_i1(more), *before.arguments])
    after = op.regions[1].blocks.append(int_type, list_type)
    with ir.InsertionPoint(after):
        index = V.Dyn(after.arguments[0], V.INT, example_or_value(start))
        item_example = src.example[0] if src.example else None
        item = builder.host_op(LIST_ITEM, [src, index], read_type, item_example)
        grown = builder.op(LIST_APPEND, [after.arguments[1], item.value], [dest.type])
        following = builder.host_op("torch.aten.add.int", [index, builder.constant(1)], V.INT, example_or_value(start) + 1)
        ir.Operation.create("scf.yield", operands=[following.value, grown.result])
    return V.Dyn(op.results[1], dest.type, example)


def empty_runtime_list(c, list_type: str) -> V.Dyn:
    return V.Dyn(c.builder.op(LIST_CONSTRUCT, [], [list_type]).result, list_type, [])


def _runtime_pieces(c, pieces) -> V.Dyn:
    """A runtime list made of `pieces`: (list, start, stop) ranges and [items] in order (at
    least one range: the new list has its type)."""
    out = empty_runtime_list(c, next(piece[0].type for piece in pieces if isinstance(piece, tuple)))
    for piece in pieces:
        if isinstance(piece, list):
            out = _append_items(c, out, piece)
        else:
            source, start, stop = piece
            out = _copy_range(c, source, start, stop, out)
    return out


# ----- operations -------------------------------------------------------------------------


class ListOps:
    """The list operations of one statement; `c` is the FunctionCompiler, `node` the AST node
    errors are located at, `what` the operation as the user wrote it. A key is an index value
    or a Python `slice` of index values (V.Const/V.Dyn) and None."""

    def __init__(self, c, node: ast.AST, what: str):
        self.c = c
        self.node = node
        self.what = what

    def error(self, construct: str, hint: str = "") -> FrontendError:
        return self.c.error(self.node, construct, hint)

    def python(self, lst, change):
        """Run `change` on a Python list of the items (known here): Python's own semantics."""
        items = list(items_of(lst))
        try:
            result = change(items)
        except IndexError as error:
            raise self.error(
                f"{self.what}: IndexError: {error}",
                "the list is shorter than that on this path (check the index or the example inputs)",
            ) from None
        except (TypeError, ValueError) as error:
            raise self.error(f"{self.what}: {type(error).__name__}: {error}") from None
        return items, result

    def rebuild(self, like, items):
        """A list of the kind `like` is, holding `items` (a new list value): a fixed
        structure stays one, a list of tensors stays a list of tensors."""
        if isinstance(like, V.Const) and all(isinstance(i, V.Const) for i in items):
            return V.Const([i.value for i in items])
        if isinstance(like, V.Tup):
            return V.Tup(tuple(items), "list")
        self.check_items(like, items)
        return self.c._list_value(V.Tup(tuple(items), "list"))

    def check_items(self, lst, items):
        """A list whose length is only known at runtime holds one kind of item, tensors or
        Python scalars of one type (a list whose items are known becomes a fixed structure
        when another kind of value joins them)."""
        if isinstance(lst, V.Dyn) and not isinstance(lst, StaticList):
            for item in items:
                check_item_kind(self.c, lst, item, self.node, self.what)

    # reads

    def get(self, lst, key):
        """lst[key]; None for an int index the caller reads with LIST_ITEM."""
        items, constant = items_of(lst), const_key(key)
        if items is not None and constant is not None:
            if isinstance(lst, V.Const):
                _, picked = self.python(lst, lambda values: lst.value[constant])
                return V.Const(picked)
            _, picked = self.python(lst, lambda values: values[constant])
            return self.rebuild(lst, picked) if isinstance(constant, slice) else picked
        if isinstance(key, slice):
            return self.runtime_slice(self.runtime(lst), key)
        return None

    def runtime_slice(self, lst: V.Dyn, key: slice) -> V.Dyn:
        self.unit_step(key)
        n = length(self.c, lst)
        start = self.bound(key.start, 0, n)
        stop = _max(self.c, start, self.bound(key.stop, n, n))
        return _copy_range(self.c, lst, start, stop, empty_runtime_list(self.c, lst.type))

    def unit_step(self, key: slice) -> None:
        step = key.step.value if isinstance(key.step, V.Const) else key.step
        if step not in (None, 1):
            raise self.error(
                f"{self.what}: a slice step on a list whose length or bounds are only known at runtime",
                "stack it first and slice the tensor (`torch.stack(lst)[::2]`), "
                "or build the list you need in the loop that fills it",
            )

    def bound(self, bound, default, n):
        if bound is None or (isinstance(bound, V.Const) and bound.value is None):
            return default
        return _clamped(self.c, self.int(bound), n)

    # changes: each returns the new list value

    def pop(self, lst, key):
        """(new list, popped item); key None is the last item."""
        constant = -1 if key is None else const_key(key)
        if items_of(lst) is not None and is_int(constant):
            items, popped = self.python(lst, lambda values: values.pop(constant))
            return self.rebuild(lst, items), popped
        lst = self.runtime(lst)
        k = -1 if key is None else self.int(key)
        if not lst.example:
            raise RuntimeSize.of(self.error(
                f"{self.what} of a list that is empty on the example path",
                "check DyCL's example inputs: the list must have items when the model is imported",
            ))
        read = self.read(lst, k)
        return self.without(lst, k, read), read[1]

    def position(self, k) -> V.Dyn:
        """A list position (an int, or a runtime int) as an IR value."""
        return k if isinstance(k, V.Dyn) else self.c.builder.materialize(V.Const(k))

    def read(self, lst: V.Dyn, k) -> tuple[V.Dyn, V.Dyn]:
        """(the position as an IR value, the item there) of the runtime list `lst`: the
        host's `lst[k]`, IndexError past either end."""
        index = self.position(k)
        return index, self.c.builder.host_op(LIST_ITEM, [lst, index], item_ir_type(lst), safe_item(lst.example, example_or_value(k)))

    def delete(self, lst, key):
        constant = const_key(key)
        if items_of(lst) is not None and constant is not None:
            def change(values):
                del values[constant]
            items, _ = self.python(lst, change)
            return self.rebuild(lst, items)
        lst = self.runtime(lst)
        if isinstance(key, slice):
            self.unit_step(key)
            n = length(self.c, lst)
            start = self.bound(key.start, 0, n)
            stop = _max(self.c, start, self.bound(key.stop, n, n))
            return _runtime_pieces(self.c, [(lst, 0, start), (lst, stop, n)])
        return self.without(lst, self.int(key))

    def set_item(self, lst, key, item):
        constant = const_key(key)
        if isinstance(constant, slice) or isinstance(key, slice):
            raise self.error(f"{self.what}: a store into a slice of a list", "build the new list with `+` and slices")
        if items_of(lst) is not None and constant is not None:
            def change(values):
                values[constant] = item

            items, _ = self.python(lst, change)
            return self.rebuild(lst, items)
        # a position or a list known only at runtime: the host stores (Python's index rules)
        lst = lst if is_runtime_list(lst) else as_runtime_list(self.c, lst, self._list_type(lst))
        self.check_items(lst, [item])
        index = self.position(self.int(key))
        item = self.c._materialize(item, "list item")
        example = list(lst.example)
        if -len(example) <= index.example < len(example):  # (past the end, the host raises)
            example[index.example] = item.example
        return self.c.builder.host_op(LIST_SET_ITEM, [lst, index, item], lst.type, example)

    def _list_type(self, lst) -> Attribute:
        list_type = common_list_type(lst)
        if list_type is None:
            raise self.error(f"{self.what}: a position computed at runtime in a list of mixed values", "keep one kind of item in the list")
        return list_type

    def insert(self, lst, key, item):
        constant = const_key(key)
        if items_of(lst) is not None and is_int(constant):
            items, _ = self.python(lst, lambda values: values.insert(constant, item))
            return self.rebuild(lst, items)
        lst = self.runtime(lst)
        self.check_items(lst, [item])
        n = length(self.c, lst)
        at = _clamped(self.c, self.int(key), n)
        return _runtime_pieces(self.c, [(lst, 0, at), [item], (lst, at, n)])

    def concat(self, left, right):
        """left + right, both lists (the result is a new list)."""
        left_items, right_items = items_of(left), items_of(right)
        if left_items is not None and right_items is not None:
            like = left if isinstance(left, V.Dyn) or not isinstance(right, V.Dyn) else right
            if isinstance(left, V.Const) and isinstance(right, V.Const):
                return V.Const(list(left.value) + list(right.value))
            return self.rebuild(like, left_items + right_items)
        runtime = left if items_of(left) is None else right
        pieces = []
        for side, items in ((left, left_items), (right, right_items)):
            if items is None:
                pieces.append((self.runtime(side), 0, length(self.c, side)))
            else:
                self.check_items(runtime, items)
                pieces.append([self.c._materialize(i, "list item") for i in items])
        if isinstance(pieces[0], tuple):  # grow the left list's value
            first, rest = pieces[0][0], pieces[1]
            if isinstance(rest, list):
                return _append_items(self.c, first, rest)
            return _copy_range(self.c, rest[0], rest[1], rest[2], first)
        return _runtime_pieces(self.c, pieces)

    def clear(self, lst):
        if isinstance(lst, V.Const):
            return V.Const([])
        return self.c._list_value(V.Tup((), "list"))

    # helpers

    def runtime(self, lst) -> V.Dyn:
        if isinstance(lst, V.Dyn) and V.is_list_type(lst.type):
            return lst
        raise self.error(
            f"{self.what}: a position computed at runtime in a list of Python values",
            "use a constant position, or keep only tensors in the list",
        )

    def int(self, value):
        if isinstance(value, V.Const) and is_int(value.value):
            return value.value
        if isinstance(value, V.Dyn) and value.type == V.INT:
            return value
        if is_int(value):
            return value
        raise self.error(f"{self.what}: a list position that is not an int", "index lists with ints")

    def without(self, lst: V.Dyn, k, read: tuple[V.Dyn, V.Dyn] | None = None) -> V.Dyn:
        """lst without its item at position k (k < 0 counts from the end); IndexError past
        either end, as `del lst[k]` and `lst.pop(k)` raise it. `read`: `self.read(lst, k)`
        when the caller has it (`pop` returns the item)."""
        index, item = read or self.read(lst, k)
        # the same list, read through a store of its own item at k: the check stays in the
        # program because the new list is built from it
        lst = self.c.builder.host_op(LIST_SET_ITEM, [lst, index, item], lst.type, list(lst.example))
        n = length(self.c, lst)
        at = _min(self.c, _max(self.c, _wrapped(self.c, k, n), 0), n)
        after = _min(self.c, _add(self.c, at, 1), n)
        return _runtime_pieces(self.c, [(lst, 0, at), (lst, after, n)])
