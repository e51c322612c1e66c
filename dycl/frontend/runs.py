"""Helpers of the runs (`run_compiler.py`): how a run's statements are rewritten for
export (masked updates, stores, `.detach()`), its example values, and its results as
environment values.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import operator
import re
from typing import Any

import torch

from dycl.frontend import aliases, lists, pytree_values
from dycl.frontend import values as V
from dycl.frontend.export_sizes import IntArithmetic
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import FrontendError
from dycl.frontend.liveness import MUTATING_METHODS


def changes_a_list_named(stmt: ast.stmt, names: set[str]) -> bool:
    value = stmt.value if isinstance(stmt, ast.Expr) else None
    return (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in MUTATING_METHODS
        and isinstance(value.func.value, ast.Name) and value.func.value.id in names
    )


_SIZE_READS = frozenset({"size", "dim", "ndimension", "numel", "nelement"})


def assigned_sizes_only(stmts: list[ast.stmt], names: set[str]) -> bool:
    """Whether each of `names` is last assigned in `stmts` a tensor's size (`b, t =
    x.size()`, `t = x.shape[1]`, `n = len(x)`): a test of them compares Python ints, for the
    host to compute; a run could not return it where a size is a runtime one (a symbolic
    bool)."""
    def is_size(expr: ast.expr) -> bool:
        if isinstance(expr, ast.Subscript):
            expr = expr.value  # (`x.shape[1]`, `x.size()[1]`)
        if isinstance(expr, ast.Attribute):
            return expr.attr == "shape"
        return isinstance(expr, ast.Call) and (
            isinstance(expr.func, ast.Attribute) and expr.func.attr in _SIZE_READS
            or isinstance(expr.func, ast.Name) and expr.func.id == "len"
        )

    last: dict[str, ast.expr | None] = {}
    for stmt in stmts:
        for target in stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]:
            for node in ast.walk(target) if target is not None else ():
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    last[node.id] = stmt.value if isinstance(stmt, ast.Assign) else None
    return bool(names) and all(last.get(n) is not None and is_size(last[n]) for n in names)


def shape_depends_on_path(type_) -> bool:
    return V.is_tensor_type(type_) and (type_.shape is None or None in type_.shape)


def stores_into_python_container(stmt: ast.stmt, env) -> bool:
    """`lst[k] = v`, `lst[k] += v`, `d[key] = v` on a Python list or container the frontend
    holds (not a tensor): run as user code on the examples, the store would change the
    import-time value itself and leave nothing in the program."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    for target in targets:
        if not isinstance(target, ast.Subscript):
            continue
        direct = isinstance(target.value, ast.Name)  # `lst[k] = v`, not `lst[k][:, 0] = v`
        while isinstance(target, ast.Subscript):
            target = target.value
        if isinstance(target, ast.Name):
            value = env.get(target.id)
            if direct and (lists.is_list(value) or isinstance(value, V.Tup)):
                return True
            if isinstance(value, V.Const) and isinstance(value.value, (list, dict, set, bytearray)):
                return True
    return False


def statement_text(stmts) -> str:
    text = source_text(stmts[0]).splitlines()[0]
    text = text if len(text) <= 60 else text[:57] + "..."
    return text + (f" (and {len(stmts) - 1} more line(s))" if len(stmts) > 1 else "")


def quoted(stmt) -> str:
    """"`<the statement>`: " for a refusal's message (which must quote the user's statement at its line)."""
    return "" if stmt is None else f"`{statement_text([stmt])}`: "


@contextlib.contextmanager
def record_calls(model: torch.nn.Module, called: list):
    """Collect the modules of `model` a run calls (its wrapper then lifts only their
    weights). Hooks on the model's own modules, not torch's process-wide one: no other
    module, thread or library sees them."""
    handles = [m.register_forward_pre_hook(lambda module, args: called.append(module)) for m in model.modules()]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


# ----- small helpers -------------------------------------------------------------------


_IN_PLACE = {
    ast.Add: (operator.add, operator.iadd), ast.Sub: (operator.sub, operator.isub),
    ast.Mult: (operator.mul, operator.imul), ast.Div: (operator.truediv, operator.itruediv),
}


def masked_update(tensor, index, op: str, value):
    """`tensor[index] op= value`, exactly as Python does it. With a boolean mask of the
    tensor's shape, a scalar value and a floating tensor it is computed as
    `tensor.copy_(torch.where(mask, tensor op value, tensor))`: the same values, in place,
    without `tensor[mask]`, whose size depends on the data (a sub-DNN has static shapes)."""
    plain, in_place = _IN_PLACE[getattr(ast, op)]
    scalar = isinstance(value, (int, float)) and not isinstance(value, bool) or (
        isinstance(value, torch.Tensor) and value.dim() == 0)
    floating = isinstance(value, float) or isinstance(value, torch.Tensor) and value.is_floating_point()
    if (
        scalar and isinstance(tensor, torch.Tensor)
        and isinstance(index, torch.Tensor) and index.dtype == torch.bool and index.shape == tensor.shape
        # an integer tensor: only where Python's in-place op keeps integers (else it raises)
        and (tensor.is_floating_point() or not floating and op != "Div")
    ):
        tensor.copy_(torch.where(index, plain(tensor, value), tensor))
        return
    if _indexes_a_view(tensor, index):
        in_place(tensor[index], value)  # Python's `t[i] = t[i]` that follows is a self-copy
        return
    picked = _at_tensor_position(tensor, index)
    if picked is not None:  # (`cache[steps % 4] += v`: read and written at the 0-d tensor)
        item = tensor[picked].reshape(tensor[_first_row(index)].shape)  # (the picked dim's 1 dropped)
        subscript_store(tensor, index, in_place(item, value))
        return
    item = tensor[index]
    tensor[index] = in_place(item, value)


def subscript_store(tensor, index, value):
    """`tensor[index] = value`. An index holding a symbolic int (a runtime int inside a
    capture) with no tensor in it selects a view: the store is a copy into that view.
    `Tensor.__setitem__` would read the int's value, and export would freeze it to its
    example (silently, when that example is 0 or 1). A 0-d integer tensor in the index (a
    ring buffer's slot, `self.cache[self.steps % 4] = v`) is a 1-element index tensor: an
    `index_put` at the position the tensor holds (`__setitem__` would read it with `.item()`,
    a number export cannot follow)."""
    picked = _at_tensor_position(tensor, index)
    if picked is not None:
        _store_at_tensor_position(tensor, index, picked, value)
        return
    if not _indexes_a_view(tensor, index):
        tensor[index] = value
        return
    view = tensor[index]
    if isinstance(value, torch.Tensor):
        while value.dim() > view.dim() and value.shape[0] == 1:
            value = value[0]  # `__setitem__` drops a value's leading 1-sized dims too
        view.copy_(value)
    else:
        view.fill_(value)


def _at_tensor_position(tensor, index) -> tuple | None:
    """`index` with its one 0-d integer tensor made a 1-element index tensor, where the rest
    is basic indexing (ints, slices, None, `...`); None for any other index."""
    if not isinstance(tensor, torch.Tensor):
        return None
    parts = index if isinstance(index, tuple) else (index,)
    at = [k for k, p in enumerate(parts) if isinstance(p, torch.Tensor)]
    if len(at) != 1:
        return None
    position = parts[at[0]]
    if position.dim() != 0 or position.dtype in (torch.bool, torch.uint8) or position.is_floating_point() or position.is_complex():
        return None
    rest = [b for k, p in enumerate(parts) if k != at[0] for b in ((p.start, p.stop, p.step) if isinstance(p, slice) else (p,))]
    if not all(p is None or p is Ellipsis or (isinstance(p, (int, torch.SymInt)) and not isinstance(p, bool)) for p in rest):
        return None
    return tuple(position.reshape(1) if k == at[0] else p for k, p in enumerate(parts))


def _first_row(index) -> tuple:
    """`index` with its 0-d tensor replaced by 0: basic indexing of the shape the store or
    read at the tensor's position has (`cache[0]`'s for `cache[steps % 4]`)."""
    parts = index if isinstance(index, tuple) else (index,)
    return tuple(0 if isinstance(p, torch.Tensor) else p for p in parts)


def _picked_shape(tensor, index) -> list:
    """The shape of `tensor[picked]` (`_at_tensor_position`): that of `tensor[index]` with
    the picked dim kept as a 1 where torch puts a single index tensor, in its place among
    the dims the basic parts before it leave (ints select their dim away first)."""
    parts = index if isinstance(index, tuple) else (index,)
    shape = list(tensor[_first_row(index)].shape)
    consumed = sum(1 for p in parts if p is not None and p is not Ellipsis)
    before = 0
    for p in parts:
        if isinstance(p, torch.Tensor):
            break
        if p is Ellipsis:
            before += tensor.dim() - consumed
        elif p is None or isinstance(p, slice):
            before += 1
    return shape[:before] + [1] + shape[before:]


def _store_at_tensor_position(tensor, index, picked: tuple, value) -> None:
    """`tensor[index] = value` as `index_put` at `picked` (`_at_tensor_position`). The value
    is broadcast as `__setitem__` broadcasts it (to the shape of `tensor[index]`, after
    dropping its leading 1-sized dims), in the tensor's dtype, then given the picked dim's 1
    (a reshape: a dim of 1 keeps every element's order)."""
    shape = tensor[_first_row(index)].shape
    if isinstance(value, torch.Tensor):
        while value.dim() > len(shape) and value.shape[0] == 1:
            value = value[0]
        value = value.to(tensor.dtype).expand(shape)
    else:
        value = torch.full(shape, value, dtype=tensor.dtype)
    tensor[picked] = value.reshape(_picked_shape(tensor, index))


def _indexes_a_view(tensor, index) -> bool:
    """Basic indexing (ints, slices, None, ...) with at least one symbolic int."""
    if not isinstance(tensor, torch.Tensor):
        return False
    parts = index if isinstance(index, tuple) else (index,)
    flat = [b for p in parts for b in ((p.start, p.stop, p.step) if isinstance(p, slice) else (p,))]
    basic = all(p is None or p is Ellipsis or (isinstance(p, (int, torch.SymInt)) and not isinstance(p, bool)) for p in flat)
    return basic and any(isinstance(p, torch.SymInt) for p in flat)


class MaskedUpdate(ast.NodeTransformer):
    """`t[i] op= v` and `t[i] = t[i] op v` (same `t`, same `i`) become `masked_update`;
    other stores `t[i] = v` become `subscript_store`."""

    HELPER = "__dycl_masked_update"
    STORE = "__dycl_subscript_store"

    def visit_AugAssign(self, node: ast.AugAssign):
        if isinstance(node.target, ast.Subscript) and type(node.op) in _IN_PLACE:
            return self._call(node, node.target, node.op, node.value)
        return node

    def visit_Assign(self, node: ast.Assign):
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Subscript):
            target, value = node.targets[0], node.value
            if (
                isinstance(value, ast.BinOp) and type(value.op) in _IN_PLACE
                and isinstance(value.left, ast.Subscript)
                and ast.dump(value.left.value) == ast.dump(target.value)
                and ast.dump(value.left.slice) == ast.dump(target.slice)
            ):
                return self._call(node, target, value.op, value.right)
            call = ast.Call(
                func=ast.Name(self.STORE, ast.Load()),
                args=[_as_load(copy.deepcopy(target.value)), copy.deepcopy(target.slice), value],
                keywords=[],
            )
            return ast.copy_location(ast.Expr(call), node)
        return node

    def _call(self, node, target: ast.Subscript, op, value) -> ast.stmt:
        load = _as_load(copy.deepcopy(target.value))
        call = ast.Call(
            func=ast.Name(self.HELPER, ast.Load()),
            args=[load, copy.deepcopy(target.slice), ast.Constant(type(op).__name__), value],
            keywords=[],
        )
        return ast.copy_location(ast.Expr(call), node)


def _as_load(node: ast.expr) -> ast.expr:
    for sub in ast.walk(node):
        if hasattr(sub, "ctx"):
            sub.ctx = ast.Load()
    return node


class DetachIsIdentity(ast.NodeTransformer):
    """`t.detach()` is `t` at inference: the same memory and values. Export would lose an
    in-place change made through the detached alias (`x.detach().mul_(0.9)` changes x)."""

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "detach" and not node.args and not node.keywords:
            return node.func.value
        return node


class TensorOfRuntimeInts(ast.NodeTransformer):
    """`torch.tensor([T])` (gpt-fast's `input_pos = torch.tensor([T], dtype=torch.int)`) with
    `T` a runtime int: export cannot read a symbolic int (or the 0-d tensor it enters a run
    as) into a tensor's data. Every call of a `tensor` attribute becomes `tensor_of_ints`,
    which builds such a tensor from the ints with tensor ops and calls the function itself
    otherwise."""

    HELPER = "__dycl_tensor_of_ints"

    def visit_Call(self, node: ast.Call):
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr == "tensor":
            call = ast.Call(func=ast.Name(self.HELPER, ast.Load()), args=[node.func, *node.args], keywords=node.keywords)
            return ast.copy_location(call, node)
        return node


def tensor_of_ints(function, *args, **kwargs):
    """`function(*args, **kwargs)`; for `torch.tensor(data, dtype=...)` whose `data` is a list
    (nested, rectangular) of ints some of which are runtime ints (symbolic ints, or int64 0-d
    tensors): an int64 tensor stacked from them (then `dtype`), as `torch.tensor` gives."""
    options = set(kwargs) - {"dtype", "device", "pin_memory"}
    if function is not torch.tensor or len(args) != 1 or options or not isinstance(args[0], (list, tuple)):
        return function(*args, **kwargs)
    shape, leaves = _int_leaves(args[0])
    if shape is None or not any(isinstance(v, (torch.SymInt, torch.Tensor)) for v in leaves):
        return function(*args, **kwargs)
    items = [v if isinstance(v, torch.Tensor) else torch.scalar_tensor(v, dtype=torch.int64) for v in leaves]
    out = torch.stack(items).reshape(shape)
    dtype = kwargs.get("dtype")
    return out if dtype is None else out.to(dtype)


def _int_leaves(data) -> tuple[list[int] | None, list]:
    """(shape, leaves) of a rectangular nested list of ints (Python ints, symbolic ints, int64
    0-d tensors; not bools: `torch.tensor` infers another dtype then); shape None otherwise."""
    if not isinstance(data, (list, tuple)):
        ok = (isinstance(data, (int, torch.SymInt)) and not isinstance(data, bool)) or (
            isinstance(data, torch.Tensor) and data.dim() == 0 and data.dtype == torch.int64)
        return ([], [data]) if ok else (None, [])
    parts = [_int_leaves(item) for item in data]
    shapes = {None if shape is None else tuple(shape) for shape, _ in parts}
    if not data or len(shapes) != 1 or None in shapes:
        return None, []
    return [len(data), *shapes.pop()], [leaf for _, leaves in parts for leaf in leaves]


def at_least_two(example, dims: list[int]):
    """`example` with each of `dims` at least 2 long (export would take a dim of 0 or 1 for
    a constant): the values past the example's own are zeros, which export never reads."""
    return resized(example, [(dim, 2) for dim in dims if example.shape[dim] < 2])


def narrowed(example, sizes: list[tuple[int | None, int]]):
    """`example` cut to `size` along each (dim, size) of `sizes`, as a tensor of its own; an
    int's (dim None) is that size."""
    for dim, size in sizes:
        if dim is None:
            return size
        example = example.narrow(dim, 0, size)
    return example.clone() if sizes else example


def resized(example, sizes: list[tuple[int | None, int]]):
    """`example` made `size` long along each (dim, size) of `sizes`: cut, or grown with
    zeros (export reads no values of them); an int's (dim None) is that size. A cut one is
    copied with strides of its own shape (export makes a stride a size of its own: the
    parent's 6 columns, beside the cut's 3, froze the 3)."""
    for dim, size in sizes:
        if dim is None:
            return size
        if example.shape[dim] >= size:
            example = example.narrow(dim, 0, size).clone(memory_format=torch.contiguous_format)
        else:
            pad = list(example.shape)
            pad[dim] = size - example.shape[dim]
            example = torch.cat([example, example.new_zeros(pad)], dim)
    return example


_FROZEN_SIZE = re.compile(r"L\['flat_inputs'\]\[(\d+)\]\.size\(\)\[(\d+)\]")


def capture_past_frozen_sizes(capturer, run, examples: list, dynamic: list, called, cache_key, tries: int = 3, tied=None):
    """`capturer.capture(run, examples, ...)`, or, where export froze a runtime dim to its
    example size (`memory[:, 1:]` of a 2-long memory is 1 long, and export takes a 1 for a
    constant), captured again from examples one longer in each such dim: that run holds
    from some size on (`CapturedRun.size_ranges`), and the sizes below get runs of their own."""
    for attempt in range(tries):
        try:
            return capturer.capture(run, examples, dynamic, called, cache_key if attempt == 0 else None, tied=tied)
        except Exception as error:
            frozen = {(int(k), int(d)) for k, d in _FROZEN_SIZE.findall(str(error))} if "Constraints violated" in str(error) else set()
            frozen = {(k, d) for k, d in frozen if k < len(examples) and d in dynamic[k]}
            if not frozen or attempt == tries - 1:
                raise
            examples = [resized(e, [(d, e.shape[d] + 1) for k, d in frozen if k == position]) for position, e in enumerate(examples)]
    raise AssertionError("unreachable")


def distinct_examples(flat_inputs: list[V.Dyn], at_two: frozenset[int] = frozenset()) -> list:
    """Example inputs for export, one tensor per IR value. Two values may share an example
    (after `if c: y = x else: y = x * 0.5`, the join's example of `y` is `x`'s); export
    would take one tensor passed twice for one input and compute `x + y` as `x + x`. The ints
    at `at_two` are 2 (export freezes a 0 or 1 it reads: `IntAtTwo`)."""
    seen: set = set()
    examples = []
    for position, leaf in enumerate(flat_inputs):
        example = 2 if position in at_two else leaf.example
        memory = aliases.storage_of(example)
        if memory is not None and memory in seen:
            example = example.clone()
        seen.add(memory)
        examples.append(example)
    return examples


class IntsAsTensors(Exception):
    """Capture the run again with its runtime ints as 0-d tensors."""


class IntAtTwo(Exception):
    """Capture the run again with the runtime int at `position` exported at 2: export froze
    its example, 0 or 1, and an example of 0 or 1 must not change what compiles. Where export
    then assumes the int is at least 2 (`export_sizes.runtime_size_ranges`), the run is also captured
    for 0 and 1, as for a dim."""

    def __init__(self, position: int):
        super().__init__(position)
        self.position = position


def capture_retrying(capture):
    """`capture(ints_as_tensors, at_two)` until it needs no other capture of its runtime ints:
    symbolic (with the ints of `IntAtTwo` exported at 2), else as 0-d tensors."""
    at_two: frozenset[int] = frozenset()
    while True:
        try:
            return capture(False, at_two)
        except IntAtTwo as retry:
            at_two |= {retry.position}
        except IntsAsTensors:
            return capture(True, frozenset())


def retry_with_ints(error, flat_inputs: list[V.Dyn], at_two: frozenset[int]) -> Exception:
    """How to capture again a run whose int export froze (`SpecializedInput`) or used in
    tensor math (`IntArithmetic`): at 2 if its example is 0 or 1 and it was not yet, else as tensors."""
    example = flat_inputs[error.position].example
    if isinstance(error, IntArithmetic) or error.position in at_two or type(example) is not int or example not in (0, 1):
        return IntsAsTensors()
    return IntAtTwo(error.position)


class SplitRun(Exception):
    """Compile the run's statements as one run each."""


def picked_object(leaf) -> bool:
    """A run result that is code (a module, a function): chosen by data if the run has inputs."""
    return isinstance(leaf, torch.nn.Module) or callable(leaf) and not isinstance(leaf, type)


def holds_computed_tensors(leaf, weights: dict) -> bool:
    """A run result that is a Python object holding tensors the run computed (a
    `Categorical(probs)`): as a constant it would keep the example's values forever."""
    if isinstance(leaf, (torch.Tensor, torch.nn.Module, type, bool, int, float, str)) or leaf is None or callable(leaf):
        return False
    held = getattr(leaf, "__dict__", None) or {}
    return any(isinstance(v, torch.Tensor) and aliases.storage_of(v) not in weights for v in held.values())


def refuse_frozen_objects(c, stmts, results) -> None:
    """Refuse a run result that holds tensors the run computed (`holds_computed_tensors`)."""
    frozen = [leaf for leaf in results if holds_computed_tensors(leaf, c.memory_of_weights)]
    if not frozen:
        return
    kind = type(frozen[0]).__name__
    maker = next((s for s in stmts if kind in source_text(s)), stmts[0])
    raise c.error(
        maker, f"`{statement_text([maker])}` makes a {kind} holding tensors computed in forward, and a "
        "later statement uses it (as a constant it would keep the example's values)",
        "use it in the statement that makes it (`lp = Categorical(probs).log_prob(a)`), or keep the "
        "tensors it is made from and make it again where it is used",
    )


def is_tensor_value(value) -> bool:
    return isinstance(value, V.Dyn) and V.is_tensor_type(value.type)


def bound_name(env: dict, value: V.Dyn) -> str:
    """A variable bound to `value`, for messages."""
    for name, bound in env.items():
        if any(isinstance(l, V.Dyn) and l.value == value.value for l in V.leaves(bound)):
            return name.split("_", 3)[-1] if name.startswith("__") else name
    return "a tensor"


def is_packing(value: ast.expr) -> bool:
    """Names and tuples of names: data movement, kept at host level (no run needed)."""
    if isinstance(value, ast.Name):
        return True
    return isinstance(value, (ast.Tuple, ast.List)) and all(
        isinstance(e, (ast.Name, ast.Constant)) for e in value.elts
    )


def substitute(value, example_of_leaf, made: dict[int, Any] | None = None):
    """The Python value a run receives for `value`; `example_of_leaf(dyn)` gives its leaves.
    `made` (by id of a list or dict value) makes one value one Python container wherever it
    occurs among a run's inputs (`inner = d["a"]`, then `d["a"]["b"] = v` and `inner["b"]`)."""
    if isinstance(value, V.Tup):
        made = {} if made is None else made
        if id(value) in made:
            return made[id(value)]
        container = V.python_container(value, [substitute(i, example_of_leaf, made) for i in value.items])
        if value.kind != "tuple":
            made[id(value)] = container
        return container
    if isinstance(value, V.Dyn):
        return example_of_leaf(value)
    if isinstance(value, V.Const):
        return value.value
    return None


def container_layout(values) -> tuple:
    """Which list and dict values among `values` are one value: each one's first position in a
    walk over them (a run's export depends on it, as `substitute` shares such containers)."""
    first: dict[int, int] = {}
    layout = []

    def walk(value):
        if isinstance(value, V.Tup):
            if value.kind != "tuple":
                layout.append(first.setdefault(id(value), len(first)))
            for item in value.items:
                walk(item)

    for value in values:
        walk(value)
    return tuple(layout)


def example_value(value, made: dict[int, Any], lists: dict[int, V.Tup]):
    """What the example run gets for `value`: one Python list (dict) per list (dict) value
    (`made`, by id), each noted in `lists` (id of the Python container -> the value) so that a
    result that is one of them is that very value again."""
    if isinstance(value, V.Tup):
        if id(value) in made:
            return made[id(value)]
        items = [example_value(item, made, lists) for item in value.items]
        if value.kind == "tuple":
            return tuple(items)
        container = V.python_container(value, items)  # a list or a dict, one per value
        made[id(value)] = container
        lists[id(container)] = value
        return container
    return V.example_of(value)


def tups_of(converted, original):
    """(converted, original) pairs of the tuples and lists of one value and its conversion."""
    if isinstance(converted, V.Tup) and isinstance(original, V.Tup) and len(converted.items) == len(original.items):
        yield converted, original
        for a, b in zip(converted.items, original.items):
            yield from tups_of(a, b)


def to_env_value(structured, builder, example, lists: dict[int, V.Tup], inputs: dict[int, V.Tup] | None = None,
                  renewed: list | None = None) -> V.EnvValue:
    """The run's results as environment values; `example` is what the example run returned,
    whose Python lists (and dicts) say which results are one list (`g = groups[0]`: `g` and the item of
    `groups` are one list value). `lists` starts with the run's input lists (`inputs`): a
    result that is one of them is a new version of that list (its items may have been
    computed again), listed in `renewed` (old value, new value) for its holders."""
    inputs = {} if inputs is None else inputs
    renewed = [] if renewed is None else renewed
    if isinstance(structured, (V.Dyn, V.Const)):
        return structured
    if isinstance(structured, V.Tup) and pytree_values.is_node(example):
        # a library object (a cache): one value per object, like a list, so that a run
        # changing an input cache gives its holders the new version
        known = lists.get(id(example))
        if known is None or (id(example) in inputs and known is inputs[id(example)]):
            parts, _ = pytree_values.children(example)
            new = V.Tup(tuple(to_env_value(s, builder, e, lists, inputs, renewed) for s, e in zip(structured.items, parts)), structured.kind)
            if known is not None:
                renewed.append((known, new))
            lists[id(example)] = new
        return lists[id(example)]
    if isinstance(structured, tuple):
        return V.Tup(tuple(to_env_value(s, builder, e, lists, inputs, renewed) for s, e in zip(structured, example)))
    if isinstance(structured, list) and isinstance(example, list):
        known = lists.get(id(example))
        if known is None or (id(example) in inputs and known is inputs[id(example)]):
            new = V.Tup(tuple(to_env_value(s, builder, e, lists, inputs, renewed) for s, e in zip(structured, example)), "list")
            if known is not None:
                renewed.append((known, new))
            lists[id(example)] = new
        return lists[id(example)]
    if isinstance(structured, dict) and isinstance(example, dict):
        known = lists.get(id(example))
        if known is None and all(isinstance(v, V.Const) for v in structured.values()):
            return V.Const({k: v.value for k, v in structured.items()})
        if known is None or (id(example) in inputs and known is inputs[id(example)]):
            keys = tuple(structured)
            if not all(type(k) in (str, int) for k in keys):
                raise FrontendError(f"a dict of runtime values with keys {keys!r}", "key it by strs or ints")
            new = V.dict_value({k: to_env_value(structured[k], builder, example[k], lists, inputs, renewed) for k in keys})
            if known is not None:
                renewed.append((known, new))
            lists[id(example)] = new
        return lists[id(example)]
    return V.Const(structured)


def fix_locations(tree: ast.AST, line: int) -> None:
    """Give synthetic nodes a location compile() accepts (copies keep their own)."""
    for node in ast.walk(tree):
        if "lineno" not in node._attributes:
            continue
        if getattr(node, "lineno", None) is None:
            node.lineno = line
        if getattr(node, "col_offset", None) is None:
            node.col_offset = 0
        if getattr(node, "end_lineno", None) is None or node.end_lineno < node.lineno:
            node.end_lineno = node.lineno
        if getattr(node, "end_col_offset", None) is None:
            node.end_col_offset = 0


