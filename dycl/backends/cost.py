"""How much arithmetic a sub-DNN does: multiply-accumulates of its convolutions and
matrix products, from the static shapes in its IR.

The runtime uses the figure to pick a sub-DNN's thread count. Waking a second intra-op
thread costs tens of microseconds per call, more than it saves on a SkipNet gate or a
CIFAR-scale block, so small sub-DNNs run on one thread (`dycl.runtime.runners`).
Element-wise work is left out: next to the products it is noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from xdsl.dialects import func
from xdsl.ir import Operation

from dycl.dialects.torch import ValueTensorType, op_name


def _dims(value) -> tuple[int, ...] | None:
    type_ = value.type
    if not isinstance(type_, ValueTensorType) or not type_.has_static_shape:
        return None
    return tuple(type_.shape)


def _per_output(operand: int, inner: Callable[[tuple[int, ...]], int]) -> Callable[[Operation], int | None]:
    """MACs = output elements x `inner(shape of operand #operand)`."""

    def macs(op: Operation) -> int | None:
        if len(op.operands) <= operand or not op.results:
            return None
        result, source = _dims(op.results[0]), _dims(op.operands[operand])
        if result is None or source is None or not source:
            return None
        return math.prod(result) * inner(source)

    return macs


def _weight_fan_in(shape: tuple[int, ...]) -> int:
    return math.prod(shape[1:])  # conv [Cout, Cin/groups, k...], linear [out, in]


def _reduced_dim(shape: tuple[int, ...]) -> int:
    return shape[-1]  # matmul-like: [..., M, K] @ [..., K, N]


_MACS: dict[str, Callable[[Operation], int | None]] = {
    **{name: _per_output(1, _weight_fan_in) for name in (
        "torch.aten.conv1d", "torch.aten.conv2d", "torch.aten.conv3d",
        "torch.aten.convolution", "torch.aten._convolution", "torch.aten.linear",
    )},
    **{name: _per_output(0, _reduced_dim) for name in (
        "torch.aten.matmul", "torch.aten.mm", "torch.aten.bmm",
    )},
    **{name: _per_output(1, _reduced_dim) for name in (
        "torch.aten.addmm", "torch.aten.baddbmm",
    )},
}


def estimated_macs(function: func.FuncOp) -> int:
    total = 0
    for op in function.walk():
        estimate = _MACS.get(op_name(op))
        if estimate is not None:
            total += estimate(op) or 0
    return total
