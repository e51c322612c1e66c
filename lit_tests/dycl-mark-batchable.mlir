// RUN: dycl-opt %s -p dycl-mark-batchable | filecheck %s

"builtin.module"() ({

// A linear layer and a softmax over the features: rows map on their own.
// CHECK-LABEL: sym_name = "rows"
// CHECK:       }) {dycl.subdnn, dycl.batchable} : () -> ()
  "func.func"() <{sym_name = "rows", function_type = (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %w = "dycl.param"() {name = "fc.weight"} : () -> !torch.vtensor<[4,4],f32>
    %y = "torch.aten.mm"(%x, %w) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
    %d = "torch.constant.int"() {value = 1 : i64} : () -> !torch.int
    %n = "torch.constant.none"() : () -> !torch.none
    %s = "torch.aten.softmax.int"(%y, %d, %n) : (!torch.vtensor<[1,4],f32>, !torch.int, !torch.none) -> !torch.vtensor<[1,4],f32>
    "func.return"(%s) : (!torch.vtensor<[1,4],f32>) -> ()
  }) {dycl.subdnn} : () -> ()

// A softmax over dim 0 mixes the rows of a batch.
// CHECK-LABEL: sym_name = "softmax_over_rows"
// CHECK:       "func.return"
// CHECK-NEXT:  }) {dycl.subdnn} : () -> ()
  "func.func"() <{sym_name = "softmax_over_rows", function_type = (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %d = "torch.constant.int"() {value = 0 : i64} : () -> !torch.int
    %n = "torch.constant.none"() : () -> !torch.none
    %s = "torch.aten.softmax.int"(%x, %d, %n) : (!torch.vtensor<[1,4],f32>, !torch.int, !torch.none) -> !torch.vtensor<[1,4],f32>
    "func.return"(%s) : (!torch.vtensor<[1,4],f32>) -> ()
  }) {dycl.subdnn} : () -> ()

// A 0-d exit test computed from the whole batch (`x.max() > t`).
// CHECK-LABEL: sym_name = "whole_batch_condition"
// CHECK:       "func.return"
// CHECK-NEXT:  }) {dycl.subdnn} : () -> ()
  "func.func"() <{sym_name = "whole_batch_condition", function_type = (!torch.vtensor<[1,4],f32>) -> (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],i1>)}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %m = "torch.aten.max"(%x) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[],f32>
    %t = "torch.constant.float"() {value = 5.000000e-01 : f64} : () -> !torch.float
    %c = "torch.aten.gt.Scalar"(%m, %t) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    "func.return"(%x, %c) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],i1>) -> ()
  }) {dycl.subdnn} : () -> ()

// `view(1, 16)`: the one request's batch size baked into the shape.
// CHECK-LABEL: sym_name = "batch_size_in_view"
// CHECK:       "func.return"
// CHECK-NEXT:  }) {dycl.subdnn} : () -> ()
  "func.func"() <{sym_name = "batch_size_in_view", function_type = (!torch.vtensor<[1,4,4],f32>) -> !torch.vtensor<[1,16],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,4,4],f32>):
    %one = "torch.constant.int"() {value = 1 : i64} : () -> !torch.int
    %k = "torch.constant.int"() {value = 16 : i64} : () -> !torch.int
    %shape = "torch.prim.ListConstruct"(%one, %k) : (!torch.int, !torch.int) -> !torch.list<int>
    %v = "torch.aten.view"(%x, %shape) : (!torch.vtensor<[1,4,4],f32>, !torch.list<int>) -> !torch.vtensor<[1,16],f32>
    "func.return"(%v) : (!torch.vtensor<[1,16],f32>) -> ()
  }) {dycl.subdnn} : () -> ()

// `view(-1, 16)` keeps the rows.
// CHECK-LABEL: sym_name = "inferred_rows_in_view"
// CHECK:       }) {dycl.subdnn, dycl.batchable} : () -> ()
  "func.func"() <{sym_name = "inferred_rows_in_view", function_type = (!torch.vtensor<[1,4,4],f32>) -> !torch.vtensor<[1,16],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,4,4],f32>):
    %m1 = "torch.constant.int"() {value = -1 : i64} : () -> !torch.int
    %k = "torch.constant.int"() {value = 16 : i64} : () -> !torch.int
    %shape = "torch.prim.ListConstruct"(%m1, %k) : (!torch.int, !torch.int) -> !torch.list<int>
    %v = "torch.aten.view"(%x, %shape) : (!torch.vtensor<[1,4,4],f32>, !torch.list<int>) -> !torch.vtensor<[1,16],f32>
    "func.return"(%v) : (!torch.vtensor<[1,16],f32>) -> ()
  }) {dycl.subdnn} : () -> ()

// The host function is never marked.
// CHECK-LABEL: sym_name = "forward"
// CHECK:       "func.return"
// CHECK-NEXT:  }) : () -> ()
  "func.func"() <{sym_name = "forward", function_type = (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %y = "func.call"(%x) <{callee = @rows}> : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
    "func.return"(%y) : (!torch.vtensor<[1,4],f32>) -> ()
  }) : () -> ()
}) : () -> ()
