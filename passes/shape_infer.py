"""dycl-shape-infer: propagate concrete shapes through the host function.

Starting from the entry arguments' types, every tensor value gets the most specific type
the program determines:

- torch ops keep the result types torch-mlir wrote, unless an operand's type changed or a
  result has an unknown dim; then the result types are recomputed by running the op's
  `torch.ops.aten` overload on meta tensors (unknown dims are probed with several sizes: a
  dim that differs between the probes stays unknown);
- `torch.tensor_static_info_cast` whose operand is at least as specific as its result is
  looked through (removed);
- `scf.if` results join both branches' yields per dim (`[1,3] | [1,7] -> [1,?]`);
- `scf.for` / `scf.while` carries reach a fixed point (join of the entry and end-of-body
  types); a carry whose shape changes per iteration ends up with an unknown dim — the mark
  `dycl-unroll-loops{shape-varying-only=true}` reads — and is reported;
- an op whose value the types fix (the size of a static dim, the length of a static list)
  becomes a constant;
- casts are inserted wherever a joined type meets a more specific value, so the IR verifies.

The result types of the host function follow its `func.return`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, func, scf
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from dycl.dialects import torch as t
from dycl.dialects.dtypes import element_type
from dycl.dialects.torch_ops import (
    NO_VALUE,
    TorchOpCall,
    constant_value,
    is_torch_op,
    op_info,
    static_list_elements,
)
from dycl.passes._common import (
    format_type,
    host_functions,
    is_tensor,
    join_types,
    locate,
    refines,
)

_PROBES = (5, 13)
"""Sizes substituted for unknown dims when recomputing shapes on meta tensors."""

_SMALL_PROBES = (2, 3)
"""More sizes for unknown dims, the smallest a `?` dim takes (a backend compiles it as at
least 2). A result dim is static only if every probe gives it the same size, and the size
of a dim an op clamps to a constant (`x[:, -4:]` is min(n, 4) long, `x[:, :4]` too) changes
below the constant: with (5, 13) alone `x[:, -4:]` looked 4 long at every size, a silent
wrong answer at 2 and 3. A probe the op fails on (an index past the end) is skipped: the
program fails there in eager too."""

_INT_BASE, _INT_PROBES = 1, (0, 2, 3, -1)
"""Values substituted for runtime ints (a slice bound `x[:k]`, an index): all `_INT_BASE`,
then each int in turn takes each of `_INT_PROBES` (0 and 1: a dim that `x[:k]` cuts is 0
or 1 long for some k; -1: from the end). A dim that no probe changes is static; a probe
that fails (an index past the end) leaves the declared type."""

_MAX_FIXED_POINT_ROUNDS = 16


@dataclass
class ShapeNote:
    """One value whose shape the entry shapes do not determine."""

    op: Operation
    message: str

    def __str__(self) -> str:
        return f"{locate(self.op)}: {self.message}"


# ------------------------------------------------------------ meta-tensor shapes


class _MetaShapes:
    """Result types of a torch op from its operand types, by running it on meta tensors."""

    _calls: ClassVar[dict[str, Any]] = {}

    @classmethod
    def _call(cls, name: str):
        if name not in cls._calls:
            try:
                cls._calls[name] = TorchOpCall(name)
            except (AttributeError, RuntimeError, ValueError):  # ValueError: no torch.<ns>.<op> name
                cls._calls[name] = None
        return cls._calls[name]

    @classmethod
    def result_types(cls, op: Operation) -> list[Attribute] | None:
        # Shape rules spare the meta-tensor call: the first of a process costs ~2 s (torch
        # initialises its meta kernels lazily).
        if (rule := op_info(op).shape) is not None:
            if (types := rule(op)) is not None:
                return types
        call = cls._call(t.op_name(op))
        if call is None:
            return None
        unknown = any(
            is_tensor(v) and (v.type.shape is None or None in v.type.shape)
            for v in _all_operand_values(op)
        )
        ints = [v for v in _all_operand_values(op) if _is_runtime_int(v)]
        base = {v: _INT_BASE for v in ints}
        probes = [(size, base) for size in (_PROBES if unknown else _PROBES[:1])]
        probes += [(_PROBES[0], {**base, v: n}) for v in ints for n in _INT_PROBES]
        skippable = len(probes)  # (the small probes: the op may fail there, as eager would)
        probes += [(size, base) for size in (_SMALL_PROBES if unknown else ())]
        runs = []
        for index, (probe, int_values) in enumerate(probes):
            args = [_meta_arg(v, probe, int_values) for v in op.operands]
            if any(a is NO_VALUE for a in args):
                return None
            try:
                import torch

                with torch.no_grad():
                    out = call(args)
            except Exception:  # the op does not run on meta tensors, or wrong arity
                if index >= skippable:
                    continue
                return None
            outs = out if isinstance(out, (tuple, list)) else (out,)
            if len(outs) != len(op.results) or not all(_is_torch_tensor(o) for o in outs):
                return None
            runs.append(outs)
        types = []
        for i, result in enumerate(op.results):
            shapes = [tuple(run[i].shape) for run in runs]
            dims = [d if all(s[k] == d for s in shapes) else None for k, d in enumerate(shapes[0])]
            declared = result.type
            dtype = declared.element_type if isinstance(declared, t.ValueTensorType) else None
            if dtype is None:
                try:
                    dtype = element_type(str(runs[0][i].dtype).removeprefix("torch."))
                except ValueError:
                    return None
            types.append(t.ValueTensorType(dims, dtype))
        return types


def _is_torch_tensor(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


def _all_operand_values(op: Operation):
    for operand in op.operands:
        if isinstance(operand.owner, t.ListConstructOp):
            yield from operand.owner.elements
        yield operand


def _with_known_dims(inferred: Attribute, declared: Attribute) -> Attribute:
    """`inferred` with the dims it leaves unknown taken from `declared` (of the same rank)."""
    if not (isinstance(inferred, t.ValueTensorType) and isinstance(declared, t.ValueTensorType)):
        return inferred
    if inferred.shape is None or declared.shape is None or len(inferred.shape) != len(declared.shape):
        return inferred if inferred.shape is not None else declared
    return inferred.with_shape([d if d is not None else c for d, c in zip(inferred.shape, declared.shape)])


def _is_runtime_int(value: SSAValue) -> bool:
    return isinstance(value.type, t.IntType) and constant_value(value) is NO_VALUE


def _meta_arg(value: SSAValue, probe: int, int_values: dict) -> Any:
    import torch

    type_ = value.type
    if isinstance(type_, t.ValueTensorType):
        if type_.shape is None or type_.element_type is None:
            return NO_VALUE
        from dycl.dialects.dtypes import torch_dtype

        try:
            dtype = torch_dtype(type_.element_type)
        except ValueError:
            return NO_VALUE
        shape = [probe if d is None else d for d in type_.shape]
        return torch.empty(shape, dtype=dtype, device="meta")
    if isinstance(value.owner, t.ListConstructOp):
        elements = [_meta_arg(e, probe, int_values) for e in value.owner.elements]
        return NO_VALUE if any(e is NO_VALUE for e in elements) else elements
    return int_values[value] if value in int_values else constant_value(value)


# ------------------------------------------------------------------ inference


@dataclass
class ShapeInference:
    """Forward propagation over one host function (regions included)."""

    notes: list[ShapeNote] = field(default_factory=list)
    refined: set[SSAValue] = field(default_factory=set)
    """Values whose type this run changed: their users get their types recomputed."""
    declared: dict[tuple[Operation, int], Attribute] = field(default_factory=dict)
    """Each torch op result's type as the IR gave it (before this run changed it): a claim
    about every value it takes, so a dim it declares static stays static. A dim export knew
    static must never become `?`, which a backend compiles as a size of at least 2."""
    folding: bool = True
    """Whether ops the types decide are rewritten (a size folded to a constant, a cast
    dropped). Not while a loop's carry types are still being found: a round on the entry
    types is not the loop, and `x.size(1)` of a carry that grows folded to its entry size
    was frozen there (a `while x.size(1) < limit` that never ended, a crop test that never
    fired)."""

    def set_type(self, value: SSAValue, new_type: Attribute) -> SSAValue:
        if value.type == new_type:
            return value
        new_value = Rewriter.replace_value_with_new_type(value, new_type)
        self.refined.discard(value)
        self.refined.add(new_value)
        return new_value

    def run(self, function: func.FuncOp) -> None:
        self.infer_block(function.body.block)
        function.update_function_type()

    def infer_block(self, block: Block) -> None:
        for op in list(block.ops):
            self.infer_op(op)

    def infer_op(self, op: Operation) -> None:
        match op:
            case scf.IfOp():
                self.infer_if(op)
            case scf.ForOp():
                self.infer_for(op)
            case scf.WhileOp():
                self.infer_while(op)
            case t.TensorStaticInfoCastOp():
                if self.folding:
                    self.look_through_cast(op)
            case func.CallOp() | func.ReturnOp() | scf.YieldOp() | scf.ConditionOp():
                pass
            case _ if op_info(op).static_value is not None:
                if self.folding:
                    self.fold_static_value(op)
            case _:
                if self.folding:
                    self.resolve_static_lists(op)
                self.infer_torch_op(op)

    # ---------------------------------------------------------------- plain ops

    def infer_torch_op(self, op: Operation) -> None:
        if op.regions or not any(is_tensor(r) for r in op.results):
            return
        if not is_torch_op(op):
            return
        changed = any(v in self.refined for v in _all_operand_values(op))
        unknown = any(
            is_tensor(r) and not r.type.has_static_shape for r in op.results
        )
        if not changed and not unknown:
            return
        declared = [self.declared.setdefault((op, k), r.type) for k, r in enumerate(op.results)]
        types = _MetaShapes.result_types(op)
        if types is None:
            if changed:  # (operands a loop's fixed point refined, then joined again)
                types = declared
            else:
                return
        for result, type_, claim in zip(list(op.results), types, declared):
            if is_tensor(result):
                self.set_type(result, _with_known_dims(type_, claim))

    def look_through_cast(self, op: t.TensorStaticInfoCastOp) -> None:
        if refines(op.operand.type, op.result.type):
            op.result.replace_all_uses_with(op.operand)
            self.refined.add(op.operand)
            Rewriter.erase_op(op)

    def fold_static_value(self, op: Operation) -> None:
        """`size(x, 1)` of a static dim, `len(xs)` of a static list -> a constant."""
        value = op_info(op).static_value(op)
        if isinstance(value, int) and not isinstance(value, bool):
            Rewriter.replace_op(op, t.ConstantIntOp(value))

    def resolve_static_lists(self, op: Operation) -> None:
        """`stack(append(append([a], b), c))` -> `stack([a, b, c])`: a host list whose
        length and elements the program fixes becomes a plain list of tensors (which
        dycl-outline then moves into the sub-DNN with its user)."""
        if not op_info(op).reads_tensor_list:
            return
        for index, operand in enumerate(op.operands):
            if not isinstance(operand.type, t.ListType) or isinstance(operand.owner, t.ListConstructOp):
                continue
            elements = static_list_elements(operand)
            if elements is None:
                continue
            lst = t.ListConstructOp(elements, operand.type)
            Rewriter.insert_op(lst, InsertPoint.before(op))
            op.operands[index] = lst.result
            self.refined.add(lst.result)

    # ------------------------------------------------------------ control flow

    def infer_if(self, op: scf.IfOp) -> None:
        self.infer_block(op.true_region.block)
        if not op.results:
            if op.false_region.blocks:
                self.infer_block(op.false_region.block)
            return
        self.infer_block(op.false_region.block)
        yields = [_terminator(op.true_region.block), _terminator(op.false_region.block)]
        for i, result in enumerate(list(op.results)):
            then_type, else_type = (y.operands[i].type for y in yields)
            joined = join_types(then_type, else_type) if is_tensor(result) else result.type
            if joined != then_type and is_tensor(result) and then_type.has_static_shape \
                    and else_type.has_static_shape:
                self.notes.append(ShapeNote(op, (
                    f"result #{i} merges two shapes: {format_type(then_type)} | "
                    f"{format_type(else_type)} -> {format_type(joined)}")))
            self.set_type(result, joined)
            for y in yields:
                _cast_operand(y, i, joined)

    def infer_for(self, op: scf.ForOp) -> None:
        body = op.body.block

        def run_body() -> list[Attribute]:
            self.infer_block(body)
            return [v.type for v in _terminator(body).operands]

        types = self.infer_carries(op, body, 1, [v.type for v in op.iter_args], run_body)
        for k, type_ in enumerate(types):
            _cast_operand(op, 3 + k, type_)
            _cast_operand(_terminator(body), k, type_)
            self.set_type(op.results[k], type_)

    def infer_while(self, op: scf.WhileOp) -> None:
        before, after = op.before_region.block, op.after_region.block

        def run_body() -> list[Attribute]:
            self.infer_block(before)
            for k, value in enumerate(_terminator(before).operands[1:]):
                self.set_type(after.args[k], value.type)
            self.infer_block(after)
            return [v.type for v in _terminator(after).operands]

        types = self.infer_carries(op, before, 0, [v.type for v in op.arguments], run_body)
        for k, type_ in enumerate(types):
            _cast_operand(op, k, type_)
            _cast_operand(_terminator(after), k, type_)
        condition = _terminator(before)
        for k, value in enumerate(condition.operands[1:]):
            self.set_type(op.results[k], value.type)

    def infer_carries(
        self,
        op: Operation,
        block: Block,
        first_arg: int,
        entry: list[Attribute],
        run_body: Callable[[], list[Attribute]],
    ) -> list[Attribute]:
        """The loop-carried types (the carries are `block.args[first_arg:]`): from the
        entry types, join what one more pass over the body yields until nothing changes."""
        types, folding = entry, self.folding
        self.folding = False
        try:
            for _ in range(_MAX_FIXED_POINT_ROUNDS):
                for k, type_ in enumerate(types):
                    self.set_type(block.args[k + first_arg], type_)
                new = [join_types(a, b) for a, b in zip(types, run_body())]
                if new == types:
                    break
                types = new
        finally:
            self.folding = folding
        if folding:  # one more round on the carry types found, rewriting what they decide
            for k, type_ in enumerate(types):
                self.set_type(block.args[k + first_arg], type_)
            types = [join_types(a, b) for a, b in zip(types, run_body())]
        self.finish_loop(op, block, entry, types, first_arg)
        return types

    def finish_loop(
        self, op: Operation, block: Block, entry: list, final: list, first_arg: int
    ) -> None:
        for k, (a, b) in enumerate(zip(entry, final)):
            if a != b and is_tensor(block.args[k + first_arg]):
                self.notes.append(ShapeNote(op, (
                    f"loop-carried value #{k} of {op.name} changes shape per iteration: "
                    f"{format_type(a)} -> {format_type(b)}")))


def _terminator(block: Block) -> Operation:
    last = block.last_op
    assert last is not None
    return last


def _cast_operand(op: Operation, index: int, type_: Attribute) -> None:
    """Make operand `index` of `op` have `type_`, through a static-info cast if needed."""
    value = op.operands[index]
    if value.type == type_ or not is_tensor(value):
        return
    cast = t.TensorStaticInfoCastOp.create(operands=[value], result_types=[type_])
    Rewriter.insert_op(cast, InsertPoint.before(op))
    op.operands[index] = cast.result


def infer_shapes(module: builtin.ModuleOp) -> list[ShapeNote]:
    """Run shape inference on every host function; return the notes on unknown dims."""
    inference = ShapeInference()
    for function in list(host_functions(module)):
        inference.run(function)
    return inference.notes


@dataclass(frozen=True)
class ShapeInferPass(ModulePass):
    name: ClassVar[str] = "dycl-shape-infer"

    report: bool = False
    """Print one line per value whose shape varies (loop carries, branch merges) to stderr."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        notes = infer_shapes(op)
        if self.report:
            for note in notes:
                print(f"note: {note}", file=sys.stderr)
