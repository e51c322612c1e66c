// RUN: dycl-opt %s --split-input-file -p dycl-merge-calls | filecheck %s
// RUN: dycl-opt %s --split-input-file -p 'dycl-merge-calls{sink-into-branches=false}' | filecheck %s --check-prefix=NOSINK

// Two calls with a view between them that only the second reads: one call of a new
// sub-DNN (first body, the view, second body); the view leaves the host; the first
// call's result is still returned because the host returns it.
// CHECK-LABEL: sym_name = "chain"
// CHECK:         %[[E:[a-z0-9_]+]], %[[T:[a-z0-9_]+]] = "func.call"(%x) <{callee = @[[MERGED:subdnn_[0-9]+]]}> : (!torch.vtensor<[2,3],f32>) -> (!torch.vtensor<[2,3],f32>, !torch.vtensor<[6],f32>)
// CHECK-NEXT:    "func.return"(%[[E]], %[[T]])
// CHECK-NOT:     @exp_23
// CHECK-NOT:     @tanh_6
// CHECK:       sym_name = "[[MERGED]]"
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: !torch.vtensor<[2,3],f32>):
// CHECK-NEXT:    %[[EX:.*]] = "torch.aten.exp"(%[[A]])
// CHECK:         %[[F:.*]] = "torch.aten.flatten.using_ints"(%[[EX]], %{{.*}}, %{{.*}})
// CHECK-NEXT:    %[[TH:.*]] = "torch.aten.tanh"(%[[F]])
// CHECK-NEXT:    "func.return"(%[[EX]], %[[TH]])
// CHECK:         dycl.subdnn
// NOSINK-LABEL: sym_name = "chain"
// NOSINK:         "func.call"(%x) <{callee = @subdnn_0}>
// NOSINK-NEXT:    "func.return"
"builtin.module"() ({
  "func.func"() <{sym_name = "chain", function_type = (!torch.vtensor<[2,3],f32>) -> (!torch.vtensor<[2,3],f32>, !torch.vtensor<[6],f32>)}> ({
  ^bb0(%x: !torch.vtensor<[2,3],f32>):
    %e = "func.call"(%x) <{callee = @exp_23}> : (!torch.vtensor<[2,3],f32>) -> !torch.vtensor<[2,3],f32>
    %i0 = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
    %m1 = "torch.constant.int"() <{value = -1 : i64}> : () -> !torch.int
    %f = "torch.aten.flatten.using_ints"(%e, %i0, %m1) : (!torch.vtensor<[2,3],f32>, !torch.int, !torch.int) -> !torch.vtensor<[6],f32>
    %t = "func.call"(%f) <{callee = @tanh_6}> : (!torch.vtensor<[6],f32>) -> !torch.vtensor<[6],f32>
    "func.return"(%e, %t) : (!torch.vtensor<[2,3],f32>, !torch.vtensor<[6],f32>) -> ()
  }) : () -> ()
  "func.func"() <{sym_name = "exp_23", function_type = (!torch.vtensor<[2,3],f32>) -> !torch.vtensor<[2,3],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[2,3],f32>):
    %r = "torch.aten.exp"(%a) : (!torch.vtensor<[2,3],f32>) -> !torch.vtensor<[2,3],f32>
    "func.return"(%r) : (!torch.vtensor<[2,3],f32>) -> ()
  }) {dycl.subdnn} : () -> ()
  "func.func"() <{sym_name = "tanh_6", function_type = (!torch.vtensor<[6],f32>) -> !torch.vtensor<[6],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[6],f32>):
    %r = "torch.aten.tanh"(%a) : (!torch.vtensor<[6],f32>) -> !torch.vtensor<[6],f32>
    "func.return"(%r) : (!torch.vtensor<[6],f32>) -> ()
  }) {dycl.subdnn} : () -> ()
}) : () -> ()

// -----

