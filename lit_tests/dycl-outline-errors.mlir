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

// A shape the entry shapes do not determine (a loop whose carry grows, kept rolled).
// CHECK: @dynamic: op 4 (scf.for) / body / op 1 (torch.aten.cat): tensor of shape 1x?:float32 inside a would-be sub-DNN: its shape is not determined by the entry shapes
"builtin.module"() ({
  "func.func"() <{sym_name = "dynamic", function_type = (!torch.vtensor<[1,?],f32>) -> !torch.vtensor<[1,?],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,?],f32>):
    %lb = "arith.constant"() <{value = 0 : index}> : () -> index
    %ub = "arith.constant"() <{value = 3 : index}> : () -> index
    %st = "arith.constant"() <{value = 1 : index}> : () -> index
    %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %r = "scf.for"(%lb, %ub, %st, %x) ({
    ^bb1(%i: index, %acc: !torch.vtensor<[1,?],f32>):
      %l = "torch.prim.ListConstruct"(%acc, %x) : (!torch.vtensor<[1,?],f32>, !torch.vtensor<[1,?],f32>) -> !torch.list<vtensor>
      %c = "torch.aten.cat"(%l, %one) : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[1,?],f32>
      "scf.yield"(%c) : (!torch.vtensor<[1,?],f32>) -> ()
    }) : (index, index, index, !torch.vtensor<[1,?],f32>) -> !torch.vtensor<[1,?],f32>
    "func.return"(%r) : (!torch.vtensor<[1,?],f32>) -> ()
  }) : () -> ()
}) : () -> ()
