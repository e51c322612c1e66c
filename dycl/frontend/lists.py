"""Python lists in forward: reading, slicing and changing them, with Python's semantics.

A list variable holds one of:
- `V.Const(list)`: every item known when importing (`[1, 2]`, `self.sizes`);
- `V.Tup(items, "list")`: a fixed structure mixing tensors and Python values (`[logits, 3]`);
- `StaticList`: a runtime list of tensors (an IR `!torch.list<vtensor>`) whose items are known
  here because it was built in straight-line code (`outs = []` + appends in unrolled loops):
  its length is a constant and its items are the IR values that were put in;
- a plain `V.Dyn` of type `TENSOR_LIST`: a list whose length is only known at runtime (it
  grew under a runtime condition or in a runtime loop).

Lists are values in the IR (appending returns a new list), so a change to a list is a new
value bound to every variable that refers to the same list (`b = a; a.pop()` changes `b`
too); a list that is module state (`self.sizes.append(...)`) is refused. On the first three
kinds every operation is done here on the item values with Python's own list semantics
(negative indices, clamped slices, IndexError). On runtime lists, slices, `pop`, `del`,
`insert`, `extend` and `+` are built from the list ops (length, item, append) and host int
ops in an `scf.while` that copies the kept items.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

import torch
from torch_mlir import ir

from xdsl.ir import Attribute
from dycl.frontend import values as V
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import FrontendError, RuntimeSize
from dycl.dialects.torch_ops import LIST_SET_ITEM, LIST_APPEND, LIST_CONSTRUCT, LIST_ITEM, LIST_LENGTH


@dataclass(frozen=True)
class StaticList(V.Dyn):
    """A runtime list value whose items (IR values) are known: built in straight-line code."""

    items: tuple = ()


@dataclass(frozen=True)
class KnownLengths(V.Dyn):
    """A runtime list whose length is one of a few values known here: the join of lists
    built in straight-line code on each path (an unrolled loop that may `break`)."""

    lengths: frozenset = frozenset()


MAX_LENGTH_CASES = 8  # the most lengths a statement is compiled for (one branch each)


def possible_lengths(value) -> frozenset | None:
    """The lengths the list `value` may have here (None: not known)."""
    if isinstance(value, KnownLengths):
        return value.lengths
    if is_runtime_list(value):
        return None
    items = items_of(value) if is_list(value) else None
    return None if items is None else frozenset({len(items)})


def with_known_lengths(value, *sources):
    """`value` (a runtime list joined from `sources`) marked with their possible lengths."""
    lengths = [possible_lengths(source) for source in sources]
    if not is_runtime_list(value) or any(l is None for l in lengths):
        return value
    union = frozenset().union(*lengths)
    if len(union) > MAX_LENGTH_CASES:
        return value
    return KnownLengths(value.value, value.type, value.example, value.may_share, union)


def fixed_length(c, value, length: int) -> StaticList:
    """The runtime list `value`, on a path where its length is `length`: its items read."""
    index = [c.builder.materialize(V.Const(k)) for k in range(length)]
    items = [c.builder.host_op(LIST_ITEM, [value, i], item_ir_type(value), safe_item(value.example, k)) for k, i in enumerate(index)]
    # a new list value: after the branches join, the list is one of several lengths again
    return static_list(c, items, value.type)


def static_list(c, items, list_type: Attribute = V.TENSOR_LIST) -> StaticList:
    items = tuple(c.builder.materialize(i) for i in items)
    op = c.builder.op(LIST_CONSTRUCT, [i.value for i in items], [list_type])
    return StaticList(op.result, list_type, [i.example for i in items], items=items)


def is_runtime_list(value) -> bool:
    return isinstance(value, V.Dyn) and V.is_list_type(value.type) and not isinstance(value, StaticList)


def is_list(value) -> bool:
    return (
        (isinstance(value, V.Const) and isinstance(value.value, list))
        or (isinstance(value, V.Tup) and value.kind == "list")
        or (isinstance(value, V.Dyn) and V.is_list_type(value.type))
    )


# ----- the kind of item a runtime list holds ----------------------------------------------


class ListKindMismatch(FrontendError):
    """An item of another kind than the runtime list `holder` holds. A loop whose carried
    list started empty catches it and carries a list of the item's kind instead."""

    def __init__(self, error: FrontendError, holder: V.Dyn, list_type: Attribute):
        super().__init__(error.construct, error.hint, file=error.file, line=error.line)
        self.holder = holder
        self.list_type = list_type


