# RUN: %python %s | filecheck %s
# torch.cond -> scf.if; while_loop -> scf.while whose additional inputs (weights) stay
# loop invariants, not carries.
import torch
import torch.nn as nn
from torch._higher_order_ops.while_loop import while_loop

from dycl.frontend import import_module
from dycl.ir import print_module


class Hop(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = torch.cond(x.sum() > 0, lambda x: self.fc(x), lambda x: x * 2.0, (x,))

        def cond(i, h):
            return i < 3

        def body(i, h):
            return i + 1, self.fc(h)

        _, h = while_loop(cond, body, (torch.zeros((), dtype=torch.int64), y))
        return h


print(print_module(import_module(Hop(), (torch.randn(1, 8),)).module))

# CHECK-NOT:   "func.call"
# CHECK:       "torch_c.to_i1"
# CHECK:       "scf.if"
# CHECK:         "torch.aten.linear"
# CHECK:       }, {
# CHECK:         "torch.aten.mul.Scalar"
# CHECK:       "scf.while"(%{{[^,]*}}, %{{[^,]*}}) ({
# CHECK-NEXT:  ^{{.*}}(%{{.*}}: !torch.vtensor<[],si64>, %{{.*}}: !torch.vtensor<[1,8],f32>):
# CHECK:         "scf.condition"
# CHECK:         "torch.aten.linear"
# CHECK:         "scf.yield"
# CHECK-SAME:    (!torch.vtensor<[],si64>, !torch.vtensor<[1,8],f32>) -> ()
# CHECK-NOT:   "func.call"
