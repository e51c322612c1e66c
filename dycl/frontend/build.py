"""Emit host-level ops (constants, scalar/list ops, casts, scf) with `torch_mlir.ir`.

The builder works in the importer's own context and module, so captured runs and host ops
live in one MLIR module until it is handed to xDSL as generic text.
"""

from __future__ import annotations

import numpy as np
import torch
from torch_mlir import ir
from xdsl.ir import Attribute

from dycl.frontend import values as V
from dycl.frontend.hop import tensor_to_i1
from dycl.dialects.torch_ops import LIST_CONSTRUCT, Category, op_info


# The discardable attribute that carries the user's variable names of an op's results from
# torch-mlir's IR to xDSL's name hints (importer.py removes it).
RESULT_NAMES = "dycl.result_names"


class HostBuilder:
    def __init__(self, context: ir.Context):
        self.context = context
        self._types: dict[Attribute, ir.Type] = {}

    def type(self, type_: Attribute) -> ir.Type:
        """torch-mlir's type for a type of the frontend's model (made once per type)."""
        made = self._types.get(type_)
        if made is None:
            made = self._types[type_] = ir.Type.parse(str(type_), self.context)
        return made

    def op(self, name: str, operands=(), result_types=(), attributes=None, regions=0) -> ir.Operation:
        return ir.Operation.create(
            name,
            results=[self.type(t) if isinstance(t, Attribute) else t for t in result_types],
            operands=list(operands),
            attributes=attributes or {},
            regions=regions,
        )

    def name_result(self, value: ir.Value, name: str) -> None:
        """Record the user's variable `name` for an op result, unless it has one: the importer
        makes it the value's SSA name hint, and the host program keeps it (`h = ...`)."""
        if not isinstance(value, ir.OpResult):
            return  # block arguments are named by their function or loop
        owner = value.owner
        owner = getattr(owner, "operation", owner)
        names = (
            [ir.StringAttr(a).value for a in ir.ArrayAttr(owner.attributes[RESULT_NAMES])]
            if RESULT_NAMES in owner.attributes else [""] * len(owner.results)
        )
        if names[value.result_number]:
            return
        names[value.result_number] = name
        owner.attributes[RESULT_NAMES] = ir.ArrayAttr.get([ir.StringAttr.get(n, self.context) for n in names], self.context)

    # ----- values -----------------------------------------------------------------------

    def constant(self, value) -> V.Dyn:
        """A Python scalar (or None) as a `torch.constant.*` op."""
        if isinstance(value, bool):
            attr, kind, type_ = ir.BoolAttr.get(value), "bool", V.BOOL
        elif isinstance(value, int):
            attr, kind, type_ = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value), "int", V.INT
        elif isinstance(value, float):
            attr, kind, type_ = ir.FloatAttr.get(ir.F64Type.get(), value), "float", V.FLOAT
        elif value is None:
            return V.Dyn(self.op("torch.constant.none", (), [V.NONE]).result, V.NONE, None)
        else:
            raise TypeError(f"no constant op for {type(value).__name__}")
        result = self.op(f"torch.constant.{kind}", (), [type_], {"value": attr}).result
        return V.Dyn(result, type_, value)

    def materialize(self, value: V.EnvValue) -> V.Dyn:
        if isinstance(value, V.Dyn):
            return value
        if isinstance(value, V.Const):
            return self.constant(value.value)
        raise TypeError(f"cannot make one IR value of {value!r}")

    def host_op(self, name: str, operands: list[V.Dyn], result_type: Attribute, example) -> V.Dyn:
        check_host_op(name, [str(result_type)], reads_host_scalar=True)
        op = self.op(name, [o.value for o in operands], [result_type])
        return V.Dyn(op.result, result_type, example)

    def cast(self, value: V.Dyn, type_: Attribute) -> V.Dyn:
        if value.type == type_:
            return value
        op = self.op("torch.tensor_static_info_cast", [value.value], [type_])
        return V.Dyn(op.result, type_, value.example)

    def to_i1(self, condition: V.Dyn) -> ir.Value:
        if V.is_tensor_type(condition.type):
            return tensor_to_i1(condition.value, self.context)
        as_bool = condition
        if condition.type != V.BOOL:
            as_bool = self.host_op(f"torch.aten.Bool.{V.scalar_name(condition.type)}", [condition], V.BOOL, bool(condition.example))
        return self.op("torch_c.to_i1", [as_bool.value], [ir.IntegerType.get_signless(1, self.context)]).result

    def placeholder(self, type_: Attribute, example) -> V.Dyn:
        """A value of the given type for a path where the variable is not assigned (never read)."""
        if V.is_list_type(type_):
            return V.Dyn(self.op(LIST_CONSTRUCT, (), [type_]).result, type_, [])
        if not V.is_tensor_type(type_):
            return self.constant(type(example)(0) if isinstance(example, (bool, int, float)) else None)
        zeros = torch.zeros_like(example)
        array = zeros.numpy()
        attr = ir.DenseElementsAttr.get_splat(
            ir.RankedTensorType.get(list(array.shape), _element_type(array.dtype)),
            _scalar_attr(array.dtype),
        )
        literal_type = V.type_of_example(zeros)
        op = self.op("torch.vtensor.literal", (), [literal_type], {"value": attr})
        return self.cast(V.Dyn(op.result, literal_type, zeros), type_)


