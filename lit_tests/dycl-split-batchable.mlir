// RUN: dycl-opt %s --split-input-file -p dycl-split-batchable | filecheck %s

// An exit test `max(softmax(fc(x))) > t` beside the block: the block and the softmax go
// to @block (row by row), the 0-d test to @block_per_request; the call becomes two calls.
// CHECK-LABEL: sym_name = "forward"
// CHECK:       %y, %0 = "func.call"(%x) <{callee = @block}>
// CHECK-NEXT:  %exit = "func.call"(%0) <{callee = @block_per_request}>
// CHECK-NEXT:  "func.return"(%y, %exit)
// CHECK-LABEL: sym_name = "block"
// CHECK-NOT:   torch.aten.max
// CHECK:       torch.aten.mm
// CHECK:       torch.aten.softmax.int
// CHECK-NOT:   torch.aten.gt.Scalar
// CHECK:       }) {dycl.subdnn} : () -> ()
// CHECK-LABEL: sym_name = "block_per_request"
// CHECK-NOT:   torch.aten.mm
// CHECK:       torch.aten.max
// CHECK:       torch.aten.gt.Scalar
// CHECK:       }) {dycl.subdnn} : () -> ()
"builtin.module"() ({
  "func.func"() <{sym_name = "forward", function_type = (!torch.vtensor<[1,4],f32>) -> (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],i1>)}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %y, %exit = "func.call"(%x) <{callee = @block}> : (!torch.vtensor<[1,4],f32>) -> (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],i1>)
    "func.return"(%y, %exit) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],i1>) -> ()
  }) : () -> ()
  "func.func"() <{sym_name = "block", function_type = (!torch.vtensor<[1,4],f32>) -> (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],i1>), sym_visibility = "private"}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %w = "dycl.param"() {name = "fc.weight"} : () -> !torch.vtensor<[4,4],f32>
    %y = "torch.aten.mm"(%x, %w) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
    %d = "torch.constant.int"() {value = 1 : i64} : () -> !torch.int
    %n = "torch.constant.none"() : () -> !torch.none
    %s = "torch.aten.softmax.int"(%y, %d, %n) : (!torch.vtensor<[1,4],f32>, !torch.int, !torch.none) -> !torch.vtensor<[1,4],f32>
    %m = "torch.aten.max"(%s) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[],f32>
    %t = "torch.constant.float"() {value = 5.000000e-01 : f64} : () -> !torch.float
    %c = "torch.aten.gt.Scalar"(%m, %t) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    "func.return"(%y, %c) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],i1>) -> ()
  }) {dycl.subdnn} : () -> ()
}) : () -> ()

// -----

// An argument without rows (an earlier block's 0-d confidence) goes to the per-request
// part only; an argument the rest reads as it came is passed by the host, and a row value
// both returned and read by the rest is returned once.
// CHECK-LABEL: sym_name = "forward"
// CHECK:       %y = "func.call"(%x) <{callee = @last}>
// CHECK-NEXT:  %best = "func.call"(%x, %y, %earlier) <{callee = @last_per_request}>
// CHECK-LABEL: sym_name = "last"
// CHECK:       ^bb0(%x{{.*}}: !torch.vtensor<[1,4],f32>):
// CHECK-LABEL: sym_name = "last_per_request"
// CHECK:       ^bb0(%x{{.*}}: !torch.vtensor<[1,4],f32>, %{{.*}}: !torch.vtensor<[1,4],f32>, %earlier{{.*}}: !torch.vtensor<[],f32>):
// CHECK:       torch.aten.stack
"builtin.module"() ({
  "func.func"() <{sym_name = "forward", function_type = (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],f32>) -> (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],si64>)}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>, %earlier: !torch.vtensor<[],f32>):
    %y, %best = "func.call"(%x, %earlier) <{callee = @last}> : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],f32>) -> (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],si64>)
    "func.return"(%y, %best) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],si64>) -> ()
  }) : () -> ()
  "func.func"() <{sym_name = "last", function_type = (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],f32>) -> (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],si64>), sym_visibility = "private"}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>, %earlier: !torch.vtensor<[],f32>):
    %w = "dycl.param"() {name = "fc.weight"} : () -> !torch.vtensor<[4,4],f32>
    %y = "torch.aten.mm"(%x, %w) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
    %mx = "torch.aten.max"(%x) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[],f32>
    %my = "torch.aten.max"(%y) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[],f32>
    %list = "torch.prim.ListConstruct"(%earlier, %mx, %my) : (!torch.vtensor<[],f32>, !torch.vtensor<[],f32>, !torch.vtensor<[],f32>) -> !torch.list<vtensor>
    %zero = "torch.constant.int"() {value = 0 : i64} : () -> !torch.int
    %all = "torch.aten.stack"(%list, %zero) : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[3],f32>
    %none = "torch.constant.none"() : () -> !torch.none
    %false = "torch.constant.bool"() {value = false} : () -> !torch.bool
    %best = "torch.aten.argmax"(%all, %none, %false) : (!torch.vtensor<[3],f32>, !torch.none, !torch.bool) -> !torch.vtensor<[],si64>
    "func.return"(%y, %best) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],si64>) -> ()
  }) {dycl.subdnn} : () -> ()
}) : () -> ()