def list_type_of_item(item) -> Attribute | None:
    """The runtime list type that can hold `item`: tensors, or Python scalars of one type."""
    if isinstance(item, V.Dyn) and V.is_tensor_type(item.type):
        return V.TENSOR_LIST
    if isinstance(item, V.Dyn):
        return V.SCALAR_LISTS.get(item.type)
    if isinstance(item, V.Const) and isinstance(item.value, (bool, int, float)):
        return V.SCALAR_LISTS[V.type_of_example(item.value)]
    return None


def common_list_type(*values) -> Attribute | None:
    """The one runtime list type all these list values fit (a runtime list keeps its own
    type; a list whose items are known here fits the type of its items, any type when it is
    empty); None when they do not fit one."""
    types = set()
    for value in values:
        if value is V.UNDEF:
            continue
        if isinstance(value, V.Dyn) and V.is_list_type(value.type) and not isinstance(value, StaticList):
            types.add(value.type)
            continue
        items = items_of(value) if is_list(value) else None
        if items is None:
            return None
        kinds = {list_type_of_item(i) for i in items}
        if None in kinds:
            return None
        types |= kinds
    if len(types) > 1:
        return None
    return types.pop() if types else V.TENSOR_LIST


def fits(value, list_type: Attribute) -> bool:
    """Whether the list `value` can be an IR list of `list_type`: a runtime list of that
    type, or items known here that all fit it (no items fit any type)."""
    if not is_list(value):
        return False
    if is_runtime_list(value):
        return value.type == list_type
    return all(list_type_of_item(i) == list_type for i in items_of(value))


def joined_list_type(a, b) -> Attribute | None:
    """The runtime list type that two list values are joined as when their lengths (or
    kinds of item) differ; None when they are not two such lists."""
    if is_list(a) and is_list(b) and differ(a, b):
        return common_list_type(a, b)
    return None


def differ(a, b) -> bool:
    """Whether two list values need one runtime list type to be joined (rather than a
    join of their items, or of two runtime lists of one type)."""
    if isinstance(a, V.Dyn) and isinstance(b, V.Dyn):
        return a.type != b.type
    return not (isinstance(a, V.Tup) and isinstance(b, V.Tup) and V.same_structure(a, b))


def as_runtime_list(c, value, list_type: Attribute) -> V.Dyn:
    """`value` (a list) as an IR list of `list_type`: its items, known here, in a new list."""
    if isinstance(value, V.Dyn) and not isinstance(value, StaticList):
        return value
    if isinstance(value, StaticList) and value.type == list_type:
        return value
    return static_list(c, items_of(value) or (), list_type)


def item_ir_type(lst: V.Dyn) -> Attribute:
    """The type of an item read from the runtime list `lst`."""
    return V.list_item_scalar(lst.type) or item_type(lst.example)


def items_of(value) -> tuple | None:
    """The items of a list/tuple value known here (None for a runtime list or a non-sequence)."""
    if isinstance(value, StaticList):
        return value.items
    if isinstance(value, V.Tup):
        return value.items
    if isinstance(value, V.Const) and isinstance(value.value, (list, tuple)):
        return tuple(V.Const(v) for v in value.value)
    return None


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


def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# ----- host ints (Python ints fold; V.Dyn ints become host ops) ------------------------


def _example(x):
    return x.example if isinstance(x, V.Dyn) else x


def _binary(c, name: str, a, b, fold):
    if not isinstance(a, V.Dyn) and not isinstance(b, V.Dyn):
        return fold(a, b)
    operands = [c.builder.materialize(V.Const(x)) if not isinstance(x, V.Dyn) else x for x in (a, b)]
    example = fold(_example(a), _example(b))
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