// The view is host-visible (the host returns it): it stays in the host, reading the
// merged call's copy of the first result, and a clone feeds the second body. The first
// result stays a result of the merged sub-DNN because that host view reads it.
// CHECK-LABEL: sym_name = "visible_view"
// CHECK:         %[[E:[a-z0-9_]+]], %[[T:[a-z0-9_]+]] = "func.call"(%x) <{callee = @[[MERGED:subdnn_[0-9]+]]}> : (!torch.vtensor<[2,3],f32>) -> (!torch.vtensor<[2,3],f32>, !torch.vtensor<[6],f32>)
// CHECK:         %[[V:.*]] = "torch.aten.flatten.using_ints"(%[[E]], %{{.*}}, %{{.*}})
// CHECK-NEXT:    "func.return"(%[[V]], %[[T]])
// CHECK:       sym_name = "[[MERGED]]"
// CHECK:         "torch.aten.exp"
// CHECK:         "torch.aten.flatten.using_ints"
// CHECK:         "torch.aten.tanh"
"builtin.module"() ({
  "func.func"() <{sym_name = "visible_view", function_type = (!torch.vtensor<[2,3],f32>) -> (!torch.vtensor<[6],f32>, !torch.vtensor<[6],f32>)}> ({
  ^bb0(%x: !torch.vtensor<[2,3],f32>):
    %e = "func.call"(%x) <{callee = @exp_23}> : (!torch.vtensor<[2,3],f32>) -> !torch.vtensor<[2,3],f32>
    %i0 = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
    %m1 = "torch.constant.int"() <{value = -1 : i64}> : () -> !torch.int
    %f = "torch.aten.flatten.using_ints"(%e, %i0, %m1) : (!torch.vtensor<[2,3],f32>, !torch.int, !torch.int) -> !torch.vtensor<[6],f32>
    %t = "func.call"(%f) <{callee = @tanh_6}> : (!torch.vtensor<[6],f32>) -> !torch.vtensor<[6],f32>
    "func.return"(%f, %t) : (!torch.vtensor<[6],f32>, !torch.vtensor<[6],f32>) -> ()
  }) : () -> ()
  "func.func"() <{sym_name = "exp_23", function_type = (!torch.vtensor<[2,3],f32>) -> !torch.vtensor<[2,3],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[2,3],f32>):
    %r = "torch.aten.exp"(%a) : (!torch.vtensor<[2,3],f32>) -> !torch.vtensor<[2,3],f32>
    "func.return"(%r) : (!torch.vtensor<[2,3],f32>) -> ()
  }) {dycl.subdnn} : () -> ()
  "func.func"() <{sym_name = "tanh_6", function_type = (!torch.vtensor<[6],f32>) -> !torch.vtensor<[6],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[6],f32>):
    %r = "torch.aten.tanh"(%a) : (!torch.vtensor<[6],f32>) -> !torch.vtensor<[6],f32>
    "func.return"(%r) : (!torch.vtensor<[6],f32>) -> ()
  }) {dycl.subdnn} : () -> ()
}) : () -> ()

// -----

// Independent calls merge too (the second reads only a function argument); a callee
// that is still called elsewhere (@relu_4 in `other`) is kept.
// CHECK-LABEL: sym_name = "independent"
// CHECK:         %[[A:[a-z0-9_]+]], %[[B:[a-z0-9_]+]] = "func.call"(%x, %y) <{callee = @[[MERGED:subdnn_[0-9]+]]}> : (!torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>) -> (!torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>)
// CHECK-NEXT:    "func.return"(%[[A]], %[[B]])
// CHECK-LABEL: sym_name = "other"
// CHECK:         "func.call"(%x) <{callee = @relu_4}>
// CHECK-LABEL: sym_name = "relu_4"
"builtin.module"() ({
  "func.func"() <{sym_name = "independent", function_type = (!torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>) -> (!torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>)}> ({
  ^bb0(%x: !torch.vtensor<[4],f32>, %y: !torch.vtensor<[4],f32>):
    %a = "func.call"(%x) <{callee = @relu_4}> : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
    %b = "func.call"(%y) <{callee = @neg_4}> : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
    "func.return"(%a, %b) : (!torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>) -> ()
  }) : () -> ()
  "func.func"() <{sym_name = "other", function_type = (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[4],f32>):
    %a = "func.call"(%x) <{callee = @relu_4}> : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
    "func.return"(%a) : (!torch.vtensor<[4],f32>) -> ()
  }) : () -> ()
  "func.func"() <{sym_name = "relu_4", function_type = (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[4],f32>):
    %r = "torch.aten.relu"(%a) : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
    "func.return"(%r) : (!torch.vtensor<[4],f32>) -> ()
  }) {dycl.subdnn} : () -> ()
  "func.func"() <{sym_name = "neg_4", function_type = (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[4],f32>):
    %r = "torch.aten.neg"(%a) : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
    "func.return"(%r) : (!torch.vtensor<[4],f32>) -> ()
  }) {dycl.subdnn} : () -> ()
}) : () -> ()

