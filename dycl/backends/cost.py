"""How much arithmetic a sub-DNN does: multiply-accumulates of its convolutions and
matrix products, from the static shapes in its IR (each op's estimate is its `macs` rule
in `dycl.dialects.torch_ops`).

The runtime uses the figure to pick a sub-DNN's thread count. Waking a second intra-op
thread costs tens of microseconds per call, more than it saves on a SkipNet gate or a
CIFAR-scale block, so small sub-DNNs run on one thread (`dycl.runtime.runners`).
Element-wise work is left out: next to the products it is noise.
"""

from __future__ import annotations

from xdsl.dialects import func

from dycl.dialects.torch_ops import op_macs


def estimated_macs(function: func.FuncOp) -> int:
    return sum(op_macs(op) for op in function.walk())