def item_type(examples) -> Attribute:
    types = [V.type_of_example(e) for e in examples if isinstance(e, torch.Tensor)]
    if not types:
        return V.tensor_type(None, torch.float32)
    joined = types[0]
    for t in types[1:]:
        try:
            joined = V.join_types(joined, t)
        except FrontendError:
            return types[0]
    return joined


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
    example = dest.example + src.example[_example(start):_example(stop)]
    read_type = item_ir_type(src)
    int_type, list_type = builder.type(V.INT), builder.type(dest.type)
    op = ir.Operation.create(
        "scf.while", results=[int_type, list_type], operands=[start_value.value, dest.value], regions=2
    )
    before = op.regions[0].blocks.append(int_type, list_type)
    with ir.InsertionPoint(before):
        index = V.Dyn(before.arguments[0], V.INT, _example(start))
        more = builder.host_op("torch.aten.lt.int", [index, stop_value], V.BOOL, True)
        ir.Operation.create("scf.condition", operands=[builder.to_i1(more), *before.arguments])
    after = op.regions[1].blocks.append(int_type, list_type)
    with ir.InsertionPoint(after):
        index = V.Dyn(after.arguments[0], V.INT, _example(start))
        item_example = src.example[0] if src.example else None
        item = builder.host_op(LIST_ITEM, [src, index], read_type, item_example)
        grown = builder.op(LIST_APPEND, [after.arguments[1], item.value], [dest.type])
        following = builder.host_op("torch.aten.add.int", [index, builder.constant(1)], V.INT, _example(start) + 1)
        ir.Operation.create("scf.yield", operands=[following.value, grown.result])
    return V.Dyn(op.results[1], dest.type, example)


def _empty(c, list_type: str) -> V.Dyn:
    return V.Dyn(c.builder.op(LIST_CONSTRUCT, [], [list_type]).result, list_type, [])


def _runtime_pieces(c, pieces) -> V.Dyn:
    """A runtime list made of `pieces`: (list, start, stop) ranges and [items] in order (at
    least one range: the new list has its type)."""
    out = _empty(c, next(piece[0].type for piece in pieces if isinstance(piece, tuple)))
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
        return _copy_range(self.c, lst, start, stop, _empty(self.c, lst.type))

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
        return index, self.c.builder.host_op(LIST_ITEM, [lst, index], item_ir_type(lst), safe_item(lst.example, _example(k)))

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


def _any_dyn(*values):
    for value in values:
        if isinstance(value, V.Dyn):
            return value
    return values[0]


def check_item_kind(c, lst: V.Dyn, item, node, what: str) -> None:
    """Refuses (`ListKindMismatch`) an item of another kind than the runtime list holds."""
    if list_type_of_item(item) == lst.type:
        return
    if isinstance(item, V.Dyn):
        kind = V.describe_type(item.type)
    elif isinstance(item, V.Const) and isinstance(item.value, (bool, int, float)):
        kind = V.describe_type(V.type_of_example(item.value))
    else:
        kind = f"a {V.kind_of(item)}"
    error = c.error(
        node, f"{what}: putting {kind} into {V.describe_type(lst.type)} whose length is known only at runtime",
        "keep one kind of item in such a list: tensors, or Python ints, floats or bools of one type "
        "(append `torch.tensor(v)` and read `int(lst[i])` to mix them)",
    )
    raise ListKindMismatch(error, lst, list_type_of_item(item))


def safe_item(examples: list, k):
    try:
        return examples[k]
    except (IndexError, TypeError):
        return examples[0] if examples else None


# ----- aliasing: every variable bound to the changed list sees the change ---------------


