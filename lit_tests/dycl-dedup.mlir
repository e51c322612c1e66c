// RUN: dycl-opt %s -p dycl-outline,dycl-dedup | filecheck %s
// RUN: dycl-opt %s -p 'dycl-outline,dycl-dedup{weights-as-args=true}' | filecheck %s --check-prefix=ARGS

"builtin.module"() ({

// A recurrent step peeled once before a rolled loop of the same step: the loop body and the
// peeled copy read the same weights with the same shapes, so both call one function.
// CHECK-LABEL: sym_name = "peeled_loop"
// CHECK:         %[[H:.*]] = "func.call"(%x) <{callee = @[[STEP:subdnn_[0-9]+]]}> : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
// CHECK:         "scf.for"
// CHECK:           "func.call"(%{{.*}}) <{callee = @[[STEP]]}> : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
  "func.func"() <{sym_name = "peeled_loop", function_type = (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %w0 = "dycl.param"() {name = "cell.weight"} : () -> !torch.vtensor<[4,4],f32>
    %y0 = "torch.aten.mm"(%x, %w0) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
    %h0 = "torch.aten.tanh"(%y0) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
    %lb = "arith.constant"() <{value = 0 : index}> : () -> index
    %ub = "arith.constant"() <{value = 100 : index}> : () -> index
    %st = "arith.constant"() <{value = 1 : index}> : () -> index
    %r = "scf.for"(%lb, %ub, %st, %h0) ({
    ^bb1(%i: index, %acc: !torch.vtensor<[1,4],f32>):
      %w = "dycl.param"() {name = "cell.weight"} : () -> !torch.vtensor<[4,4],f32>
      %y = "torch.aten.mm"(%acc, %w) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
      %h = "torch.aten.tanh"(%y) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
      "scf.yield"(%h) : (!torch.vtensor<[1,4],f32>) -> ()
    }) : (index, index, index, !torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
    "func.return"(%r) : (!torch.vtensor<[1,4],f32>) -> ()
  }) : () -> ()

// Two gated blocks of the same shape with different weights: kept apart by default; with
// weights-as-args they share one function and the host passes each block's weights.
// CHECK-LABEL: sym_name = "two_blocks"
// CHECK:         "func.call"(%x) <{callee = @[[B1:subdnn_[0-9]+]]}>
// CHECK:         "func.call"(%{{.*}}) <{callee = @[[B2:subdnn_[0-9]+]]}>
// CHECK-NOT:     "dycl.param"
// ARGS-LABEL: sym_name = "two_blocks"
// ARGS:         %[[W1:.*]] = "dycl.param"() {name = "b1.weight"} : () -> !torch.vtensor<[4,4],f32>
// ARGS-NEXT:    "func.call"(%x, %[[W1]]) <{callee = @[[SHARED:subdnn_[0-9]+]]}> : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
// ARGS:         %[[W2:.*]] = "dycl.param"() {name = "b2.weight"} : () -> !torch.vtensor<[4,4],f32>
// ARGS-NEXT:    "func.call"(%{{.*}}, %[[W2]]) <{callee = @[[SHARED]]}>
  "func.func"() <{sym_name = "two_blocks", function_type = (!torch.vtensor<[1,4],f32>, i1) -> !torch.vtensor<[1,4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>, %p: i1):
    %w1 = "dycl.param"() {name = "b1.weight"} : () -> !torch.vtensor<[4,4],f32>
    %y1 = "torch.aten.mm"(%x, %w1) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
    %h1 = "torch.aten.relu"(%y1) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
    %r = "scf.if"(%p) ({
      %w2 = "dycl.param"() {name = "b2.weight"} : () -> !torch.vtensor<[4,4],f32>
      %y2 = "torch.aten.mm"(%h1, %w2) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
      %h2 = "torch.aten.relu"(%y2) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
      "scf.yield"(%h2) : (!torch.vtensor<[1,4],f32>) -> ()
    }, {
      "scf.yield"(%h1) : (!torch.vtensor<[1,4],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[1,4],f32>
    "func.return"(%r) : (!torch.vtensor<[1,4],f32>) -> ()
  }) : () -> ()

// The shared function of the peeled loop keeps its weight inside (same name everywhere);
// the blocks' shared function takes the weight as its last argument.
// CHECK:         sym_name = "[[STEP]]"
// CHECK:         "dycl.param"() {name = "cell.weight"}
// CHECK-NOT:     sym_name = "subdnn_1"
// ARGS:          sym_name = "[[SHARED]]", function_type = (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
// ARGS-NOT:      "dycl.param"
// ARGS:          "torch.aten.mm"
// ARGS-NOT:      sym_name = "subdnn_
}) : () -> ()
