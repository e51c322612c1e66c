# RUN: %python %s | filecheck %s
# In-place tensor mutation imports in value semantics: a masked store is an index_put whose
# result is the variable's new value, a mutation in one branch is an scf.if result, and no
# `_`-suffixed (mutating) aten op is left.
import torch
import torch.nn as nn

from dycl.frontend import import_module
from dycl.ir import print_module


class MaskedStore(nn.Module):
    def forward(self, x):
        p = torch.sigmoid(x).clone()
        p[p >= 0.5] = 1.0
        return p


class ReluInBranch(nn.Module):
    def forward(self, x):
        y = x * 2
        if y.sum() > 0:
            y.relu_()
        return y


for model in (MaskedStore(), ReluInBranch()):
    print(print_module(import_module(model, (torch.randn(2, 3),)).module))

# CHECK-LABEL: "func.func"() <{function_type = (!torch.vtensor<[2,3],f32>) -> !torch.vtensor<[2,3],f32>, sym_name = "forward"}>
# CHECK-NOT:   "torch.aten.{{[a-z_]+}}_"
# CHECK:       %[[P:.*]] = "torch.aten.clone"
# CHECK:       %[[MASK:.*]] = "torch.aten.ge.Scalar"(%[[P]]
# CHECK:       %[[STORED:.*]] = "torch.aten.index_put"(%[[P]],
# CHECK-NOT:   "torch.aten.{{[a-z_]+}}_"
# CHECK:       "func.return"(%[[STORED]])

# CHECK-LABEL: "func.func"() <{function_type = (!torch.vtensor<[2,3],f32>) -> !torch.vtensor<[2,3],f32>, sym_name = "forward"}>
# CHECK-NOT:   "torch.aten.{{[a-z_]+}}_"
# CHECK:       %[[Y:.*]] = "torch.aten.mul.Scalar"
# CHECK:       %[[R:.*]] = "scf.if"
# CHECK:         %[[RELU:.*]] = "torch.aten.relu"(%[[Y]])
# CHECK-NEXT:    "scf.yield"(%[[RELU]])
# CHECK:       }, {
# CHECK-NEXT:    "scf.yield"(%[[Y]])
# CHECK-NOT:   "torch.aten.{{[a-z_]+}}_"
# CHECK:       "func.return"(%[[R]])
