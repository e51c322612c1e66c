"""Sizes that depend on the data: `idx = mask.nonzero().squeeze(1)`, `x[mask]`,
`torch.masked_select(x, mask)`, `torch.where(mask)`, and what reads and stores at them
(`x[idx]`, `x.index_select(0, idx)`, `hx[idx] = v`, `accum[idx] += h`, `x[mask] = v`).

torch.export names such a size by an unbacked symbol, which no sub-DNN can take. So the op
that makes it runs where its result is known, on the host (the op registry's
`Category.DATA_SIZE` records: `torch.aten.nonzero`, `torch.aten.masked_select`), and its
length is a runtime dim from there on: the machinery of `x[:k]` (a symbolic dim in the
sub-DNNs, runs of their own for sizes 0 and 1, `dycl.by_size`). As with torch.export's
unbacked sizes, nothing is assumed about that length: it may be 0 or 1.

A boolean mask in an index is what PyTorch makes of it: its nonzero positions, one index
tensor per mask dim (`x[a, mask]` is `x[a, nz[:, 0], nz[:, 1]]` for a 2-d mask), so reads
and stores through it are index tensors of a runtime length. The mask's shape must match
the dims it indexes (eager raises otherwise): a dim known only at run time is checked there.

The statements are first compiled as they are; a run in which export finds a size that
depends on the data (`DataSize`) is compiled again statement by statement, and a statement
that makes one is rewritten here: each such call or mask becomes a host value bound to a
fresh name, and the rewritten statement is compiled as any other.
"""

from __future__ import annotations

import ast
import copy
import functools

import torch
from torch_mlir import ir

from dycl.frontend import host_numpy, lists
from dycl.frontend import values as V
from dycl.frontend.build import erase_after
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import DataSize, FrontendError
from dycl.frontend.nodes import OPERAND_PREFIX, fresh_id

NONZERO = "torch.aten.nonzero"
MASKED_SELECT = "torch.aten.masked_select"
UNIQUE = "torch.aten._unique2"  # (values, inverse, counts)
UNIQUE_DIM = "torch.aten.unique_dim"  # (values, inverse, counts) of slices along a dim
UNIQUE_CONSECUTIVE = "torch.aten.unique_consecutive"  # (values, inverse, counts) of runs
REPEAT_INTERLEAVE = "torch.aten.repeat_interleave.self_Tensor"
REPEATED_INDICES = "torch.aten.repeat_interleave.Tensor"  # (`torch.repeat_interleave(repeats)`)