def rebind(c, env: dict, name: str | None, old, new, node, what: str) -> None:
    """`name` (and every variable or tuple holding the same list) now holds `new`; `name`
    None: a list held only as an item of others (`rows[0].append(x)`)."""
    if isinstance(old, V.Const):
        owner = module_state_owner(c, old.value)
        if owner is not None:
            kind = type(old.value).__name__
            raise c.error(
                node,
                f"{what} changes `{owner}`, a {kind} that is module state",
                f"module state must not change in forward: copy it first (`{name or 'items'} = {kind}({owner})`)",
            )
        holder = _dict_holding(env, old.value)
        if holder is not None:
            raise c.error(
                node,
                f"{what} changes a list that the dict `{holder}` holds",
                "keep the list in a variable of its own and build the dict from it where it is complete",
            )
    if isinstance(old, V.Dyn) and _SHARED_ON_SOME_PATHS in old.may_share:
        raise c.error(
            node,
            f"{what} changes a list that another variable holds on some paths only (an `if` "
            "or a loop bound one of them to another list on one path)",
            f"copy the list where the two should differ (`{name} = list(...)`), so that each "
            "name holds its own list on every path",
        )
    replace_everywhere(env, old, new)
    if name is not None:
        env[name] = new


def _dict_holding(env: dict, obj: list) -> str | None:
    """The variable holding a dict (directly or in a list or tuple) with `obj` among its values:
    dicts are constants here, so a change to that list could not reach them."""
    def holds(container, depth: int = 0) -> bool:
        if depth > 8:
            return False
        items = container.values() if isinstance(container, dict) else container
        return any(
            (isinstance(container, dict) and item is obj)
            or (isinstance(item, (dict, list, tuple)) and holds(item, depth + 1))
            for item in items
        )

    for key, value in env.items():
        if isinstance(value, V.Const) and isinstance(value.value, (dict, list, tuple)) and holds(value.value):
            return key
    return None


def bound_list(c, value, env: dict):
    """A list display bound to a name becomes its list value (`c._list_value`); a list that
    another variable already holds (`b = a`) is converted for both: they stay one list."""
    if isinstance(value, V.Tup) and value.kind == "list":
        converted = c._list_value(value)
        if converted is not value:
            replace_everywhere(env, value, converted)
        return converted
    return value


def replace_everywhere(env: dict, old, new) -> None:
    """Every variable (or tuple item) bound to the list `old` is bound to `new`."""
    for key, value in list(env.items()):
        replaced = _replace(value, old, new)
        if replaced is not value:
            env[key] = replaced


def sharing(env: dict, leaders: list[str]) -> dict[str, str]:
    """follower -> leader: the names bound to the very list a leader is bound to (the first
    leader in order leads; a leader bound to an earlier leader's list follows it)."""
    followers: dict[str, str] = {}
    for leader in leaders:
        value = env.get(leader)
        if leader in followers or not is_list(value):
            continue
        for name, other in env.items():
            if name != leader and name not in followers and other is not V.UNDEF and _same_list(other, value):
                followers[name] = leader
    return followers


Place = tuple[str, tuple[int, ...]]
"""A variable and the item path inside its value (`pair[0]`: ("pair", (0,)))."""


def shared_places(env: dict, names: list[str]) -> list[list[Place]]:
    """The places of these variables' values that hold one list, for each list held in more
    than one place of which one is an item (`pair = (acc, x)`: `acc` and `pair[0]`); lists
    bound only to names are `sharing`'s."""
    held: dict[int, list[Place]] = {}

    def walk(value, name: str, path: tuple[int, ...]) -> None:
        if len(path) > 8:
            return
        if is_list(value):
            held.setdefault(_list_identity(value), []).append((name, path))
        items = value.items if isinstance(value, V.Tup) else value.value if (
            isinstance(value, V.Const) and isinstance(value.value, (list, tuple))) else ()
        for k, item in enumerate(items):
            walk(item if isinstance(value, V.Tup) else V.Const(item), name, path + (k,))

    for name in names:
        if env.get(name, V.UNDEF) is not V.UNDEF:
            walk(env[name], name, ())
    return [places for places in held.values() if len(places) > 1 and any(path for _, path in places)]