class NoHostTranslation(Exception):
    """An op that the host program would run, which the op registry gives no host
    translation (`dialects/torch_ops.py`): no later stage could run it, so the frontend
    refuses the statement that makes it."""

    def __init__(self, op: str, takes_host_number: bool = False):
        super().__init__(op)
        self.op = op
        self.takes_host_number = takes_host_number

    def explained(self, statement: str) -> tuple[str, str]:
        """(construct, hint) of the refusal of `statement`, in Python terms."""
        aten = self.op.removeprefix("torch.").replace("aten.", "torch.ops.aten.", 1)
        if self.takes_host_number:
            return (
                f"`{statement}` passes `{aten}` a number known only at run time (a size that depends on "
                "the data, or a value read from a tensor) where it takes a Python number, and a sub-DNN "
                "takes only tensors",
                "pass it as a tensor where the op takes one (`torch.clamp(x, max=torch.tensor(n, "
                "dtype=x.dtype))`), or compute with it in tensor math (`torch.zeros_like(x) + n` for "
                "`torch.full_like(x, n)`)",
            )
        return (
            f"`{statement}` makes a Python value with `{aten}`, which the host program would have to run, "
            "and DyCL has no host translation of it",
            "keep the computation in tensors (`(a == b).all()` instead of a Python bool) and read "
            "the result with `bool(...)` or `.item()`",
        )


class RandomOpRefused(NoHostTranslation):
    """A random op of torch that DyCL does not reproduce (`torch_ops.refused_random`)."""

    def explained(self, statement: str) -> tuple[str, str]:
        aten = self.op.removeprefix("torch.").replace("aten.", "torch.ops.aten.", 1)
        if aten.split(".")[3] in ("dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout", "native_dropout"):
            return (
                f"`{statement}` applies dropout in training mode (`{aten}` with train=True), which draws a random "
                "mask; DyCL compiles inference",
                "pass `training=self.training` (DyCL compiles eval mode, where dropout is the identity), or draw "
                "the mask with `torch.bernoulli` / `torch.rand_like(x) < keep`, which DyCL runs on the host",
            )
        return (
            f"`{statement}` draws random numbers with `{aten}`, which DyCL does not reproduce: the random ops it "
            "compiles run on the host with the law of torch's (docs/conventions.md, \"Random ops\")",
            "draw with one of those: `torch.bernoulli`, `torch.rand`/`rand_like`, `torch.randn`/`randn_like`, "
            "`torch.randint`, `torch.multinomial`, `x.uniform_`, `x.normal_`, `x.exponential_` "
            "(`torch.normal(mean, std)` is `mean + std * torch.randn_like(mean)`, `torch.randperm(n)` is "
            "`torch.rand(n).argsort()`)",
        )


_NEVER_IN_HOST_CODE = (Category.CONSTANT, Category.EFFECT, Category.NOT_TORCH)


def check_host_op(name: str, result_types: list[str], reads_host_scalar: bool) -> None:
    """Raise NoHostTranslation for an op that stays in the host and has no translation
    there. What stays in the host (passes/outline.py): an op with a result that is neither a
    tensor nor a list of tensors (`torch.aten.equal` -> `!torch.bool`), and a tensor op that
    reads a scalar the host computes (`torch.aten.arange` of a runtime int)."""
    info = op_info(name)
    if not result_types or info.host is not None or info.category in _NEVER_IN_HOST_CODE:
        return
    tensors = all(t.startswith(("!torch.vtensor", "!torch.list<vtensor")) for t in result_types)
    if reads_host_scalar or not tensors:
        raise NoHostTranslation(name, takes_host_number=reads_host_scalar and tensors)


def drop_unused_constants(values: list[ir.Value]) -> None:
    """Erase the `torch.constant.*` ops that make `values` where nothing reads them: run
    results the frontend holds as Python constants (`x.dim() == 2` of a static shape), which
    no op will read (a proven `assert` costs no op)."""
    owners: list = []
    for value in values:
        owner = value.owner
        owner = getattr(owner, "operation", owner)
        if isinstance(owner, ir.Operation) and owner.name.startswith("torch.constant.") and owner not in owners:
            owners.append(owner)
    for owner in owners:
        if all(not list(result.uses) for result in owner.results):
            owner.erase()


def erase_after(ir_block: ir.Block, count: int) -> None:
    """Erase the ops built in `ir_block` after its first `count` (a compile attempt undone)."""
    for op in reversed(list(ir_block.operations)[count:]):
        op.erase()


def _element_type(dtype: np.dtype) -> ir.Type:
    if dtype == np.bool_:
        return ir.IntegerType.get_signless(1)
    if dtype == np.float32:
        return ir.F32Type.get()
    if dtype == np.float64:
        return ir.F64Type.get()
    if dtype == np.float16:
        return ir.F16Type.get()
    bits = dtype.itemsize * 8
    if dtype.kind == "u":
        return ir.IntegerType.get_unsigned(bits)
    return ir.IntegerType.get_signed(bits)


def _scalar_attr(dtype: np.dtype) -> ir.Attribute:
    element = _element_type(dtype)
    if dtype.kind == "f":
        return ir.FloatAttr.get(element, 0.0)
    return ir.IntegerAttr.get(element, 0)
