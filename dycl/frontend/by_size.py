"""Runs whose inputs have sizes known only at run time, called where they hold.

Export assumes such a size is at least 2 and may compare it with constants (`x[:, -4:]`
is 4 long from 4 columns on): a captured run holds only for the sizes export assumed
(`CapturedRun.size_ranges`). `splice` calls the run behind host tests of the sizes (0, 1,
at least 2, and the bounds export found), capturing it again for the sizes it does not hold
for; a size no capture serves raises at run time (`error_arm`), never a run outside its
range. `c` is the FunctionCompiler."""

from __future__ import annotations

import functools

import torch
from torch_mlir import ir

from dycl.frontend import runs
from dycl.frontend import values as V
from dycl.frontend.capture import CapturedRun
from dycl.frontend.desugar import source_text
from dycl.frontend.errors import DataSize

MAX_SIZE_RANGES = 8
"""At most this many captures serve one statement past the sizes export bounded (beyond,
the statement raises at run time for the sizes left: never a run outside its range)."""


def ties_by_example(general: CapturedRun, flat_inputs, names: list[str]) -> dict[tuple[int, int], int]:
    """Where a run has more groups of runtime dims than `splice` serves, the same dim of the
    leaves of one value (one variable: a decoder's cache, every layer's keys and values)
    where their sizes are equal in the example, tied ((input, dim) -> tie) so that export
    takes each tie for one size, though no op of the run says they are; empty where tying
    leaves too many groups. `splice` calls the tied run only where the tied sizes are equal
    at run time (elsewhere it raises)."""
    groups = general.runtime_sizes
    if len(groups) <= 2:
        return {}
    merged: dict[tuple, list[list[tuple[int, int]]]] = {}
    for n, group in enumerate(groups):
        k, d = group[0]
        key = (n,) if d is None else (names[k], d, flat_inputs[k].example.shape[d])  # (an int stays apart)
        merged.setdefault(key, []).append(group)
    if len(merged) > 2:
        return {}
    return {where: tie for tie, same in enumerate(merged.values()) if len(same) > 1 for group in same for where in group}