// -----

// A host computation feeds the second call (a tensor op reading the run-time scalar
// `.item()` made): no merge.
// CHECK-LABEL: sym_name = "host_value_between"
// CHECK:         "func.call"(%x) <{callee = @relu_4}>
// CHECK:         "torch.aten.item"
// CHECK:         "torch.aten.mul.Scalar"
// CHECK:         "func.call"(%{{.*}}) <{callee = @neg_4}>
"builtin.module"() ({
  "func.func"() <{sym_name = "host_value_between", function_type = (!torch.vtensor<[4],f32>, !torch.vtensor<[],f32>) -> !torch.vtensor<[4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[4],f32>, %k: !torch.vtensor<[],f32>):
    %a = "func.call"(%x) <{callee = @relu_4}> : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
    %s = "torch.aten.item"(%k) : (!torch.vtensor<[],f32>) -> !torch.float
    %m = "torch.aten.mul.Scalar"(%a, %s) : (!torch.vtensor<[4],f32>, !torch.float) -> !torch.vtensor<[4],f32>
    %b = "func.call"(%m) <{callee = @neg_4}> : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
    "func.return"(%b) : (!torch.vtensor<[4],f32>) -> ()
  }) : () -> ()
  "func.func"() <{sym_name = "relu_4", function_type = (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[4],f32>):
    %r = "torch.aten.relu"(%a) : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
    "func.return"(%r) : (!torch.vtensor<[4],f32>) -> ()
  }) {dycl.subdnn} : () -> ()
  "func.func"() <{sym_name = "neg_4", function_type = (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[4],f32>):
    %r = "torch.aten.neg"(%a) : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
    "func.return"(%r) : (!torch.vtensor<[4],f32>) -> ()
  }) {dycl.subdnn} : () -> ()
}) : () -> ()

// -----