# Calls whose result size depends on the data, by the torch function or the method name.
_NONZERO_FUNCTIONS = (torch.nonzero, torch.argwhere)
_NONZERO_METHODS = frozenset({"nonzero", "argwhere"})
_MASK_DTYPES = (torch.bool, torch.uint8)
_MAKER_NAMES = frozenset({"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "repeat_interleave"})
_UNIQUE_KEYWORDS = {"sorted": True, "return_inverse": False, "return_counts": False, "dim": None}
_CONSECUTIVE_KEYWORDS = {"return_inverse": False, "return_counts": False, "dim": None}
_SLICE_DTYPES = (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def makes_data_sizes(fdef: ast.AST) -> bool:
    """Whether a helper calls what makes a size from the data (`t.nonzero()`,
    `masked_select`, or indexes with a comparison: `x[x > 0]`): DyCL compiles it itself
    (inlined), so that the size is made on the host."""
    for node in ast.walk(fdef):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            if name in _MAKER_NAMES:
                return True
        mask = node.slice if isinstance(node, ast.Subscript) else None
        if isinstance(mask, ast.Compare) or isinstance(mask, ast.UnaryOp) and isinstance(mask.op, ast.Invert):
            return True
    return False


def host_statement(c, stmt: ast.stmt, env: dict, live_after: set[str]) -> None:
    """A statement the host runs; one that makes a size from the data in a run it computes
    (`y = x[mask] * float(s)`) again, with that size made on the host."""
    ir_block = ir.InsertionPoint.current.block
    before, saved = len(ir_block.operations), dict(env)
    try:
        c.host_statement(stmt, env)
    except FrontendError as failure:
        if not isinstance(failure, DataSize) and not _splits_by_runtime_sizes(stmt, saved):
            raise  # (`torch.split(x, sizes)` of runtime ints: host slices, `_Lowering._split`)
        erase_after(ir_block, before)
        env.clear()
        env.update(saved)
        compile_statement(c, stmt, env, live_after, failure)


def compile_statement(c, stmt: ast.stmt, env: dict, live_after: set[str], refusal: DataSize) -> None:
    """Compile `stmt`, whose run made a size that depends on the data, with each call and
    mask that makes one computed first on the host (`refusal`: when it has none)."""
    scoped = dict(env)
    lowering = _Lowering(c, scoped)
    stmt_copy = copy.deepcopy(stmt)
    if isinstance(stmt_copy, ast.Assign) and isinstance(stmt_copy.value, ast.ListComp):
        stmt_copy.value = _unrolled(c, stmt_copy.value, env) or stmt_copy.value
    rewritten = lowering.visit(stmt_copy)
    value = getattr(rewritten, "value", None)
    if isinstance(rewritten, ast.Assign) and isinstance(value, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in value.elts):
        # `return out.sum(0), kept.size(0), x[mask].sum()`, `[self.experts[i](parts[i]) for i
        # in range(4)]` unrolled: each item on its own (sizes known only at run time that one
        # run cannot relate: each item sees fewer)
        value.elts = [lowering.bind(c.expression(e, scoped), e) if not isinstance(e, ast.Name) else e for e in value.elts]
    if not lowering.made:
        raise refusal
    ast.copy_location(rewritten, stmt)
    ast.fix_missing_locations(rewritten)
    try:
        names_only = isinstance(value, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in value.elts)
        if c._is_run_statement(rewritten, scoped, set()) and not names_only:  # (a display of names: no run)
            c.compile_run([rewritten], scoped, set(scoped) | live_after)
        else:
            c.host_statement(rewritten, scoped)
    except FrontendError as error:  # (quoting the user's statement, not the rewritten one)
        text, original = source_text(rewritten), source_text(stmt)
        raise type(error)(error.construct.replace(text, original), error.hint, file=error.file, line=error.line) from None
    for name, value in scoped.items():
        if not name.startswith(OPERAND_PREFIX) and env.get(name, V.UNDEF) is not value:
            env[name] = value


class _Lowering(ast.NodeTransformer):
    """The statement with each call that makes a data-dependent size and each mask in an
    index replaced by a name bound (in `env`) to the value the host computes; innermost
    first, in Python's evaluation order."""

    def __init__(self, c, env: dict):
        self.c, self.env = c, env
        self.made = False  # (whether anything was bound: else the statement is what failed)
        self.storing = False  # (inside an assignment's target: `rows[0][mask] = v` stores into the item)

    def visit_Assign(self, node: ast.Assign) -> ast.stmt:
        self.storing = True  # (the targets first, as `generic_visit` took them)
        try:
            node.targets = [self.visit(target) for target in node.targets]
        finally:
            self.storing = False
        node.value = self.visit(node.value)
        return node

    def visit_AugAssign(self, node: ast.AugAssign) -> ast.stmt:
        self.storing = True
        try:
            node.target = self.visit(node.target)
        finally:
            self.storing = False
        node.value = self.visit(node.value)
        return node

    def bind(self, value: V.EnvValue, where: ast.AST) -> ast.Name:
        self.made = True
        name = f"{OPERAND_PREFIX}_size{fresh_id()}"
        self.env[name] = value
        return ast.copy_location(ast.Name(name, ast.Load()), where)

    def visit_scoped(self, node: ast.expr) -> ast.expr:
        return node  # (evaluated in a scope of its own, or only on some paths: left as it is)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda = visit_scoped
    visit_IfExp = visit_BoolOp = visit_scoped

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        func = self.c._try_constant(node.func, self.env, quiet=True)
        method = node.func.attr if isinstance(node.func, ast.Attribute) and func is V.MISSING else None
        if func in _NONZERO_FUNCTIONS or method in _NONZERO_METHODS:
            source = node.args[0] if func in _NONZERO_FUNCTIONS and node.args else node.func.value if method else None
            if source is None or len(node.args) > (1 if method is None else 0) or any(k.arg != "as_tuple" for k in node.keywords):
                return node
            as_tuple = self._keyword(node, "as_tuple", False)
            tensor = self._tensor(source)
            if tensor is None:
                return node
            positions = nonzero(self.c, tensor, node)
            return self.bind(V.Tup(tuple(columns(self.c, positions, tensor.type.rank)), "tuple") if as_tuple else positions, node)
        if func is torch.where and len(node.args) == 1 and not node.keywords:
            tensor = self._tensor(node.args[0])
            if tensor is None:
                return node
            return self.bind(V.Tup(tuple(columns(self.c, nonzero(self.c, tensor, node), tensor.type.rank)), "tuple"), node)
        if func is torch.masked_select or method == "masked_select":
            operands = node.args if func is torch.masked_select else [node.func.value, *node.args]
            if len(operands) != 2 or node.keywords:
                return node
            tensor, mask = (self._tensor(o) for o in operands)
            if tensor is None or mask is None:
                return node
            return self.bind(masked_select(self.c, tensor, mask, node), node)
        for function, name in ((torch.unique, "unique"), (torch.unique_consecutive, "unique_consecutive")):
            if func is function or method == name:
                source = node.args[0] if func is function and node.args else node.func.value if method else None
                return self._unique(node, source, node.args[1:] if func is function else node.args,
                                    consecutive=function is torch.unique_consecutive)
        if func is torch.repeat_interleave or method == "repeat_interleave":
            operands = node.args if func is torch.repeat_interleave else [node.func.value, *node.args]
            return self._repeat_interleave(node, operands)
        if func is torch.split or method == "split":
            operands = node.args if func is torch.split else [node.func.value, *node.args]
            return self._split(node, operands, method=func is not torch.split)
        if func in (torch.cat, torch.concat, torch.concatenate):
            return self._cat(node)
        return node

    def _split(self, node: ast.Call, operands: list, method: bool) -> ast.expr:
        """`torch.split(x, sizes, dim=0)` with sizes runtime ints (the MoE dispatcher's
        `torch.split(inp_exp, self._part_sizes, dim=0)` of `(gates > 0).sum(0).tolist()`): one
        host slice per piece, each of a runtime length."""
        names = ["self", "split_size", "dim"] if method else ["tensor", "split_size_or_sections", "dim"]
        keywords = {k.arg: k.value for k in node.keywords}
        if any(isinstance(o, ast.Starred) for o in operands) or len(operands) > 3 or set(keywords) - set(names):
            return node
        arguments = dict(zip(names, operands))
        if set(arguments) & set(keywords):
            return node
        arguments.update(keywords)
        if names[1] not in arguments:
            return node
        tensor = self._tensor(arguments[names[0]])
        if tensor is None:
            return node
        sizes = _items_of(self.c.expression(arguments[names[1]], self.env))
        if sizes is None:
            return node  # (a chunk size, or sizes known here: export splits it)
        if not all(isinstance(i, V.Dyn) and i.type == V.INT or isinstance(i, V.Const) and type(i.value) is int for i in sizes):
            return node
        if not any(isinstance(i, V.Dyn) for i in sizes):
            return node
        dim = self.c._try_constant(arguments["dim"], self.env, quiet=True) if "dim" in arguments else 0
        rank = tensor.type.rank
        if not (type(dim) is int and rank and -rank <= dim < rank):
            raise self.c.error(node, f"`{source_text(node)}` with `dim` computed at run time or outside the tensor's dims",
                               "pass `dim=` a constant dim of the tensor")
        return self.bind(V.Tup(tuple(split_with_sizes(self.c, tensor, sizes, dim % rank, node)), "tuple"), node)

    def _cat(self, node: ast.Call) -> ast.expr:
        """`torch.cat(expert_out, 0)` of tensors whose lengths along `dim` are known only at
        run time, each its own (the outputs of experts given the rows routed to them): on
        the host, which needs no sub-DNN for every combination of sizes 0, 1 and more."""
        keywords = {k.arg: k.value for k in node.keywords}
        if set(keywords) - {"tensors", "dim", "axis"} or any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) > 2:
            return node
        arguments = dict(zip(["tensors", "dim"], node.args))
        if set(arguments) & set(keywords) or "axis" in keywords and "dim" in arguments:
            return node
        arguments.update({"dim" if k == "axis" else k: v for k, v in keywords.items()})
        if "tensors" not in arguments:
            return node
        items = _items_of(self.c.expression(arguments["tensors"], self.env))
        dim = self.c._try_constant(arguments["dim"], self.env, quiet=True) if "dim" in arguments else 0
        if items is None or len(items) < 2 or type(dim) is not int:
            return node
        tensors = items
        if not all(isinstance(t, V.Dyn) and V.is_tensor_type(t.type) and t.type.shape is not None and isinstance(t.example, torch.Tensor) for t in tensors):
            return node
        ranks = {t.type.rank for t in tensors}
        if len(ranks) != 1 or not (next(iter(ranks)) and -next(iter(ranks)) <= dim < next(iter(ranks))):
            return node
        dim %= next(iter(ranks))
        others = {tuple(d for k, d in enumerate(t.type.shape) if k != dim) for t in tensors}
        if len(others) != 1 or None in next(iter(others)) or len({t.example.dtype for t in tensors}) != 1:
            return node  # (eager's own checks, or a promotion: the run's)
        if sum(t.type.shape[dim] is None for t in tensors) < 2:
            return node
        return self.bind(cat(self.c, tensors, dim), node)

    def _unique(self, node: ast.Call, source: ast.expr | None, positional: list, consecutive: bool = False) -> ast.expr:
        """`torch.unique(x, return_inverse=True, return_counts=True)`, `x.unique()`: numpy's
        `np.unique` on the host, which sorts as torch does (NaNs last, each its own value);
        of `dim=d`, the slices along d (integers and bools). `torch.unique_consecutive(x)`:
        its runs, found on the host. The flags may be passed by position, in torch's order."""
        accepted = _CONSECUTIVE_KEYWORDS if consecutive else _UNIQUE_KEYWORDS
        keywords = [*(ast.keyword(name, arg) for name, arg in zip(accepted, positional)), *node.keywords]
        named = [k.arg for k in keywords]
        if (source is None or len(positional) > len(accepted) or any(isinstance(a, ast.Starred) for a in positional)
                or any(name not in accepted for name in named) or len(set(named)) < len(named)):
            return node
        tensor = self._tensor(source)
        if tensor is None:
            return node
        options = {name: self._keyword(node, name, default, keywords) for name, default in accepted.items()}
        dim = options["dim"]
        rank = tensor.type.rank
        if dim is not None and not (type(dim) is int and rank and -rank <= dim < rank):
            raise self.c.error(node, f"`{source_text(node)}` with `dim={dim!r}` of a {tensor.type.rank}-d tensor", "pass a dim of the tensor")
        if dim is not None and not consecutive and tensor.example.dtype not in _SLICE_DTYPES:
            raise self.c.error(node, f"`{source_text(node)}` with `dim=` of {str(tensor.example.dtype).removeprefix('torch.')} values, "
                               "whose order of slices holding NaN PyTorch does not define as numpy does",
                               "take the unique slices of an integer tensor (`.long()` of labels), or use `dim=None`")
        if not options.get("sorted", True):
            raise self.c.error(node, f"`{source_text(node)}` with `sorted=False`, whose order PyTorch leaves open",
                               "pass `sorted=True` (the default): the compiled model then gives PyTorch's order")
        if consecutive:
            values, inverse, counts = unique_consecutive(self.c, tensor, dim, node)
        elif dim is not None:
            values, inverse, counts = unique_dim(self.c, tensor, dim, node)
        else:
            values, inverse, counts = unique(self.c, tensor)
        made = [values] + [v for v, wanted in ((inverse, options["return_inverse"]), (counts, options["return_counts"])) if wanted]
        return self.bind(made[0] if len(made) == 1 else V.Tup(tuple(made), "tuple"), node)

    def _repeat_interleave(self, node: ast.Call, operands: list) -> ast.expr:
        """`torch.repeat_interleave(x, repeats, dim=d)` with a tensor of repeats (an int's
        size export knows), and `torch.repeat_interleave(repeats)`: numpy's `np.repeat`."""
        keywords = {k.arg: k.value for k in node.keywords}
        if set(keywords) - {"repeats", "dim"} or any(isinstance(o, ast.Starred) for o in operands):
            return node
        if len(operands) == 1 and "repeats" in keywords:
            operands = [*operands, keywords.pop("repeats")]
        if len(operands) == 3 and "dim" not in keywords:
            keywords["dim"] = operands.pop()
        if not 1 <= len(operands) <= 2:
            return node
        tensors = [self._tensor(o) for o in operands]
        if tensors[-1] is None or tensors[-1].example.dtype not in (torch.int64, torch.int32) or any(t is None for t in tensors):
            return node  # (an int's repeats: a size export knows)
        dim = self.c._try_constant(keywords["dim"], self.env, quiet=True) if "dim" in keywords else None
        if dim is V.MISSING or not (dim is None or type(dim) is int):
            raise self.c.error(node, f"`{source_text(node)}` with `dim` computed at run time", "pass `dim=` a constant")
        if len(tensors) == 1:
            if "dim" in keywords:
                return node
            return self.bind(repeated_indices(self.c, tensors[0], node), node)
        return self.bind(repeat_interleave(self.c, tensors[0], tensors[1], dim, node), node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.expr:
        self.generic_visit(node)
        items = _items_of(self.env.get(node.value.id)) if isinstance(node.value, ast.Name) and not self.storing else None
        if items is not None and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int and -len(items) <= node.slice.value < len(items):
            # `expert_inputs[i]` of a tuple of tensors each of its own runtime length: the
            # item alone (a run given the whole tuple would take every length)
            return self.bind(items[node.slice.value], node)
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        replaced: list[ast.expr] = []
        masks, indexed = {}, False
        for part in parts:
            if isinstance(part, (ast.Slice, ast.Constant, ast.Starred)):
                replaced.append(part)
                continue
            value = self.c.expression(part, self.env)
            if host_numpy.is_numpy(value):
                return node  # (numpy indexing is host_numpy's)
            tensor = isinstance(value, V.Dyn) and V.is_tensor_type(value.type) and isinstance(value.example, torch.Tensor)
            indexed |= tensor
            if tensor and value.example.dtype in _MASK_DTYPES and value.example.dim() > 0:
                masks[len(replaced)] = (value, part)
            elif not (isinstance(part, ast.Name) or isinstance(value, V.Const)):
                part = self.bind(value, part)  # (computed once, here)
            replaced.append(part)
        store = isinstance(node.ctx, ast.Store)
        if masks:
            holder = self.c.expression(_as_load(node.value), self.env)
            if host_numpy.is_numpy(holder) or not (isinstance(holder, V.Dyn) and V.is_tensor_type(holder.type) and holder.type.shape is not None):
                return node
            if not isinstance(node.value, ast.Name):
                if store:
                    return node  # (a store into what a name does not hold: refused as it was)
                node.value = self.bind(holder, node.value)
            replaced = self._positions(node, holder, replaced, masks)
        if any(a is not b for a, b in zip(replaced, parts)) or len(replaced) != len(parts):
            node.slice = ast.Tuple(replaced, ast.Load()) if len(replaced) > 1 or isinstance(node.slice, ast.Tuple) else replaced[0]
        if indexed and not store:
            # a gather of its own: its size is one runtime dim, not one for each index
            return self.bind(self.c.expression(node, self.env), node)
        return node

    def _positions(self, node: ast.Subscript, holder: V.Dyn, parts: list[ast.expr], masks: dict) -> list[ast.expr]:
        """The index parts with each mask replaced by its nonzero positions, one index
        tensor per mask dim."""
        dims = _indexed_dims(parts, {k: mask.type.rank for k, (mask, _) in masks.items()})
        expanded: list[ast.expr] = []
        for k, part in enumerate(parts):
            if k not in masks:
                expanded.append(part)
                continue
            mask, where = masks[k]
            if dims is None:
                raise self.c.error(where, f"`{source_text(node)}` indexes with a boolean mask after `...` or `None`", "index the mask's dims first (`x[mask]`, `x[:, mask]`)")
            check_mask_shape(self.c, holder, mask, dims[k], node)
            positions = nonzero(self.c, mask, where)
            expanded.extend(self.bind(column, where) for column in columns(self.c, positions, mask.type.rank))
        return expanded

    def _tensor(self, node: ast.expr) -> V.Dyn | None:
        value = self.c.expression(node, self.env)
        if host_numpy.is_numpy(value):
            return None  # (numpy's `a.nonzero()` is a tuple of arrays: host_numpy's)
        if isinstance(value, V.Dyn) and V.is_tensor_type(value.type) and value.type.shape is not None and isinstance(value.example, torch.Tensor):
            return value
        return None

    def _keyword(self, node: ast.Call, name: str, default, keywords: list[ast.keyword] | None = None):
        for keyword in node.keywords if keywords is None else keywords:
            if keyword.arg == name:
                value = self.c._try_constant(keyword.value, self.env, quiet=True)
                if value is V.MISSING:
                    raise self.c.error(node, f"`{source_text(node)}` with `{name}` computed at run time", f"pass `{name}=` a constant")
                return value
        return default


def _unrolled(c, comprehension: ast.ListComp, env: dict) -> ast.List | None:
    """`[self.experts[i](parts[i]) for i in range(4)]` over ints known here, without a
    filter: the list display of its items (each then computed on its own), else None."""
    if len(comprehension.generators) != 1:
        return None
    generator = comprehension.generators[0]
    if generator.ifs or generator.is_async or not isinstance(generator.target, ast.Name):
        return None
    iterated = c._try_constant(generator.iter, env, quiet=True)
    if not isinstance(iterated, (range, list, tuple)) or not all(type(i) is int for i in iterated) or len(iterated) > 64:
        return None
    name = generator.target.id

    class Substitute(ast.NodeTransformer):
        def __init__(self, value: int):
            self.value = value

        def visit_Name(self, node: ast.Name) -> ast.expr:
            return ast.copy_location(ast.Constant(self.value), node) if node.id == name else node

    items = [Substitute(i).visit(copy.deepcopy(comprehension.elt)) for i in iterated]
    return ast.copy_location(ast.List(items, ast.Load()), comprehension)


def _splits_by_runtime_sizes(stmt: ast.stmt, env: dict) -> bool:
    """Whether `stmt` splits by sizes some of which are runtime ints, a list or tuple a
    variable holds (`torch.split(inp_exp, self._part_sizes, dim=0)`)."""
    for node in ast.walk(stmt):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "split"):
            continue
        function = isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"
        positional = node.args[1:2] if function else node.args[:1]
        sizes = [*positional, *(k.value for k in node.keywords if k.arg in ("split_size_or_sections", "split_size"))]
        for size in sizes:
            items = _items_of(env.get(size.id)) if isinstance(size, ast.Name) else None
            if items and any(isinstance(i, V.Dyn) and i.type == V.INT for i in items):
                return True
    return False


def _items_of(value) -> list | None:
    """The items of a list or tuple whose length is known here (a display, a list built in
    straight-line code), else None."""
    if isinstance(value, V.Tup) and value.kind in ("list", "tuple"):
        return list(value.items)
    if isinstance(value, lists.StaticList):
        return list(value.items)
    return None


def _as_load(node: ast.expr) -> ast.expr:
    node = copy.deepcopy(node)
    for sub in ast.walk(node):
        if hasattr(sub, "ctx"):
            sub.ctx = ast.Load()
    return node


def _indexed_dims(parts: list[ast.expr], mask_ranks: dict[int, int]) -> list[int] | None:
    """The first dim of the holder each index part indexes (a mask indexes as many as it
    has); None after an `...` or `None` (the mask's dims would count from the end)."""
    dims, dim = [], 0
    for k, part in enumerate(parts):
        if isinstance(part, ast.Constant) and (part.value is None or part.value is Ellipsis):
            return None
        dims.append(dim)
        dim += mask_ranks.get(k, 1)
    return dims


def nonzero(c, tensor: V.Dyn, node: ast.AST) -> V.Dyn:
    """`torch.nonzero(tensor)` on the host: `[?, rank]` int64."""
    if tensor.type.rank == 0:
        raise c.error(node, f"`{source_text(node)}` of a 0-d tensor", "take the nonzero positions of a tensor of at least one dim")
    example = torch.nonzero(tensor.example)
    return c.builder.host_op(NONZERO, [tensor], V.tensor_type([None, tensor.type.rank], torch.int64), example)


def columns(c, positions: V.Dyn, rank: int) -> list[V.Dyn]:
    """The index tensors `positions[:, d]` of each dim, `[?]` int64 (views on the host)."""
    made = []
    for d in range(rank):
        operands = [positions, c.builder.constant(1), c.builder.constant(d)]
        made.append(c.builder.host_op("torch.aten.select.int", operands, positions.type.with_shape([None]), positions.example[:, d]))
    return made


def masked_select(c, tensor: V.Dyn, mask: V.Dyn, node: ast.AST) -> V.Dyn:
    """`torch.masked_select(tensor, mask)` on the host: `[?]` of the tensor's dtype."""
    if mask.example.dtype not in _MASK_DTYPES:
        raise c.error(node, f"`{source_text(node)}` with a {str(mask.example.dtype).removeprefix('torch.')} mask", "select with a boolean mask")
    try:
        example = torch.masked_select(tensor.example, mask.example)
    except RuntimeError as error:
        raise c.error(node, f"`{source_text(node)}`: {str(error).splitlines()[0]}") from None
    if None in tensor.type.shape or None in mask.type.shape:
        raise c.error(node, f"`{source_text(node)}` of tensors whose shapes are known only at run time",
                      "select from tensors of a size known when the model is imported (`x[mask]` selects rows of any count)")
    return c.builder.host_op(MASKED_SELECT, [tensor, mask], V.tensor_type([None], tensor.example.dtype), example)


def unique(c, tensor: V.Dyn) -> tuple[V.Dyn, V.Dyn, V.Dyn]:
    """`torch._unique2(tensor, sorted=True, return_inverse=True, return_counts=True)` on
    the host: the sorted values `[?]`, the inverse (int64, of the tensor's shape), the
    counts `[?]` int64."""
    example = torch.unique(tensor.example, return_inverse=True, return_counts=True)
    types = [V.tensor_type([None], tensor.example.dtype), V.tensor_type(list(tensor.type.shape), torch.int64), V.tensor_type([None], torch.int64)]
    flags = [c.builder.constant(True) for _ in range(3)]
    op = c.builder.op(UNIQUE, [tensor.value, *(f.value for f in flags)], types)
    return tuple(V.Dyn(result, type_, e) for result, type_, e in zip(op.results, types, example))


def unique_dim(c, tensor: V.Dyn, dim: int, node: ast.AST) -> tuple[V.Dyn, V.Dyn, V.Dyn]:
    """`torch.unique_dim(tensor, dim, sorted=True, return_inverse=True, return_counts=True)`
    on the host: the sorted slices (dim `dim` of a runtime size), the inverse
    `[tensor.shape[dim]]` int64, the counts `[?]` int64."""
    try:
        example = torch.unique(tensor.example, dim=dim, return_inverse=True, return_counts=True)
    except RuntimeError as error:
        raise c.error(node, f"`{source_text(node)}`: {str(error).splitlines()[0]}") from None
    shape = list(tensor.type.shape)
    length, shape[dim] = shape[dim], None
    types = [tensor.type.with_shape(shape), V.tensor_type([length], torch.int64), V.tensor_type([None], torch.int64)]
    operands = [c.builder.constant(dim)] + [c.builder.constant(True) for _ in range(3)]
    op = c.builder.op(UNIQUE_DIM, [tensor.value, *(o.value for o in operands)], types)
    return tuple(V.Dyn(result, type_, e) for result, type_, e in zip(op.results, types, example))


def unique_consecutive(c, tensor: V.Dyn, dim: int | None, node: ast.AST) -> tuple[V.Dyn, V.Dyn, V.Dyn]:
    """`torch.unique_consecutive(tensor, return_inverse=True, return_counts=True, dim=dim)`
    on the host: the first value of each run `[?]` (of dim: the first slice, dim `dim` of a
    runtime size), the inverse (int64, of the tensor's shape; of dim: `[tensor.shape[dim]]`),
    the counts `[?]` int64."""
    try:
        example = torch.unique_consecutive(tensor.example, return_inverse=True, return_counts=True, dim=dim)
    except RuntimeError as error:
        raise c.error(node, f"`{source_text(node)}`: {str(error).splitlines()[0]}") from None
    if dim is None:
        types = [V.tensor_type([None], tensor.example.dtype), V.tensor_type(list(tensor.type.shape), torch.int64)]
    else:
        shape = list(tensor.type.shape)
        length, shape[dim] = shape[dim], None
        types = [tensor.type.with_shape(shape), V.tensor_type([length], torch.int64)]
    types.append(V.tensor_type([None], torch.int64))
    operands = [c.builder.constant(True), c.builder.constant(True), c.builder.constant(dim)]
    op = c.builder.op(UNIQUE_CONSECUTIVE, [tensor.value, *(o.value for o in operands)], types)
    return tuple(V.Dyn(result, type_, e) for result, type_, e in zip(op.results, types, example))


def repeat_interleave(c, tensor: V.Dyn, repeats: V.Dyn, dim: int | None, node: ast.AST) -> V.Dyn:
    """`torch.repeat_interleave(tensor, repeats, dim)` on the host (`np.repeat`): the
    repeated dim is a runtime dim; of dim None, the flattened tensor's."""
    try:
        example = torch.repeat_interleave(tensor.example, repeats.example, dim=dim)
    except (RuntimeError, IndexError) as error:
        raise c.error(node, f"`{source_text(node)}`: {str(error).splitlines()[0]}") from None
    if dim is None:  # (numpy's `axis=None` flattens too)
        shape = [None]
    else:
        dim %= max(tensor.type.rank, 1)
        shape = list(tensor.type.shape)
        shape[dim] = None
    operands = [tensor, repeats, c.builder.constant(dim), c.builder.constant(None)]
    return c.builder.host_op(REPEAT_INTERLEAVE, operands, tensor.type.with_shape(shape), example)


def repeated_indices(c, repeats: V.Dyn, node: ast.AST) -> V.Dyn:
    """`torch.repeat_interleave(repeats)` on the host: each index `repeats[i]` times, `[?]`
    of the repeats' dtype."""
    try:
        example = torch.repeat_interleave(repeats.example)
    except RuntimeError as error:
        raise c.error(node, f"`{source_text(node)}`: {str(error).splitlines()[0]}") from None
    return c.builder.host_op(REPEATED_INDICES, [repeats, c.builder.constant(None)], V.tensor_type([None], repeats.example.dtype), example)


def split_with_sizes(c, tensor: V.Dyn, sizes: list, dim: int, node: ast.AST) -> list[V.Dyn]:
    """`torch.split(tensor, sizes, dim)` with runtime int sizes: a host slice per piece,
    after eager's check that the sizes are not negative and add up to the dim's size."""
    builder = c.builder
    sizes = [builder.materialize(s) for s in sizes]
    length = builder.host_op("torch.aten.size.int", [tensor, builder.constant(dim)], V.INT, tensor.example.size(dim))
    checks, start, pieces = [], builder.constant(0), []
    shape = list(tensor.type.shape)
    shape[dim] = None
    for size in sizes:
        checks.append(builder.host_op("torch.aten.ge.int", [size, builder.constant(0)], V.BOOL, size.example >= 0))
        end = builder.host_op("torch.aten.add.int", [start, size], V.INT, start.example + size.example)
        held = 0 <= start.example <= end.example <= tensor.example.size(dim)  # (else the check below raises)
        example = tensor.example.narrow(dim, start.example, size.example) if held else tensor.example.narrow(dim, 0, 0)
        operands = [tensor, builder.constant(dim), start, end, builder.constant(1)]
        pieces.append(builder.host_op("torch.aten.slice.Tensor", operands, tensor.type.with_shape(shape), example))
        start = end
    checks.append(builder.host_op("torch.aten.eq.int", [start, length], V.BOOL, start.example == length.example))
    valid = functools.reduce(lambda a, b: builder.host_op("torch.aten.__and__.bool", [a, b], V.BOOL, a.example and b.example), checks)
    c.runtime_check(valid, node, f"`{source_text(node)}`: split_with_sizes expects split_sizes to be non-negative and to sum exactly to "
                    f"the size of the tensor at dimension {dim}")
    return pieces


def cat(c, tensors: list[V.Dyn], dim: int) -> V.Dyn:
    """`torch.cat(tensors, dim)` on the host (numpy's concatenate): the length along `dim`
    is a runtime dim."""
    shape = list(tensors[0].type.shape)
    shape[dim] = None
    items = lists.static_list(c, tensors)
    example = torch.cat([t.example for t in tensors], dim)
    return c.builder.host_op("torch.aten.cat", [items, c.builder.constant(dim)], tensors[0].type.with_shape(shape), example)


def check_mask_shape(c, holder: V.Dyn, mask: V.Dyn, first: int, node: ast.AST) -> None:
    """Eager raises where a mask's shape differs from the dims it indexes; an index tensor
    would not: the dims known only at run time are checked there."""
    shape, indexed = mask.type.shape, holder.type.shape[first : first + mask.type.rank]
    message = f"`{source_text(node)}`: the shape of the mask does not match the shape of the indexed tensor"
    if len(indexed) != len(shape):
        raise c.error(node, f"`{source_text(node)}` indexes {holder.type.rank} dims with a {mask.type.rank}-d mask from dim {first}")
    for d, (a, b) in enumerate(zip(shape, indexed)):
        if a is not None and b is not None:
            if a != b:
                raise c.error(node, message)
            continue
        sizes = [
            c.builder.host_op("torch.aten.size.int", [value, c.builder.constant(dim)], V.INT, value.example.shape[dim])
            for value, dim in ((mask, d), (holder, first + d))
        ]
        same = c.builder.host_op("torch.aten.eq.int", sizes, V.BOOL, sizes[0].example == sizes[1].example)
        c.runtime_check(same, node, message)


__all__ = ["compile_statement", "host_statement", "makes_data_sizes"]