def splice(c, stmts, general: CapturedRun, variant, flat_inputs, names: list[str],
           tied: dict[tuple[int, int], int] | None = None, untied: CapturedRun | None = None,
           ) -> tuple[CapturedRun, list[ir.Value]]:
    """Call a captured run whose inputs have dims known only at run time (`x[:k]`).

    Export assumes such a dim is at least 2 (`x.squeeze()` drops nothing, `x + y`
    broadcasts nothing), which is right only there. So each group of dims export found
    to be one size is tested at run time: all at least 2 calls the general run; else
    the run captured with that size 1 (or 0) is called, on inputs cast to that static
    shape (a group whose dims differ, 1 and 3, fails that cast loudly: never a silent
    broadcast). The results are joined (`[?, 8]`); a scalar result is a runtime value,
    unless every arm returns it as the same constant. A run captured with dims `tied` as
    one size (`ties_by_example`) is called where they are equal; elsewhere the run captured
    without the ties (`untied`) where every runtime size is at least 2, else it raises."""
    stmt = stmts[0]
    operands = [leaf.value for leaf in flat_inputs]
    groups = general.runtime_sizes
    if not groups:
        return general, c.capturer.splice(general.func_name, operands)
    if len(groups) > 2:
        if len(stmts) > 1:
            raise runs.SplitRun()  # (each statement alone may see fewer of them)
        raise DataSize.of(c.error(  # (data_sizes.py computes its indices first, where it can)
            stmt, f"`{source_text(stmt)}` computes with tensors of {len(groups)} unrelated sizes known only at run time",
            "keep at most two such sizes in one statement (split it)",
        ))

    def measure(group: list) -> list[V.Dyn]:
        return [flat_inputs[k] if d is None else c.builder.host_op(  # (an int is its own size)
            "torch.aten.size.int", [flat_inputs[k], c.builder.constant(d)], V.INT, flat_inputs[k].example.shape[d]) for k, d in group]

    def compare(name: str, size: V.Dyn, n: int) -> V.Dyn:
        return c.builder.host_op(f"torch.aten.{name}.int", [size, c.builder.constant(n)], V.BOOL,
                                    {"ge": size.example >= n, "gt": size.example > n, "lt": size.example < n}[name])

    def choose(sizes: list[int | None]) -> list[ir.Value]:
        if len(sizes) < len(groups):
            measured = measure(groups[len(sizes)])
            smallest = _smallest(c, measured)
            return c.select(compare("ge", smallest, 2), lambda: choose([*sizes, None]), lambda: c.select(
                compare("ge", measured[0], 1), lambda: choose([*sizes, 1]), lambda: choose([*sizes, 0])))
        fixed = {where: n for group, n in zip(groups, sizes) if n is not None for where in group}
        targets = {g: (2, None) for g, n in enumerate(sizes) if n is None}
        if not fixed:
            return within_ranges(general, fixed, {}, targets)
        try:
            chosen = variant(fixed)
        except Exception as failure:  # (an index the example gives is past this size: `x[:k][t]`)
            return error_arm(c, stmt, failure, fixed, names, general)
        return within_ranges(chosen, fixed, {}, targets)

    def within_ranges(run: CapturedRun, fixed: dict, resized: dict, targets: dict) -> list[ir.Value]:
        """Call `run` where it holds for every size of `targets` (group -> the sizes,
        lowest and highest or None, this arm serves); where export bounded a size by
        the example (`x[:, -4:]` is 4 long from 4 on, the size itself from 2 to 3),
        test it at run time and capture the run again at a size past the bound."""
        for g, (low, high) in targets.items():
            held_low, held_high = run.range_of(g)
            if held_low <= low and (held_high is None or high is not None and held_high >= high):
                continue
            if held_high is not None and held_high < held_low:
                failure = RuntimeError("export bounded a compound size by the example")
                return error_arm(c, stmt, failure, {where: f"{low} to {high or 'any'}" for where in groups[g]}, names, general)
            size = measure(groups[g])[0]

            def past(piece: tuple[int, int | None], example_size: int) -> list[ir.Value]:
                """The sizes of `piece` (of group `g`), which `run` does not hold for,
                from the run captured again at `example_size` (in `piece`)."""
                where = {position: example_size for position in groups[g]}
                attempts.append(piece)
                if len(attempts) > MAX_SIZE_RANGES:
                    failure = RuntimeError("export bounded a size by the example in more ways than DyCL splits")
                    return error_arm(c, stmt, failure, {position: f"{piece[0]} to {piece[1] or 'any'}" for position in groups[g]}, names, general)
                try:
                    again = variant(fixed, {**resized, **where})
                    held = again.range_of(g)[0] <= example_size <= (again.range_of(g)[1] or example_size)
                except Exception:  # (export made the size a constant: it holds at that size only)
                    held = False
                if held:  # (within_ranges records each run it calls in `arms`)
                    return within_ranges(again, fixed, {**resized, **where}, {**targets, g: piece})

                def exactly() -> list[ir.Value]:
                    try:
                        static = variant({**fixed, **where}, resized)
                    except Exception as failure:
                        return error_arm(c, stmt, failure, {**fixed, **where}, names, general)
                    return within_ranges(static, {**fixed, **where}, resized, {k: r for k, r in targets.items() if k != g})

                arm = exactly
                if piece[1] is None or example_size < piece[1]:
                    arm = functools.partial(c.select, compare("gt", size, example_size),
                                            functools.partial(past, (example_size + 1, piece[1]), example_size + 1), arm)
                if example_size > piece[0]:
                    arm = functools.partial(c.select, compare("lt", size, example_size),
                                            functools.partial(past, (piece[0], example_size - 1), example_size - 1), arm)
                return arm()

            inside = (max(low, held_low), held_high if high is None else min(high, held_high or high))
            arm = functools.partial(within_ranges, run, fixed, resized, {**targets, g: inside})
            if held_high is not None and (high is None or held_high < high):
                arm = functools.partial(c.select, compare("gt", size, held_high),
                                        functools.partial(past, (held_high + 1, high), held_high + 1), arm)
            if held_low > low:
                arm = functools.partial(c.select, compare("lt", size, held_low),
                                        functools.partial(past, (low, held_low - 1), held_low - 1), arm)
            return arm()
        if run is not general and (run.mutated_inputs != general.mutated_inputs or run.mutated_buffers != general.mutated_buffers
                                   or len(run.result_types) != len(general.result_types)):
            raise c.error(stmt, f"`{source_text(stmt)}` changes other tensors in place when a size is 0 or 1",
                             "compute new tensors instead of changing them in place")
        if run is not general:
            arms.append(run)
        cast = list(operands)
        for k, leaf in enumerate(flat_inputs):
            shape = [fixed.get((k, d), n) for d, n in enumerate(leaf.type.shape or ())] if V.is_tensor_type(leaf.type) else None
            if shape is not None and leaf.type.shape is not None and shape != list(leaf.type.shape):
                cast[k] = c.builder.cast(leaf, leaf.type.with_shape(shape)).value
        return c.capturer.splice(run.func_name, cast)

    def tied_sizes_equal() -> V.Dyn:
        tests = []
        for tie in sorted(set(tied.values())):
            first, *others = measure([where for where, t in tied.items() if t == tie])
            tests += [c.builder.host_op("torch.aten.eq.int", [first, other], V.BOOL, first.example == other.example) for other in others]
        return _all_true(c, tests)

    arms: list[CapturedRun] = []
    attempts: list = []  # (the captures past a bound export made: at most MAX_SIZE_RANGES)
    def unequal_sizes() -> list[ir.Value]:
        """The tied sizes differ: the run without ties where export's assumptions hold
        (every size at least 2, none bounded), else an error arm."""
        unequal = RuntimeError("it was captured for these sizes equal, as they are in the example, "
                               "or for all of its runtime sizes at least 2")
        fail = lambda: error_arm(c, stmt, unequal, {where: "unequal to the others" for where in tied}, names, general)  # noqa: E731
        groups = untied.runtime_sizes if untied is not None else []
        if not groups or any(untied.range_of(g) != (2, None) for g in range(len(groups))):
            return fail()
        smallest = _smallest(c, [size for group in groups for size in measure(group)])
        arms.append(untied)
        return c.select(compare("ge", smallest, 2), lambda: c.capturer.splice(untied.func_name, operands), fail)

    if tied:
        values = c.select(tied_sizes_equal(), lambda: choose([]), unequal_sizes)
    else:
        values = choose([])
    types = [V.parse_type(str(v.type)) for v in values]
    count = len(general.mutated_inputs)
    # a Python value every arm returns as the same constant stays one (`return h, 0, None`
    # of a block whose input has a size from the data: `if is_output:` still folds)
    constant = [general.constant[k] and all(general.same_constant(arm, k) for arm in arms) for k in range(len(types) - count)]
    joined = CapturedRun(general.func_name, types[count:], constant, general.mutated_inputs, types[:count],
                         constant_values=general.constant_values, mutated_buffers=general.mutated_buffers)
    return joined, values


