# REQUIRES: torch-mlir-opt
# RUN: %python %s > %t.mlir
# RUN: dycl-opt %t.mlir -p dycl-const-prop -o %t.out.mlir
# RUN: torch-mlir-opt --allow-unregistered-dialect %t.out.mlir | filecheck %s

# IR produced by torch-mlir itself goes through dycl-opt and back into torch-mlir-opt.
# CHECK: func.func @forward(%{{.*}}: !torch.vtensor<[1,3,8,8],f32>)
# CHECK: "dycl.param"() {name = "0.weight"}
# CHECK: torch.aten.conv2d
# CHECK: torch.aten.relu
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from dycl.ir import print_module  # noqa: E402
from tests.support.static_import import import_static  # noqa: E402

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()).eval()
module, _ = import_static(model, torch.randn(1, 3, 8, 8))
print(print_module(module))
