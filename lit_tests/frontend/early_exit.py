# RUN: %python %s | filecheck %s
# An early exit imports as an scf.if on the tensor condition, weights by name, one forward.
import torch
import torch.nn as nn

from dycl.frontend import import_module
from dycl.ir import print_module


class EarlyExit(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.exit1 = nn.Linear(8, 3)
        self.exit2 = nn.Linear(8, 7)
        self.threshold = 0.5

    def forward(self, x):
        h = torch.relu(self.body(x))
        y = self.exit1(h)
        if torch.softmax(y, -1).max() > self.threshold:
            return y, 1
        return self.exit2(h), 2


program = import_module(EarlyExit(), (torch.randn(1, 8),))
print(print_module(program.module))
print("weights:", sorted(program.weights))

# CHECK:      "func.func"() <{function_type = (!torch.vtensor<[1,8],f32>) -> (!torch.vtensor<[1,?],f32>, !torch.int), sym_name = "forward"}>
# CHECK-NOT:  "func.func"
# CHECK-DAG:  "dycl.param"() {name = "body.weight"} : () -> !torch.vtensor<[8,8],f32>
# CHECK-DAG:  "dycl.param"() {name = "exit1.weight"} : () -> !torch.vtensor<[3,8],f32>
# CHECK:      %[[GT:.*]] = "torch.aten.gt.Scalar"
# CHECK:      %[[B:.*]] = "torch.aten.Bool.Tensor"(%[[GT]]) : (!torch.vtensor<[],i1>) -> !torch.bool
# CHECK:      %[[C:.*]] = "torch_c.to_i1"(%[[B]]) : (!torch.bool) -> i1
# CHECK:      "scf.if"(%[[C]]) ({
# CHECK:        "torch.tensor_static_info_cast"({{.*}}) : (!torch.vtensor<[1,3],f32>) -> !torch.vtensor<[1,?],f32>
# CHECK:        "scf.yield"
# CHECK:      }, {
# CHECK:        "dycl.param"() {name = "exit2.weight"}
# CHECK:        "torch.aten.linear"
# CHECK:        "torch.tensor_static_info_cast"({{.*}}) : (!torch.vtensor<[1,7],f32>) -> !torch.vtensor<[1,?],f32>
# CHECK:      }) : (i1) -> (!torch.vtensor<[1,?],f32>, !torch.int)
# CHECK:      "func.return"
# CHECK-NEXT: }) {dycl.output_tree = "{\22tuple\22: [0, 1]}", dycl.input_names = ["x"], dycl.input_tree = "[0]"}
# CHECK-NOT:  dense_resource
# CHECK-NOT:  torch.vtensor.literal
# CHECK:      weights: ['body.bias', 'body.weight', 'exit1.bias', 'exit1.weight', 'exit2.bias', 'exit2.weight']
