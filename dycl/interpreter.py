"""The reference interpreter: runs host IR and HCFGs on torch tensors.

It is the oracle of every pass test: a pass must not change what this computes. Built on
`xdsl.interpreter` (func/scf/arith come from xDSL); torch-dialect ops are dispatched by name
(`dycl.dialects.torch_ops`): host scalar/list ops to their Python meaning, every other op
to `torch.ops.<ns>.<name>.<overload>` driven by the op schema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, UnregisteredOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    OpImplResult,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.scf import ScfFunctions
from xdsl.ir import Operation
from xdsl.utils.exceptions import InterpretationError

from dycl.dialects import dycl as dycl_dialect
from dycl.dialects import torch as t
from dycl.dialects.torch_ops import TorchOpCall, literal_tensor, op_info
from dycl.runtime.outputs import unflatten

__all__ = ["run_function", "unflatten", "InterpretationError"]

# ---------------------------------------------------------------- torch tensor ops


class ReferenceInterpreter(Interpreter):
    """xDSL's interpreter, plus a by-name dispatch for unregistered torch ops
    (every unregistered op name gets its own class, so class-keyed tables don't fit)."""

    _torch_calls: dict[str, TorchOpCall] = {}

    def _run_op(self, op: Operation, inputs: PythonValues) -> OpImplResult:
        if not isinstance(op, UnregisteredOp):
            return super()._run_op(op, inputs)
        name = op.op_name.data
        if name == "torch.aten.tensor":  # (`t[] data`: no torch op call takes a Python list for it)
            import torch

            from dycl.dialects.dtypes import torch_dtype

            return OpImplResult((torch.tensor(list(inputs[0]), dtype=torch_dtype(op.results[0].type.element_type)),), None)
        try:
            values = _run_named_op(name, inputs, len(op.results))
        except Exception as err:  # located error for any failing torch call
            raise InterpretationError(f"{name}: {err}") from err
        return OpImplResult(values, None)


def _run_named_op(name: str, inputs: PythonValues, n_results: int) -> PythonValues:
    info = op_info(name)
    if (host := info.python) is not None:
        result = host(*inputs)
    else:
        call = ReferenceInterpreter._torch_calls.get(name)
        if call is None:
            call = ReferenceInterpreter._torch_calls[name] = TorchOpCall(name)
        result = call(inputs)
    if n_results == 0:  # `aten._assert_tensor_metadata` and other checks return None
        return ()
    if n_results == 1 and not info.unpacks:  # unpacking one item is still a tuple
        return (result,)
    return tuple(result)


def literal_value(op: t.ValueTensorLiteralOp) -> torch.Tensor:
    try:
        return literal_tensor(op)
    except ValueError as err:
        raise InterpretationError(str(err)) from None


@register_impls
class TorchFunctions(InterpreterFunctions):
    def __init__(self, weights: Mapping[str, Any]):
        self.weights = weights

    # (xDSL's `impl` takes one op class per method)
    @impl(t.ConstantIntOp)
    def run_const_int(self, interp, op: t.ConstantIntOp, args):
        return (op.python_value,)

    @impl(t.ConstantFloatOp)
    def run_const_float(self, interp, op: t.ConstantFloatOp, args):
        return (op.python_value,)

    @impl(t.ConstantBoolOp)
    def run_const_bool(self, interp, op: t.ConstantBoolOp, args):
        return (op.python_value,)

    @impl(t.ConstantNoneOp)
    def run_const_none(self, interp, op: t.ConstantNoneOp, args):
        return (op.python_value,)

    @impl(t.ConstantStrOp)
    def run_const_str(self, interp, op: t.ConstantStrOp, args):
        return (op.python_value,)

    @impl(t.ConstantDeviceOp)
    def run_const_device(self, interp, op: t.ConstantDeviceOp, args):
        return (torch.device(op.python_value),)

    @impl(t.ValueTensorLiteralOp)
    def run_literal(self, interp, op: t.ValueTensorLiteralOp, args):
        return (literal_value(op),)

    @impl(t.ListConstructOp)
    def run_list(self, interp, op, args):
        return (list(args),)

    @impl(t.BoolTensorOp)
    def run_bool_tensor(self, interp, op, args):
        return (bool(args[0]),)

    @impl(t.TensorStaticInfoCastOp)
    def run_static_info_cast(self, interp, op, args):
        # A cast to a more specific shape is a claim about the value: a false one is an
        # error here, as it is where a backend takes the static shape.
        shape = op.results[0].type.shape
        value = args[0]
        if shape is not None and hasattr(value, "shape") and (
            len(shape) != value.dim() or any(d is not None and d != n for d, n in zip(shape, value.shape))
        ):
            raise InterpretationError(f"{op.name}: a tensor of shape {list(value.shape)} where {op.results[0].type} is expected")
        return (value,)

    @impl(t.ToI1Op)
    def run_to_i1(self, interp, op, args):
        return (bool(args[0]),)

    @impl(t.FromI1Op)
    def run_from_i1(self, interp, op, args):
        return (bool(args[0]),)

    @impl(t.ToI64Op)
    def run_to_i64(self, interp, op, args):
        return (int(args[0]),)

    @impl(t.FromI64Op)
    def run_from_i64(self, interp, op, args):
        return (int(args[0]),)

    @impl(dycl_dialect.NumpyArgsortOp)
    def run_numpy_argsort(self, interp, op: dycl_dialect.NumpyArgsortOp, args):
        return (torch.from_numpy(np.argsort(args[0].numpy(), kind=op.kind.data)),)

    @impl(dycl_dialect.ErrorOp)
    def run_error(self, interp, op: dycl_dialect.ErrorOp, args):
        if op.kind is None:
            raise InterpretationError(op.message.data)
        raise op.exception(args)  # (the program's own exception: `assert` raises AssertionError)

    @impl(dycl_dialect.ParamOp)
    def run_param(self, interp, op: dycl_dialect.ParamOp, args):
        name = op.weight_name
        if name not in self.weights:
            raise InterpretationError(f"dycl.param: no weight named '{name}' in the store")
        value = self.weights[name]
        return (value if isinstance(value, torch.Tensor) else torch.from_numpy(value),)


def find_function(module: ModuleOp, name: str) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == name:
            return op
    raise KeyError(f"no function @{name} in the module")


def run_function(
    module: ModuleOp,
    args: Sequence[Any],
    weights: Mapping[str, Any] | None = None,
    name: str = "forward",
) -> tuple[Any, ...]:
    """Run `@name` on `args` (torch tensors, Python scalars); returns its flat results."""
    function = find_function(module, name)
    interpreter = ReferenceInterpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(ScfFunctions())
    interpreter.register_implementations(ArithFunctions())
    interpreter.register_implementations(TorchFunctions(weights or {}))
    with torch.no_grad():
        return tuple(interpreter.call_op(function, tuple(args)))


def output_tree(function: func.FuncOp) -> Any:
    attr = function.attributes.get("dycl.output_tree")
    if not isinstance(attr, StringAttr):
        return None
    return json.loads(attr.data)


def flatten_inputs(function: func.FuncOp, inputs: Sequence[Any]) -> tuple:
    """The function's arguments for the model's inputs: list and tuple inputs are passed
    item by item (`dycl.input_tree`)."""
    attr = function.attributes.get("dycl.input_tree")
    if not isinstance(attr, StringAttr):
        return tuple(inputs)

    def leaves(tree, value):
        if tree is None:
            return []
        if isinstance(tree, int):
            return [value]
        ((kind, items),) = tree.items()
        if kind == "none":  # (compiled for None only: a value would be dropped)
            if value is not None:
                raise ValueError(f"input `{items[0]}` was compiled for None only, got {type(value).__name__}")
            return []
        if kind == "optional":  # (a present flag, then the value, or a placeholder for None)
            present, inner = items
            return [value is not None, *leaves(inner, _placeholder(function, inner) if value is None else value)]
        return [leaf for sub, item in zip(items, value) for leaf in leaves(sub, item)]

    return tuple(leaf for tree, value in zip(json.loads(attr.data), inputs) for leaf in leaves(tree, value))


def _placeholder(function: func.FuncOp, tree: Any) -> Any:
    """What an optional input's arguments get where it is None: zeros of their types."""
    from dycl.dialects.dtypes import torch_dtype

    if isinstance(tree, dict):  # (a list or tuple)
        ((kind, items),) = tree.items()
        made = [_placeholder(function, sub) for sub in items]
        return made if kind == "list" else tuple(made)
    type_ = function.function_type.inputs.data[tree]
    if isinstance(type_, t.ValueTensorType):
        return torch.zeros([1 if d is None else d for d in type_.shape], dtype=torch_dtype(type_.element_type))
    return 0 if isinstance(type_, t.IntType) else 0.0 if isinstance(type_, t.FloatType) else False


def state_slots(function: func.FuncOp) -> list[dict[str, Any]]:
    """The func's `dycl.state` (the module attributes it takes in and gives back: see
    `dycl.runtime.state`), each tensor slot with the dtype and shape of its argument."""
    from dycl.dialects.dtypes import dtype_name

    attr = function.attributes.get("dycl.state")
    slots = json.loads(attr.data) if isinstance(attr, StringAttr) else []
    inputs = function.function_type.inputs.data
    for slot in slots:
        if slot["kind"] in ("tensor", "optional"):
            type_ = inputs[slot["args"][-1]]
            slot["dtype"], slot["shape"] = dtype_name(type_.element_type), list(type_.shape)
    return slots


def run_call(
    module: ModuleOp,
    inputs: Sequence[Any],
    weights: Mapping[str, Any] | None,
    state: Mapping[str, Any],
    name: str = "forward",
) -> tuple[Any, dict[str, Any]]:
    """One call of a model that keeps state across calls: (its output, the state after it).
    `inputs` are the model's inputs (as `flatten_inputs` takes them), `state` maps attribute
    paths to their values before the call (as `ImportedProgram.state` and `compiled.state`)."""
    from dycl.runtime.state import StateSlots

    function = find_function(module, name)
    slots = StateSlots(state_slots(function))
    extra = [torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in slots.arguments(state)]
    results = run_function(module, (*flatten_inputs(function, inputs), *extra), weights, name)
    after = dict(state)
    slots.update(after, results)
    return unflatten(output_tree(function), results), after