def _smallest(c, sizes: list[V.Dyn]) -> V.Dyn:
    """The least of runtime sizes, computed on the host."""
    return functools.reduce(lambda a, b: c.builder.host_op("torch.prim.min.int", [a, b], V.INT, min(a.example, b.example)), sizes)


def _all_true(c, tests: list[V.Dyn]) -> V.Dyn:
    """Whether every host test holds."""
    return functools.reduce(lambda a, b: c.builder.host_op("torch.aten.__and__.bool", [a, b], V.BOOL, a.example and b.example), tests)


def error_arm(c, stmt, failure: Exception, fixed: dict, names: list[str], general: CapturedRun) -> list[ir.Value]:
    """The arm of a run that could not be captured for some size (0 or 1) of a runtime
    dim: it raises when the program takes it (it may never) and yields placeholders."""
    sizes = " and ".join(sorted({f"`{names[k]}` has size {n} in dim {d}" for (k, d), n in fixed.items()}))
    reason = str(failure).strip().splitlines()[0] if str(failure).strip() else type(failure).__name__
    message = str(c.error(stmt, f"`{source_text(stmt)}` cannot run when {sizes} (export failed for that size: {reason})"))
    ir.Operation.create("dycl.error", attributes={"message": ir.StringAttr.get(message)})
    values = []
    for type_ in [*general.mutated_types, *general.result_types]:
        if V.is_tensor_type(type_):
            example = torch.zeros([0 if d is None else d for d in type_.shape], dtype=V.tensor_dtype(type_))
        else:
            example = {V.INT: 0, V.FLOAT: 0.0, V.BOOL: False}[type_]
        values.append(c.builder.placeholder(type_, example).value)
    return values