// -----

// Already batchable: nothing reads the whole batch, nothing to split.
// CHECK-LABEL: sym_name = "rows"
// CHECK-NOT:   _per_request
"builtin.module"() ({
  "func.func"() <{sym_name = "rows", function_type = (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>, sym_visibility = "private"}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %w = "dycl.param"() {name = "fc.weight"} : () -> !torch.vtensor<[4,4],f32>
    %y = "torch.aten.mm"(%x, %w) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
    "func.return"(%y) : (!torch.vtensor<[1,4],f32>) -> ()
  }) {dycl.subdnn} : () -> ()
}) : () -> ()

// -----

// The whole batch is read before the work (`view(1, 4)` then the product): the row part
// would do nothing worth a second call.
// CHECK-LABEL: sym_name = "whole_first"
// CHECK-NOT:   _per_request
"builtin.module"() ({
  "func.func"() <{sym_name = "whole_first", function_type = (!torch.vtensor<[1,2,2],f32>) -> !torch.vtensor<[1,4],f32>, sym_visibility = "private"}> ({
  ^bb0(%x: !torch.vtensor<[1,2,2],f32>):
    %one = "torch.constant.int"() {value = 1 : i64} : () -> !torch.int
    %four = "torch.constant.int"() {value = 4 : i64} : () -> !torch.int
    %shape = "torch.prim.ListConstruct"(%one, %four) : (!torch.int, !torch.int) -> !torch.list<int>
    %v = "torch.aten.view"(%x, %shape) : (!torch.vtensor<[1,2,2],f32>, !torch.list<int>) -> !torch.vtensor<[1,4],f32>
    %w = "dycl.param"() {name = "fc.weight"} : () -> !torch.vtensor<[4,4],f32>
    %y = "torch.aten.mm"(%v, %w) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
    "func.return"(%y) : (!torch.vtensor<[1,4],f32>) -> ()
  }) {dycl.subdnn} : () -> ()
}) : () -> ()

// -----

// A gate kept inside the sub-DNN (an ONNX If): left alone.
// CHECK-LABEL: sym_name = "kept_gate"
// CHECK-NOT:   _per_request
"builtin.module"() ({
  "func.func"() <{sym_name = "kept_gate", function_type = (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>, sym_visibility = "private"}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %w = "dycl.param"() {name = "fc.weight"} : () -> !torch.vtensor<[4,4],f32>
    %y = "torch.aten.mm"(%x, %w) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
    %m = "torch.aten.max"(%y) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[],f32>
    %t = "torch.constant.float"() {value = 5.000000e-01 : f64} : () -> !torch.float
    %c = "torch.aten.gt.Scalar"(%m, %t) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %b = "torch.aten.Bool.Tensor"(%c) : (!torch.vtensor<[],i1>) -> !torch.bool
    %i1 = "torch_c.to_i1"(%b) : (!torch.bool) -> i1
    %none = "torch.constant.none"() : () -> !torch.none
    %r = "scf.if"(%i1) ({
      %z = "torch.aten.mm"(%y, %w) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
      "scf.yield"(%z) : (!torch.vtensor<[1,4],f32>) -> ()
    }, {
      %z = "torch.aten.clone"(%y, %none) : (!torch.vtensor<[1,4],f32>, !torch.none) -> !torch.vtensor<[1,4],f32>
      "scf.yield"(%z) : (!torch.vtensor<[1,4],f32>) -> ()
    }) {dycl.keep} : (i1) -> !torch.vtensor<[1,4],f32>
    "func.return"(%r) : (!torch.vtensor<[1,4],f32>) -> ()
  }) {dycl.subdnn} : () -> ()
}) : () -> ()
