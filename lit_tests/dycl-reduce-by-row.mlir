// RUN: dycl-opt %s -p dycl-reduce-by-row | filecheck %s

"builtin.module"() ({

// An SDN exit test: the max of a one-row softmax, compared with a threshold. Both become
// row-wise ([1]); only the squeezes to 0-d are left after them.
// CHECK-LABEL: sym_name = "exit_test"
// CHECK:         %[[M:.*]] = "torch.aten.amax"(%p, %{{.*}}, %{{.*}}) : (!torch.vtensor<[1,10],f32>, !torch.list<int>, !torch.bool) -> !torch.vtensor<[1],f32>
// CHECK:         %[[C:.*]] = "torch.aten.squeeze.dim"(%[[M]], %{{.*}}) : (!torch.vtensor<[1],f32>, !torch.int) -> !torch.vtensor<[],f32>
// CHECK:         %[[G:.*]] = "torch.aten.ge.Scalar"(%[[M]], %t) : (!torch.vtensor<[1],f32>, !torch.float) -> !torch.vtensor<[1],i1>
// CHECK:         %[[B:.*]] = "torch.aten.squeeze.dim"(%[[G]], %{{.*}}) : (!torch.vtensor<[1],i1>, !torch.int) -> !torch.vtensor<[],i1>
// CHECK:         "func.return"(%[[C]], %[[B]])
  "func.func"() <{sym_name = "exit_test", function_type = (!torch.vtensor<[1,10],f32>) -> (!torch.vtensor<[],f32>, !torch.vtensor<[],i1>), sym_visibility = "private"}> ({
  ^bb0(%p: !torch.vtensor<[1,10],f32>):
    %confidence = "torch.aten.max"(%p) : (!torch.vtensor<[1,10],f32>) -> !torch.vtensor<[],f32>
    %t = "torch.constant.float"() <{value = 8.000000e-01 : f64}> : () -> !torch.float
    %exit = "torch.aten.ge.Scalar"(%confidence, %t) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    "func.return"(%confidence, %exit) : (!torch.vtensor<[],f32>, !torch.vtensor<[],i1>) -> ()
  }) {dycl.subdnn} : () -> ()

// A mean over a 4-d feature map and a sum: reduced over dims 1..; a tensor of two rows, a
// reduction to a dtype and the host function are left as they are.
// CHECK-LABEL: sym_name = "others"
// CHECK:         "torch.aten.mean.dim"(%x, %{{.*}}, %{{.*}}, %{{.*}}) : (!torch.vtensor<[1,4,2,2],f32>, !torch.list<int>, !torch.bool, !torch.none) -> !torch.vtensor<[1],f32>
// CHECK:         "torch.aten.sum.dim_IntList"(%x, %{{.*}}, %{{.*}}, %{{.*}}) : (!torch.vtensor<[1,4,2,2],f32>, !torch.list<int>, !torch.bool, !torch.none) -> !torch.vtensor<[1],f32>
// CHECK:         "torch.aten.max"(%two) : (!torch.vtensor<[2,10],f32>) -> !torch.vtensor<[],f32>
// CHECK:         "torch.aten.sum"(%x, %f64) : (!torch.vtensor<[1,4,2,2],f32>, !torch.int) -> !torch.vtensor<[],f64>
  "func.func"() <{sym_name = "others", function_type = (!torch.vtensor<[1,4,2,2],f32>, !torch.vtensor<[2,10],f32>) -> (!torch.vtensor<[],f32>, !torch.vtensor<[],f32>, !torch.vtensor<[],f32>, !torch.vtensor<[],f64>), sym_visibility = "private"}> ({
  ^bb0(%x: !torch.vtensor<[1,4,2,2],f32>, %two: !torch.vtensor<[2,10],f32>):
    %none = "torch.constant.none"() : () -> !torch.none
    %m = "torch.aten.mean"(%x, %none) : (!torch.vtensor<[1,4,2,2],f32>, !torch.none) -> !torch.vtensor<[],f32>
    %s = "torch.aten.sum"(%x, %none) : (!torch.vtensor<[1,4,2,2],f32>, !torch.none) -> !torch.vtensor<[],f32>
    %w = "torch.aten.max"(%two) : (!torch.vtensor<[2,10],f32>) -> !torch.vtensor<[],f32>
    %f64 = "torch.constant.int"() <{value = 7 : i64}> : () -> !torch.int
    %d = "torch.aten.sum"(%x, %f64) : (!torch.vtensor<[1,4,2,2],f32>, !torch.int) -> !torch.vtensor<[],f64>
    "func.return"(%m, %s, %w, %d) : (!torch.vtensor<[],f32>, !torch.vtensor<[],f32>, !torch.vtensor<[],f32>, !torch.vtensor<[],f64>) -> ()
  }) {dycl.subdnn} : () -> ()

// A SkipNet gate `prob[0, 0] > 0.5`: the row's element and the comparison, row by row.
// CHECK-LABEL: sym_name = "gate"
// CHECK:         %[[E:.*]] = "torch.aten.select.int"(%prob, %{{.*}}, %{{.*}}) : (!torch.vtensor<[1,2],f32>, !torch.int, !torch.int) -> !torch.vtensor<[1],f32>
// CHECK:         %[[G:.*]] = "torch.aten.gt.Scalar"(%[[E]], %half) : (!torch.vtensor<[1],f32>, !torch.float) -> !torch.vtensor<[1],i1>
// CHECK:         %[[B:.*]] = "torch.aten.squeeze.dim"(%[[G]], %{{.*}}) : (!torch.vtensor<[1],i1>, !torch.int) -> !torch.vtensor<[],i1>
// CHECK-NEXT:    "func.return"(%[[B]])
  "func.func"() <{sym_name = "gate", function_type = (!torch.vtensor<[1,2],f32>) -> !torch.vtensor<[],i1>, sym_visibility = "private"}> ({
  ^bb0(%prob: !torch.vtensor<[1,2],f32>):
    %zero = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
    %row = "torch.aten.select.int"(%prob, %zero, %zero) : (!torch.vtensor<[1,2],f32>, !torch.int, !torch.int) -> !torch.vtensor<[2],f32>
    %p = "torch.aten.select.int"(%row, %zero, %zero) : (!torch.vtensor<[2],f32>, !torch.int, !torch.int) -> !torch.vtensor<[],f32>
    %half = "torch.constant.float"() <{value = 5.000000e-01 : f64}> : () -> !torch.float
    %on = "torch.aten.gt.Scalar"(%p, %half) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    "func.return"(%on) : (!torch.vtensor<[],i1>) -> ()
  }) {dycl.subdnn} : () -> ()

// A recurrent gate's `x.view(1, 10)`: the view to [-1, 10] keeps the rows rows; a view that
// moves dim 0 stays.
// CHECK-LABEL: sym_name = "views"
// CHECK:         %[[M:.*]] = "torch.constant.int"() <{value = -1 : i64}>
// CHECK:         %[[S:.*]] = "torch.prim.ListConstruct"(%[[M]], %{{.*}})
// CHECK:         "torch.aten.view"(%x, %[[S]]) : (!torch.vtensor<[1,10,1,1],f32>, !torch.list<int>) -> !torch.vtensor<[1,10],f32>
// CHECK:         "torch.aten.view"(%x, %moved) : (!torch.vtensor<[1,10,1,1],f32>, !torch.list<int>) -> !torch.vtensor<[10,1],f32>
  "func.func"() <{sym_name = "views", function_type = (!torch.vtensor<[1,10,1,1],f32>) -> (!torch.vtensor<[1,10],f32>, !torch.vtensor<[10,1],f32>), sym_visibility = "private"}> ({
  ^bb0(%x: !torch.vtensor<[1,10,1,1],f32>):
    %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %ten = "torch.constant.int"() <{value = 10 : i64}> : () -> !torch.int
    %shape = "torch.prim.ListConstruct"(%one, %ten) : (!torch.int, !torch.int) -> !torch.list<int>
    %v = "torch.aten.view"(%x, %shape) : (!torch.vtensor<[1,10,1,1],f32>, !torch.list<int>) -> !torch.vtensor<[1,10],f32>
    %moved = "torch.prim.ListConstruct"(%ten, %one) : (!torch.int, !torch.int) -> !torch.list<int>
    %w = "torch.aten.view"(%x, %moved) : (!torch.vtensor<[1,10,1,1],f32>, !torch.list<int>) -> !torch.vtensor<[10,1],f32>
    "func.return"(%v, %w) : (!torch.vtensor<[1,10],f32>, !torch.vtensor<[10,1],f32>) -> ()
  }) {dycl.subdnn} : () -> ()

// The max of a one-row bool tensor stays (not every backend has amax of bools).
// CHECK-LABEL: sym_name = "bools"
// CHECK:         "torch.aten.max"(%m) : (!torch.vtensor<[1,4],i1>) -> !torch.vtensor<[],i1>
  "func.func"() <{sym_name = "bools", function_type = (!torch.vtensor<[1,4],i1>) -> !torch.vtensor<[],i1>, sym_visibility = "private"}> ({
  ^bb0(%m: !torch.vtensor<[1,4],i1>):
    %any = "torch.aten.max"(%m) : (!torch.vtensor<[1,4],i1>) -> !torch.vtensor<[],i1>
    "func.return"(%any) : (!torch.vtensor<[],i1>) -> ()
  }) {dycl.subdnn} : () -> ()

// CHECK-LABEL: sym_name = "host"
// CHECK:         "torch.aten.max"(%p)
  "func.func"() <{sym_name = "host", function_type = (!torch.vtensor<[1,10],f32>) -> !torch.vtensor<[],f32>}> ({
  ^bb0(%p: !torch.vtensor<[1,10],f32>):
    %confidence = "torch.aten.max"(%p) : (!torch.vtensor<[1,10],f32>) -> !torch.vtensor<[],f32>
    "func.return"(%confidence) : (!torch.vtensor<[],f32>) -> ()
  }) : () -> ()
}) : () -> ()