def value_at(env: dict, place: Place):
    name, path = place
    value = env.get(name, V.UNDEF)
    for k in path:
        if isinstance(value, V.Tup) and k < len(value.items):
            value = value.items[k]
        elif isinstance(value, V.Const) and isinstance(value.value, (list, tuple)) and k < len(value.value):
            value = V.Const(value.value[k])
        else:
            return V.UNDEF
    return value


def with_value_at(value, path: tuple[int, ...], new):
    """`value` with the item at `path` replaced by `new` (a new value where it changes)."""
    if not path:
        return new
    if isinstance(value, V.Const) and isinstance(value.value, (list, tuple)):
        value = V.Tup(tuple(V.Const(v) for v in value.value), "list" if isinstance(value.value, list) else "tuple")
    k, rest = path[0], path[1:]
    items = list(value.items)
    items[k] = with_value_at(items[k], rest, new)
    return V.Tup(tuple(items), value.kind)


def _list_identity(value) -> int:
    return id(value.value) if isinstance(value, V.Const) else id(value)


def same_list(a, b) -> bool:
    """Whether two values are one Python list (bound to both names)."""
    return a is not None and is_list(a) and _same_list(a, b)


def path_dependent(value):
    """A list value that shares its list with another name on some paths only: changing it
    is refused (`rebind`)."""
    if isinstance(value, V.Dyn) and V.is_list_type(value.type):
        return V.Dyn(value.value, value.type, value.example, value.may_share | {_SHARED_ON_SOME_PATHS})
    return value


_SHARED_ON_SOME_PATHS = -1  # (in `Dyn.may_share`, which otherwise holds tensor storages)


def _same_list(value, old) -> bool:
    if value is old:
        return True
    return (
        isinstance(value, V.Const) and isinstance(old, V.Const)
        and isinstance(old.value, (list, dict)) and value.value is old.value
    )


def _replace(value, old, new):
    if _same_list(value, old):
        return new
    if isinstance(value, V.Tup):
        items = tuple(_replace(i, old, new) for i in value.items)
        if any(a is not b for a, b in zip(items, value.items)):
            return V.Tup(items, value.kind)
        return value
    if isinstance(value, V.Const) and isinstance(old, V.Const) and isinstance(value.value, (tuple, list)):
        if _contains(value.value, old.value):
            as_tup = V.Tup(tuple(_replace(V.Const(v), old, new) for v in value.value), "list" if isinstance(value.value, list) else "tuple")
            if all(isinstance(i, V.Const) for i in as_tup.items):
                items = [i.value for i in as_tup.items]
                return V.Const(items if isinstance(value.value, list) else tuple(items))
            return as_tup
    return value


def _contains(container, obj, depth: int = 0) -> bool:
    if depth > 8:
        return False
    for item in container:
        if item is obj or (isinstance(item, (list, tuple)) and _contains(item, obj, depth + 1)):
            return True
    return False


def module_state_owner(c, obj) -> str | None:
    """`self.<name>` (or a global's name) when `obj` is held by the model or the module namespace."""
    if not isinstance(obj, (list, dict)):
        return None
    for prefix, module in c.model.named_modules():
        for attr, value in vars(module).items():
            if value is obj or (isinstance(value, (list, tuple)) and _contains(value, obj)) or (
                isinstance(value, dict) and any(v is obj for v in value.values())
            ):
                return "self." + (f"{prefix}.{attr}" if prefix else attr)
    for global_name, value in c.scope.namespace.items():
        if value is obj:
            return global_name
    return None


# ----- statements: `lst.pop()`, `lst.insert(0, m)`, `del lst[k]`, `del name` -----------

LIST_METHODS = ("append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse")
# Methods that change other Python containers in place (refused: no value semantics here).
CONTAINER_MUTATORS = {
    dict: ("pop", "popitem", "clear", "update", "setdefault"),
    set: ("add", "discard", "remove", "pop", "clear", "update"),
}
CONTAINER_METHOD_NAMES = frozenset(LIST_METHODS).union(*CONTAINER_MUTATORS.values())
"""Every method name that changes a list, dict or set in place."""


