"""Python list values in forward: the kinds a list variable holds, the runtime list type
of their items, and which variables hold one list.

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
too: `rebind`); a list that is module state (`self.sizes.append(...)`) is refused. The
operations on lists are `list_ops.py`'s, the statements that change them
`container_statements.py`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from xdsl.ir import Attribute
from dycl.frontend import values as V
from dycl.frontend.errors import FrontendError
from dycl.dialects.torch_ops import LIST_CONSTRUCT, LIST_ITEM


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


def is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
