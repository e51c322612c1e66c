# RUN: %python %s > %t.mlir
# RUN: dycl-opt %t.mlir | filecheck %s
# RUN: dycl-opt %t.mlir -p dycl-outline | filecheck %s --check-prefix=OUTLINE
# The frontend's output parses again with dycl-opt, and the outliner splits it into sub-DNNs.
import torch
import torch.nn as nn

from dycl.frontend import import_module
from dycl.ir import print_module


class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        h = torch.relu(self.conv(x)).mean((2, 3))
        if h.sum() > 0:
            return self.head(h)
        return -self.head(h)


print(print_module(import_module(Gate(), (torch.randn(1, 3, 8, 8),)).module))

# CHECK:     "dycl.param"() {name = "conv.weight"} : () -> !torch.vtensor<[4,3,3,3],f32>
# CHECK:     "torch.aten.conv2d"
# CHECK:     "scf.if"
# OUTLINE:   dycl.subdnn