def subscript_key(c, node: ast.expr, env):
    """The key of `x[node]`: an index value, or a `slice` of index values and None."""
    if isinstance(node, ast.Slice):
        parts = [None if part is None else c.expression(part, env) for part in (node.lower, node.upper, node.step)]
        return slice(*parts)
    return c.expression(node, env)


def mutate(c, call: ast.Call, env: dict) -> None:
    """A bare `name.method(...)` statement on a Python list, or on an item of a list known
    here (`rows[0].append(x)`) (or a refused container change)."""
    receiver, method = call.func.value, call.func.attr
    name = receiver.id if isinstance(receiver, ast.Name) else None
    holder = c.receiver_value(receiver, env)
    what = f"`{source_text(call)}`"
    ops = ListOps(c, call, what)
    if isinstance(holder, V.Const) and not isinstance(holder.value, list):
        kind = type(holder.value).__name__
        raise c.error(
            call, f"{what} changes a {kind} in forward",
            f"build a new {kind} instead (e.g. with a comprehension) and bind it to `{source_text(receiver)}`",
        )
    if method in ("sort", "reverse"):
        name = source_text(receiver)
        rewrite = f"{name} = sorted({name})" if method == "sort" else f"{name} = {name}[::-1]"
        raise c.error(call, f"{what} (reorders a list in place)", f"build the list in the order you need, or write `{rewrite}` on a list of Python values")
    if call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        raise c.error(call, f"{what} with keyword or starred arguments", "pass the arguments by position")
    arity = {"append": (1, 1), "extend": (1, 1), "insert": (2, 2), "pop": (0, 1), "remove": (1, 1), "clear": (0, 0)}[method]
    if not arity[0] <= len(call.args) <= arity[1]:
        raise c.error(call, f"{what}: wrong number of arguments for list.{method}")
    args = [c.expression(a, env) for a in call.args]
    if method == "append":
        new = append(c, holder, args[0], call)
    elif method == "pop":
        new, _ = ops.pop(holder, args[0] if args else None)
    elif method == "insert":
        new = ops.insert(holder, args[0], args[1])
    elif method == "extend":
        new = ops.concat(holder, as_list(ops, args[0]))
    elif method == "clear":
        new = ops.clear(holder)
    else:  # remove
        if not (isinstance(holder, V.Const) and isinstance(args[0], V.Const)):
            raise c.error(
                call, f"{what}: removing an item by equality from a list of runtime values",
                f"delete it by position: `del {name}[i]`",
            )
        items, _ = ops.python(holder, lambda values: values.remove(args[0]))
        new = V.Const([i.value for i in items])
    rebind(c, env, name, holder, new, call, what)


def append(c, holder, item, node):
    """holder + [item] as the new list value (a runtime list stays one)."""
    if isinstance(holder, V.Dyn):
        return c._runtime_append(holder, item, node)
    items = holder.items if isinstance(holder, V.Tup) else tuple(V.Const(v) for v in holder.value)
    return c._list_value(V.Tup(items + (item,), "list"))


def as_list(ops: ListOps, value):
    """The operand of `extend`/`+` as a list value (a tuple's items count as a list's)."""
    if is_list(value):
        return value
    if isinstance(value, V.Tup) or (isinstance(value, V.Const) and isinstance(value.value, (tuple, range))):
        items = items_of(value) if not isinstance(value, V.Const) else tuple(V.Const(v) for v in value.value)
        return V.Tup(tuple(items), "list")
    raise ops.error(
        f"{ops.what}: extending a list with a {V.kind_of(value)}",
        "extend it with a list or tuple (a tensor's rows: `list(t.unbind(0))`)",
    )


def store(c, target: ast.Subscript, item, env: dict) -> None:
    """`name[key] = item` on a list: a new list value for every alias."""
    name = target.value.id
    holder = env[name]
    what = f"`{source_text(target)} = ...`"
    new = ListOps(c, target, what).set_item(holder, subscript_key(c, target.slice, env), item)
    rebind(c, env, name, holder, new, target, what)


def is_dict(value) -> bool:
    """A dict value: built here with runtime items, or a Python dict known here."""
    return (isinstance(value, V.Tup) and isinstance(value.kind, V.DictKind)) or (
        isinstance(value, V.Const) and type(value.value) is dict
    )


