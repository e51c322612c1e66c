// RUN: dycl-opt %s -p dycl-outline --split-input-file --verify-diagnostics | filecheck %s
// RUN: not dycl-opt %s -p dycl-outline --split-input-file 2>&1 | filecheck %s --check-prefix=CLI

// An op with a region (torch-mlir's own control flow) where a sub-DNN would be.
// CHECK: @region_op: op 1 (torch.prim.If): an op with regions cannot be part of a sub-DNN or of the host (only scf.if / scf.for / scf.while are supported): %z = "torch.prim.If"(%b) (2 regions)
// CLI: dycl-outline-errors.mlir: error: @region_op: op 1 (torch.prim.If): an op with regions
"builtin.module"() ({
  "func.func"() <{function_type = (!torch.vtensor<[2],f32>, !torch.bool) -> !torch.vtensor<[2],f32>, sym_name = "region_op"}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>, %b: !torch.bool):
    %y = "torch.aten.relu"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    %z = "torch.prim.If"(%b) ({
      "torch.prim.If.yield"(%y) : (!torch.vtensor<[2],f32>) -> ()
    }, {
      "torch.prim.If.yield"(%x) : (!torch.vtensor<[2],f32>) -> ()
    }) : (!torch.bool) -> !torch.vtensor<[2],f32>
    "func.return"(%z) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()
}) : () -> ()

// -----

// A rank the entry shapes do not determine (a value joined from tensors of two ranks).
// CHECK: @unranked: op 0 (torch.aten.relu): tensor of shape *:float32 inside a would-be sub-DNN: its rank is not determined by the entry shapes
"builtin.module"() ({
  "func.func"() <{sym_name = "unranked", function_type = (!torch.vtensor<*,f32>) -> !torch.vtensor<*,f32>}> ({
  ^bb0(%x: !torch.vtensor<*,f32>):
    %y = "torch.aten.relu"(%x) : (!torch.vtensor<*,f32>) -> !torch.vtensor<*,f32>
    "func.return"(%y) : (!torch.vtensor<*,f32>) -> ()
  }) : () -> ()
}) : () -> ()
