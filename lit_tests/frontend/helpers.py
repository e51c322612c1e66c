# RUN: %python %s | filecheck %s
# A helper method and a submodule forward that branch are inlined: their ifs become scf.if.
import torch
import torch.nn as nn

from dycl.frontend import import_module
from dycl.ir import print_module


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        if x.mean() > 0:
            return x + self.fc(x)
        return x


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Gated(), Gated())

    def scale(self, x):
        if x.sum() < 0:
            return -x
        return x

    def forward(self, x):
        x = self.scale(x)
        for block in self.blocks:
            x = block(x)
        return x


print(print_module(import_module(Model(), (torch.randn(1, 8),)).module))

# CHECK:     "torch.aten.neg"
# CHECK:     "scf.if"
# CHECK:     "dycl.param"() {name = "blocks.0.fc.weight"}
# CHECK:     "scf.if"
# CHECK:     "dycl.param"() {name = "blocks.1.fc.weight"}
# CHECK-NOT: "func.call"