def _dict_entries(c, holder, node, what: str) -> dict:
    if isinstance(holder, V.Tup):
        return dict(zip(holder.kind.keys, holder.items))
    if not all(type(k) in (str, int) for k in holder.value):
        raise c.error(node, f"{what} on a dict keyed by {', '.join(sorted({type(k).__name__ for k in holder.value}))}", "key it by strs or ints")
    return {k: V.Const(v) for k, v in holder.value.items()}


def _dict_key(c, node: ast.expr, env, what: str):
    key = c.expression(node, env)
    if not (isinstance(key, V.Const) and type(key.value) in (str, int)):
        raise c.error(node, f"{what} with a key that is not a str or int known when the model is imported", "key the dict by constant strs or ints")
    return key.value


def dict_store(c, target: ast.Subscript, item, env: dict) -> None:
    """`name[key] = item` on a dict: a new dict value for every alias (a new key goes last)."""
    name = target.value.id
    holder = env[name]
    what = f"`{source_text(target)} = ...`"
    entries = _dict_entries(c, holder, target, what)
    entries[_dict_key(c, target.slice, env, what)] = item
    rebind(c, env, name, holder, _dict_value(entries), target, what)


def dict_delete(c, target: ast.Subscript, env: dict) -> None:
    """`del name[key]` on a dict."""
    name = target.value.id
    holder = env[name]
    what = f"`del {source_text(target)}`"
    entries = _dict_entries(c, holder, target, what)
    key = _dict_key(c, target.slice, env, what)
    if key not in entries:
        raise c.error(target, f"{what}: KeyError: {key!r}")
    del entries[key]
    rebind(c, env, name, holder, _dict_value(entries), target, what)


def _dict_value(entries: dict) -> V.EnvValue:
    """A new dict value: a Python dict when every item is known here (`cfg["shift"] = 1.0`)."""
    if all(isinstance(v, V.Const) for v in entries.values()):
        return V.Const({k: v.value for k, v in entries.items()})
    return V.dict_value(entries)


def delete(c, stmt: ast.Delete, env: dict) -> None:
    """`del name` (unbinds it) or `del name[key]` (a new list value for every alias)."""
    (target,) = stmt.targets
    if isinstance(target, ast.Name):
        value = env.get(target.id, V.UNDEF)
        if value is V.UNDEF:
            raise c.error(target, f"`del {target.id}` before `{target.id}` is assigned")
        env[target.id] = V.UNDEF
        return
    name = target.value.id
    what = f"`del {source_text(target)}`"
    holder = env.get(name, V.UNDEF)
    if holder is V.UNDEF:
        raise c.error(target, f"`{name}` may be used before it is assigned")
    if is_dict(holder) and isinstance(target.value, ast.Name):
        dict_delete(c, target, env)
        return
    if not is_list(holder):
        kind = V.kind_of(holder)
        hint = (
            "module state and containers other than lists cannot change in forward: build a new one"
            if isinstance(holder, V.Const) else "only items of Python lists can be deleted"
        )
        raise c.error(target, f"{what} on a {kind}", hint)
    ops = ListOps(c, target, what)
    new = ops.delete(holder, subscript_key(c, target.slice, env))
    rebind(c, env, name, holder, new, target, what)


# ----- lists of numbers made from tensors, and back ----------------------------------------


