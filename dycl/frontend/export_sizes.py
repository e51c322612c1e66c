"""The sizes and ints of an exported run: its dims known only at run time, grouped by size
with the range of sizes export assumed for each, and the refusals where a size depends on
the data or export specialized an int input.
"""

from __future__ import annotations

import re
from typing import Any

import torch
from torch.export.graph_signature import InputKind


class SpecializedInput(Exception):
    """Export replaced a runtime int input by its example value (it is 0 or 1, or was used
    where the graph needs a constant): the run would be right on this example only."""

    def __init__(self, position: int):
        super().__init__(position)
        self.position = position


def _user_inputs(program) -> list[tuple[object, object]]:
    """(input spec, placeholder node or None) of each user input, in the run's order."""
    placeholders = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
    return [(spec, placeholders.get(getattr(spec.arg, "name", None)))
            for spec in program.graph_signature.input_specs if spec.kind == InputKind.USER_INPUT]


def runtime_size_ranges(program) -> tuple[list[list[tuple[int, int | None]]], list[tuple[int, int | None]]]:
    """The symbolic dims of the program's tensor inputs, grouped by their size symbol, and
    the range of sizes export assumed for each group (lowest, highest or None). An int
    input joins its symbol's group as (position, None); an int alone in its group counts
    where export assumed it is not 0 or 1 (`torch.zeros(1, n) + x` broadcasts nothing only
    for n >= 2): the run is then right for n >= 2 only, as for a dim."""
    groups: dict[str, list[tuple[int, int | None]]] = {}
    ints: dict[str, list[tuple[int, None]]] = {}
    symbols: dict[str, Any] = {}
    for position, (_, node) in enumerate(_user_inputs(program)):
        value = node.meta.get("val") if node is not None else None
        if isinstance(value, torch.SymInt) and value.node.expr.free_symbols:
            assumed = program.range_constraints.get(value.node.expr)
            if str(value.node.expr) in groups or assumed is not None and assumed.lower > 0:
                groups.setdefault(str(value.node.expr), [])
                symbols[str(value.node.expr)] = value.node.expr
            ints.setdefault(str(value.node.expr), []).append((position, None))
        if not isinstance(value, torch.Tensor):
            continue
        for dim, size in enumerate(value.shape):
            if isinstance(size, torch.SymInt) and size.node.expr.free_symbols:
                groups.setdefault(str(size.node.expr), []).append((position, dim))
                symbols[str(size.node.expr)] = size.node.expr
    members = [[*members, *ints.get(symbol, [])] for symbol, members in groups.items()]
    return members, [_assumed_range(program, symbols[symbol]) for symbol in groups]


def _assumed_range(program, expr) -> tuple[int, int | None]:
    """The sizes export assumed a group's size expression takes: (2, None), the sizes of
    at least 2 that the size tests split off, unless export bounded it by comparing it with
    a constant. A compound size (`2 * s`) holds where each of its symbols' range does; it
    is reported as (2, None) only when none is bounded."""
    free = list(expr.free_symbols)
    bounds = [program.range_constraints.get(symbol) for symbol in free]
    if len(free) != 1 or expr != free[0]:
        bounded = any(b is not None and (_finite(b.lower) and int(b.lower) > 2 or _finite(b.upper)) for b in bounds)
        return (3, 2) if bounded else (2, None)  # (an empty range: no interval is sound)
    bound = bounds[0]
    if bound is None:
        return (2, None)
    lower = max(int(bound.lower), 2) if _finite(bound.lower) else 2
    return lower, int(bound.upper) if _finite(bound.upper) else None


def _finite(bound) -> bool:
    """Whether a range bound is a number (sympy says `int_oo` is finite)."""
    from torch.utils._sympy.numbers import int_oo

    return bound not in (int_oo, -int_oo) and bool(bound.is_finite)


