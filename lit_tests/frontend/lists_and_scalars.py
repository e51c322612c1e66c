# RUN: %python %s | filecheck %s
# Host-level values: a list of data-dependent length, .item() comparisons, an int counter.
import torch
import torch.nn as nn

from dycl.frontend import import_module
from dycl.ir import print_module


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(8, 8)

    def forward(self, h):
        outputs = []
        for _ in range(4):
            h = torch.tanh(self.cell(h))
            outputs.append(h)
            if h.max().item() > 0.9:
                break
        return torch.stack(outputs), len(outputs)


print(print_module(import_module(Decoder(), (torch.randn(1, 8),)).module))

# CHECK:     %[[L:.*]] = "torch.prim.ListConstruct"() : () -> !torch.list<vtensor>
# CHECK:     "scf.while"({{.*}}%[[L]]
# CHECK:       "torch.aten.append.t"
# CHECK:       "torch.aten.item"({{.*}}) : (!torch.vtensor<[],f32>) -> !torch.float
# CHECK:       "torch.aten.gt.float"({{.*}}) : (!torch.float, !torch.float) -> !torch.bool
# CHECK:       "torch_c.to_i1"
# CHECK:       "scf.if"
# CHECK:     "torch.aten.stack"({{.*}}) : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[?,1,8],f32>
# CHECK:     "torch.aten.len.t"({{.*}}) : (!torch.list<vtensor>) -> !torch.int
