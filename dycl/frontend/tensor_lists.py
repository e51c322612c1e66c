"""Lists of numbers made from tensors on the host, and back: `t.tolist()` of a tensor of
runtime length and `torch.tensor(lst)` of a list of runtime numbers.
"""

from __future__ import annotations

import ast

import torch
from torch_mlir import ir

from dycl.frontend import values as V
from dycl.frontend.desugar import source_text
from dycl.frontend.list_ops import empty_runtime_list, example_or_value
from dycl.dialects.torch_ops import LIST_APPEND


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
        sample = tensor.example[example_or_value(k)] if tensor.example.size(0) > example_or_value(k) else tensor.example.new_zeros(tensor.example.shape[1:])
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
    start = empty_runtime_list(c, list_type)
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