class DataDependentShape(Exception):
    """A tensor inside a run whose size depends on tensor values (`x[mask]`, `nonzero`, a
    size from `.tolist()`). `frames`: the (file, line) of each `forward` frame export
    recorded for the op that made it, outermost first."""

    def __init__(self, op: str, from_mask: bool, frames: list[tuple[str, int]]):
        super().__init__(op)
        self.op, self.from_mask, self.frames = op, from_mask, frames


# Ops whose result size is the count of selected items (the others take a size as an argument).
_SELECTING_OPS = frozenset({
    "aten.nonzero.default", "aten.nonzero_numpy.default", "aten.where.default", "aten.masked_select.default",
    "aten.index.Tensor", "aten._unique2.default",
    "aten.unique_consecutive.default", "aten.unique_dim.default", "aten.repeat_interleave.Tensor",
    "aten.repeat_interleave.self_Tensor",
})
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in forward')


def check_static_sizes(program) -> None:
    """Sub-DNNs have static shapes: a size export could only name by an unbacked symbol (it
    depends on the data) cannot be compiled; refuse it here, at the user's statement."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    for node in program.graph.nodes:
        values = node.meta.get("val")
        values = values if isinstance(values, (tuple, list)) else [values]  # (`_unique2` makes three)
        if any(isinstance(value, torch.Tensor) and free_unbacked_symbols(value) for value in values):
            frames = [(m["file"], int(m["line"])) for m in _FRAME.finditer(node.meta.get("stack_trace") or "")]
            raise DataDependentShape(str(node.target), str(node.target) in _SELECTING_OPS, frames)


class IntArithmetic(SpecializedInput):
    """A runtime int is a number in tensor math (`h * k`): a sub-DNN cannot take it."""


# What a symbolic int may feed inside a run: indices, sizes and int arithmetic on them.
_INDEX_OPS = frozenset({
    torch.ops.aten.select.int, torch.ops.aten.slice.Tensor, torch.ops.aten.narrow.default,
    torch.ops.aten.sym_size.int, torch.ops.aten.view.default, torch.ops.aten.reshape.default,
    torch.ops.aten.expand.default, torch.ops.aten.zeros.default, torch.ops.aten.ones.default,
    torch.ops.aten.full.default, torch.ops.aten.arange.default, torch.ops.aten.arange.start,
})


def check_int_inputs_used(program, fixed_ints: frozenset[int] = frozenset()) -> None:
    """A runtime int the graph never reads was specialized to its example value; one used
    as a number in tensor math must enter as a tensor. (`fixed_ints`: the positions of ints
    the run is captured for one value of, which export may specialize.)"""
    from torch.export.graph_signature import SymIntArgument

    for position, (spec, node) in enumerate(_user_inputs(program)):
        if not isinstance(spec.arg, SymIntArgument) or position in fixed_ints:
            continue
        value = node.meta.get("val")
        if not node.users or (isinstance(value, torch.SymInt) and not value.node.expr.free_symbols):
            # unused, or replaced by its example: export specializes an int whose example
            # is 0 or 1 when a guard needs its value (`x[:, i] += v` stores at a constant i)
            raise SpecializedInput(position)
        pending, seen = list(node.users), set()
        while pending:
            user = pending.pop()
            if user in seen:
                continue
            seen.add(user)
            if not isinstance(user.target, torch._ops.OpOverload):  # operator.add & co. on ints
                # (`n / 4` is a SymFloat, and what reads it reads the int)
                if user.op == "call_function" and isinstance(user.meta.get("val"), _SYMBOLIC_NUMBERS):
                    pending.extend(user.users)
                continue
            if user.target not in _INDEX_OPS:
                raise IntArithmetic(position)


_SYMBOLIC_NUMBERS = (torch.SymInt, torch.SymFloat, torch.SymBool)


def symbolic_number(arg) -> torch.SymInt | torch.SymFloat | None:
    value = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
    if isinstance(value, (torch.SymInt, torch.SymFloat)) and value.node.expr.free_symbols:
        return value
    return None