// SkipNet: a gate decides whether a block runs, then the next gate reads the result. The
// next gate's call moves into both branches; in the branch that runs the block it merges
// with it (one call there instead of two). Without sink-into-branches nothing changes.
// CHECK-LABEL: sym_name = "skip_block"
// CHECK:         %[[G:.*]] = "func.call"(%x) <{callee = @gate}>
// CHECK:         %[[Y:[a-z0-9_]+]], %[[G2:[a-z0-9_]+]] = "scf.if"(%{{.*}}) ({
// CHECK-NEXT:      %[[G1:.*]] = "func.call"(%x) <{callee = @gate}>
// CHECK-NEXT:      "scf.yield"(%x, %[[G1]])
// CHECK-NEXT:    }, {
// CHECK-NEXT:      %[[Z:[a-z0-9_]+]], %[[ZG:[a-z0-9_]+]] = "func.call"(%x) <{callee = @[[MERGED:subdnn_[0-9]+]]}> : (!torch.vtensor<[4],f32>) -> (!torch.vtensor<[4],f32>, !torch.vtensor<[],i1>)
// CHECK-NEXT:      "scf.yield"(%[[Z]], %[[ZG]])
// CHECK-NEXT:    })
// CHECK-NEXT:    %{{.*}} = "torch.aten.Bool.Tensor"(%[[G2]])
// CHECK:         "func.return"(%[[Y]], %{{.*}})
// CHECK-NOT:     sym_name = "block"
// CHECK:       sym_name = "[[MERGED]]"
// CHECK:         "torch.aten.tanh"
// CHECK:         "torch.aten.sum"
// CHECK:         "torch.aten.gt.Scalar"
// NOSINK-LABEL: sym_name = "skip_block"
// NOSINK:         "scf.if"
// NOSINK:           "func.call"(%x) <{callee = @block}>
// NOSINK:         "func.call"(%{{.*}}) <{callee = @gate}>
"builtin.module"() ({
  "func.func"() <{sym_name = "skip_block", function_type = (!torch.vtensor<[4],f32>) -> (!torch.vtensor<[4],f32>, i1)}> ({
  ^bb0(%x: !torch.vtensor<[4],f32>):
    %g = "func.call"(%x) <{callee = @gate}> : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[],i1>
    %b = "torch.aten.Bool.Tensor"(%g) : (!torch.vtensor<[],i1>) -> !torch.bool
    %c = "torch_c.to_i1"(%b) : (!torch.bool) -> i1
    %y = "scf.if"(%c) ({
      "scf.yield"(%x) : (!torch.vtensor<[4],f32>) -> ()
    }, {
      %z = "func.call"(%x) <{callee = @block}> : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
      "scf.yield"(%z) : (!torch.vtensor<[4],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[4],f32>
    %g2 = "func.call"(%y) <{callee = @gate}> : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[],i1>
    %b2 = "torch.aten.Bool.Tensor"(%g2) : (!torch.vtensor<[],i1>) -> !torch.bool
    %c2 = "torch_c.to_i1"(%b2) : (!torch.bool) -> i1
    "func.return"(%y, %c2) : (!torch.vtensor<[4],f32>, i1) -> ()
  }) : () -> ()
  "func.func"() <{sym_name = "gate", function_type = (!torch.vtensor<[4],f32>) -> !torch.vtensor<[],i1>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[4],f32>):
    %none = "torch.constant.none"() : () -> !torch.none
    %s = "torch.aten.sum"(%a, %none) : (!torch.vtensor<[4],f32>, !torch.none) -> !torch.vtensor<[],f32>
    %zero = "torch.constant.float"() <{value = 0.0 : f64}> : () -> !torch.float
    %r = "torch.aten.gt.Scalar"(%s, %zero) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    "func.return"(%r) : (!torch.vtensor<[],i1>) -> ()
  }) {dycl.subdnn} : () -> ()
  "func.func"() <{sym_name = "block", function_type = (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[4],f32>):
    %r = "torch.aten.tanh"(%a) : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
    "func.return"(%r) : (!torch.vtensor<[4],f32>) -> ()
  }) {dycl.subdnn} : () -> ()
}) : () -> ()

// -----

// Neither branch ends in a call (the branch only selects a value): moving the call into
// them would merge nothing, so it stays after the scf.if.
// CHECK-LABEL: sym_name = "select_then_call"
// CHECK:         "scf.if"
// CHECK-NOT:       "func.call"
// CHECK:         }) : (i1) -> !torch.vtensor<[4],f32>
// CHECK-NEXT:    "func.call"(%{{.*}}) <{callee = @neg_4}>
"builtin.module"() ({
  "func.func"() <{sym_name = "select_then_call", function_type = (!torch.vtensor<[4],f32>, !torch.vtensor<[4],f32>, i1) -> !torch.vtensor<[4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[4],f32>, %y: !torch.vtensor<[4],f32>, %c: i1):
    %s = "scf.if"(%c) ({
      "scf.yield"(%x) : (!torch.vtensor<[4],f32>) -> ()
    }, {
      "scf.yield"(%y) : (!torch.vtensor<[4],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[4],f32>
    %n = "func.call"(%s) <{callee = @neg_4}> : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
    "func.return"(%n) : (!torch.vtensor<[4],f32>) -> ()
  }) : () -> ()
  "func.func"() <{sym_name = "neg_4", function_type = (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[4],f32>):
    %r = "torch.aten.neg"(%a) : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
    "func.return"(%r) : (!torch.vtensor<[4],f32>) -> ()
  }) {dycl.subdnn} : () -> ()
}) : () -> ()