def reads_runtime_length_values(node: ast.AST, env: dict, written_in_run: set[str]) -> bool:
    """Whether `node` is `t.tolist()` of a tensor computed from one with a dim known only at
    run time (`idx = nz.flatten().tolist()` of `nz = mask.nonzero()`): a list of runtime
    length, which the host makes (a run cannot return a list of unknown length)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "tolist"):
        return False
    for sub in ast.walk(node.func.value):
        if isinstance(sub, ast.Name) and sub.id not in written_in_run:
            value = env.get(sub.id)
            if isinstance(value, V.Dyn) and V.is_tensor_type(value.type) and (
                value.type.shape is None or any(d is None for d in value.type.shape)
            ):
                return True
    return False


def tolist(c, tensor: V.Dyn, node: ast.AST) -> V.EnvValue:
    """`t.tolist()` on the host: a 0-d tensor's number, a static dim's items as a fixed
    list, a dim known only at run time as a runtime list of numbers filled in an
    `scf.while` (`select` then `item` per row)."""
    example = tensor.example.tolist()
    if tensor.example.dim() == 0:
        return c.builder.host_op("torch.aten.item", [tensor], V.type_of_example(example), example)
    scalar = V.type_of_example(tensor.example.flatten()[0].item() if tensor.example.numel() else _PYTHON_OF[tensor.example.dtype.is_floating_point])
    shape = tensor.type.shape if tensor.type.shape is not None else [None] * tensor.example.dim()
    row_type = V.tensor_type(shape[1:], tensor.example.dtype)

    def row(k):
        index = c.builder.materialize(k if isinstance(k, V.Dyn) else V.Const(k))
        sample = tensor.example[_example(k)] if tensor.example.size(0) > _example(k) else tensor.example.new_zeros(tensor.example.shape[1:])
        return c.builder.host_op("torch.aten.select.int", [tensor, c.builder.constant(0), index], row_type, sample)

    if shape[0] is not None:
        return V.Tup(tuple(tolist(c, row(k), node) for k in range(shape[0])), "list")
    if tensor.example.dim() != 1:
        raise c.error(node, f"`{source_text(node)}`: `.tolist()` of a {tensor.example.dim()}-d tensor whose first dim is known only at run time",
                      "flatten it first (`t.flatten().tolist()`), or index its rows")
    builder = c.builder
    list_type = V.SCALAR_LISTS[scalar]
    int_type, ir_list_type = builder.type(V.INT), builder.type(list_type)
    length = builder.host_op("torch.aten.size.int", [tensor, builder.constant(0)], V.INT, tensor.example.size(0))
    start = _empty(c, list_type)
    op = ir.Operation.create("scf.while", results=[int_type, ir_list_type], operands=[builder.constant(0).value, start.value], regions=2)
    before = op.regions[0].blocks.append(int_type, ir_list_type)
    with ir.InsertionPoint(before):
        more = builder.host_op("torch.aten.lt.int", [V.Dyn(before.arguments[0], V.INT, 0), length], V.BOOL, True)
        ir.Operation.create("scf.condition", operands=[builder.to_i1(more), *before.arguments])
    after = op.regions[1].blocks.append(int_type, ir_list_type)
    with ir.InsertionPoint(after):
        index = V.Dyn(after.arguments[0], V.INT, 0)
        item = builder.host_op("torch.aten.item", [row(index)], scalar, example[0] if example else None)
        grown = builder.op(LIST_APPEND, [after.arguments[1], item.value], [ir_list_type])
        following = builder.host_op("torch.aten.add.int", [index, builder.constant(1)], V.INT, 1)
        ir.Operation.create("scf.yield", operands=[following.value, grown.result])
    return V.Dyn(op.results[1], list_type, example)


_PYTHON_OF = {True: 0.0, False: 0}  # (the kind of number an empty tensor's items would be)


def tensor_of_runtime_list(c, call: ast.Call, value: V.Dyn, dtype, static_length: bool = False) -> V.Dyn:
    """`torch.tensor(lst)` of a list of numbers whose length is known only at run time: a
    1-d tensor of that length on the host, of `dtype` or the one torch infers (int64,
    the default float dtype, bool)."""
    scalar = V.list_item_scalar(value.type)
    dtype = dtype if dtype is not None else {V.INT: torch.int64, V.FLOAT: torch.get_default_dtype(), V.BOOL: torch.bool}[scalar]
    example = torch.tensor(value.example, dtype=dtype)
    none = c.builder.constant(None)
    shape = [len(value.example) if static_length else None]
    return c.builder.host_op("torch.aten.tensor", [value, none, none, c.builder.constant(False)], V.tensor_type(shape, dtype), example)
