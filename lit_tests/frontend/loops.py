# RUN: %python %s | filecheck %s
# Loop structure: range with unused index -> scf.for; break -> scf.while with a flag;
# bounded while -> scf.while; ModuleList -> unrolled.
import torch
import torch.nn as nn

from dycl.frontend import import_module
from dycl.ir import print_module


class Loops(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(8, 8)
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(2))

    def forward(self, x):
        for _ in range(3):
            x = torch.tanh(self.cell(x))
        for _ in range(5):
            x = x * 2
            if x.sum() > 10:
                break
        steps = 0
        while steps < 4 and x.norm() > 1:
            x = x / 2
            steps += 1
        for block in self.blocks:
            x = block(x)
        return x, steps


print(print_module(import_module(Loops(), (torch.randn(1, 8),)).module))

# CHECK-LABEL: sym_name = "forward"
# CHECK:       %[[LB:.*]] = "arith.constant"() <{value = 0 : index}>
# CHECK:       %[[UB:.*]] = "arith.constant"() <{value = 3 : index}>
# CHECK:       "scf.for"(%[[LB]], %[[UB]], %{{.*}}, %{{.*}}) ({
# CHECK:         "dycl.param"() {name = "cell.weight"}
# CHECK:         "scf.yield"
# First while: the counter, the break flag and x are carried; the condition reads both.
# CHECK:       "scf.while"
# CHECK:         "torch.aten.lt.int"
# CHECK:         "torch.aten.__not__"
# CHECK:         "scf.condition"
# CHECK:       }, {
# CHECK:         "torch.aten.add.int"
# CHECK:         "scf.if"
# Second while: `and` short-circuits, so the norm is computed only when the counter test holds.
# CHECK:       "scf.while"
# CHECK:         "torch.aten.lt.int"
# CHECK:         "scf.if"
# CHECK:           "torch.aten.linalg_vector_norm"
# CHECK:         "scf.condition"
# CHECK-NOT:   "scf.for"
# CHECK:       "dycl.param"() {name = "blocks.0.weight"}
# CHECK:       "dycl.param"() {name = "blocks.1.weight"}
# CHECK:       "func.return"