_ONE_SIZE = (
    "is invalid for input of size",  # a view of a constant shape
    "attempting to expand a dimension of length",  # a store of a static value into a runtime-sized place
    "stack expects each tensor to be equal size",
    "Sizes of tensors must match",  # (cat)
    "must match the size of tensor",  # (an elementwise op of a static size other than 1)
    "should be equal to source.size(dim)",  # (`index_copy_` of as many rows as indices)
)


def needs_example_sizes(error: Exception) -> bool:
    """Whether export failed because an op needs a runtime size to be one particular size
    (a view whose shape is constant, `freqs[start : start + n].view(1, n, 1, d)`; MoCo's
    `self.queue[:, ptr : ptr + batch_size] = keys.T`, a runtime-sized place for a static
    value; `torch.stack` of a tensor of one row and one whose rows are known only at run
    time, which is one row for every input eager takes: `x + ctx[-1:]`), or an `assert` the
    example passes failed on the symbolic sizes (Llama's `assert freqs_cis.shape ==
    (x.shape[1], x.shape[-1])`): that run holds at its example's sizes only."""
    return isinstance(error, AssertionError) or any(text in str(error) for text in _ONE_SIZE)


def at_example_sizes(c, stmts, capture, flat_inputs, dynamic: list[list[int]], names: list[str], failure: Exception):
    """A run export cannot capture with its runtime dims symbolic, since an op of it fixes
    one (`needs_example_sizes`), captured at the example's sizes (`capture()`) and called
    where each runtime dim has its example's size; any other size takes an `error_arm`,
    which raises at run time (eager's op raises there too, or computes what this capture
    cannot: never a run outside the sizes it holds for)."""
    stmt = stmts[0]
    try:
        static = capture()
    except Exception:
        raise failure from None
    dims = [(k, d) for k, ds in enumerate(dynamic) for d in ds]
    tests = []
    for k, d in dims:
        size = c.builder.host_op("torch.aten.size.int", [flat_inputs[k], c.builder.constant(d)], V.INT, flat_inputs[k].example.shape[d])
        n = flat_inputs[k].example.shape[d]
        tests.append(c.builder.host_op("torch.aten.eq.int", [size, c.builder.constant(n)], V.BOOL, size.example == n))
    condition = _all_true(c, tests)

    def call() -> list[ir.Value]:
        cast = [leaf.value for leaf in flat_inputs]
        for k, leaf in enumerate(flat_inputs):
            if dynamic[k]:
                cast[k] = c.builder.cast(leaf, leaf.type.with_shape(list(leaf.example.shape) + list(leaf.type.shape[leaf.example.dim():]))).value
        return c.capturer.splice(static.func_name, cast)

    other = {(k, d): f"other than {flat_inputs[k].example.shape[d]}" for k, d in dims}
    values = c.select(condition, call, lambda: error_arm(c, stmt, failure, other, names, static))
    types = [V.parse_type(str(v.type)) for v in values]
    count = len(static.mutated_inputs)
    return CapturedRun(static.func_name, types[count:], static.constant, static.mutated_inputs, types[:count],
                       constant_values=static.constant_values, mutated_buffers=static.mutated_buffers), values
