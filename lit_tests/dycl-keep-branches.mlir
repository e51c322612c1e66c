// RUN: dycl-opt %s --split-input-file -p dycl-keep-branches | filecheck %s
// RUN: dycl-opt %s --split-input-file -p 'dycl-keep-branches{backend=tvm}' | filecheck %s
// RUN: dycl-opt %s --split-input-file -p 'dycl-keep-branches{call-us=0.1 if-us=1.0}' | filecheck %s --check-prefix=COSTLY
// RUN: dycl-opt %s --split-input-file -p 'dycl-keep-branches{backend=other}' | filecheck %s --check-prefix=COSTLY

// A SkipNet gate: a gate computes a 0-d tensor, the block runs or is skipped (the skip arm
// yields its input), compute follows. Kept: the split makes up to three calls here. With a
// call cheaper than an in-graph conditional, or a backend without costs, nothing is kept.
// CHECK-LABEL: sym_name = "skip_gate"
// CHECK:         "scf.if"
// CHECK:         }) {dycl.keep} : (i1) -> !torch.vtensor<[1,4],f32>
// COSTLY-LABEL: sym_name = "skip_gate"
// COSTLY-NOT:    dycl.keep
"builtin.module"() ({
  "func.func"() <{sym_name = "skip_gate", function_type = (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %none = "torch.constant.none"() : () -> !torch.none
    %wg = "dycl.param"() {name = "gate.weight"} : () -> !torch.vtensor<[1,4],f32>
    %g = "torch.aten.linear"(%x, %wg, %none) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[1,4],f32>, !torch.none) -> !torch.vtensor<[1,1],f32>
    %s = "torch.aten.sum"(%g, %none) : (!torch.vtensor<[1,1],f32>, !torch.none) -> !torch.vtensor<[],f32>
    %half = "torch.constant.float"() <{value = 0.5 : f64}> : () -> !torch.float
    %c = "torch.aten.gt.Scalar"(%s, %half) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %cb = "torch.aten.Bool.Tensor"(%c) : (!torch.vtensor<[],i1>) -> !torch.bool
    %ci = "torch_c.to_i1"(%cb) : (!torch.bool) -> i1
    %y = "scf.if"(%ci) ({
      "scf.yield"(%x) : (!torch.vtensor<[1,4],f32>) -> ()
    }, {
      %w = "dycl.param"() {name = "block.weight"} : () -> !torch.vtensor<[4,4],f32>
      %b = "torch.aten.linear"(%x, %w, %none) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>, !torch.none) -> !torch.vtensor<[1,4],f32>
      %r = "torch.aten.relu"(%b) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
      "scf.yield"(%r) : (!torch.vtensor<[1,4],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[1,4],f32>
    %out = "torch.aten.tanh"(%y) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
    "func.return"(%out) : (!torch.vtensor<[1,4],f32>) -> ()
  }) : () -> ()
}) : () -> ()

// -----

// Nested ifs, the inner condition computed in the outer arm: the inner if is kept first,
// then the outer one, which holds it. The condition may be a one-element tensor of any
// rank (SkipNet-RNN's gate is [1,1]).
// CHECK-LABEL: sym_name = "nested"
// CHECK:         "scf.if"
// CHECK:           "scf.if"
// CHECK:           }) {dycl.keep} : (i1) -> !torch.vtensor<[2],f32>
// CHECK:         }) {dycl.keep} : (i1) -> !torch.vtensor<[2],f32>
"builtin.module"() ({
  "func.func"() <{sym_name = "nested", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %none = "torch.constant.none"() : () -> !torch.none
    %zero = "torch.constant.float"() <{value = 0.0 : f64}> : () -> !torch.float
    %s = "torch.aten.sum"(%x, %none) : (!torch.vtensor<[2],f32>, !torch.none) -> !torch.vtensor<[],f32>
    %c1 = "torch.aten.gt.Scalar"(%s, %zero) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %b1 = "torch.aten.Bool.Tensor"(%c1) : (!torch.vtensor<[],i1>) -> !torch.bool
    %i1 = "torch_c.to_i1"(%b1) : (!torch.bool) -> i1
    %r = "scf.if"(%i1) ({
      %t = "torch.aten.tanh"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      %zi = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
      %oi = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
      %m = "torch.aten.slice.Tensor"(%t, %zi, %zi, %oi, %oi) : (!torch.vtensor<[2],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.vtensor<[1],f32>
      %half = "torch.constant.float"() <{value = 0.5 : f64}> : () -> !torch.float
      %c2 = "torch.aten.gt.Scalar"(%m, %half) : (!torch.vtensor<[1],f32>, !torch.float) -> !torch.vtensor<[1],i1>
      %b2 = "torch.aten.Bool.Tensor"(%c2) : (!torch.vtensor<[1],i1>) -> !torch.bool
      %i2 = "torch_c.to_i1"(%b2) : (!torch.bool) -> i1
      %r2 = "scf.if"(%i2) ({
        %e = "torch.aten.exp"(%t) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
        "scf.yield"(%e) : (!torch.vtensor<[2],f32>) -> ()
      }, {
        "scf.yield"(%t) : (!torch.vtensor<[2],f32>) -> ()
      }) : (i1) -> !torch.vtensor<[2],f32>
      "scf.yield"(%r2) : (!torch.vtensor<[2],f32>) -> ()
    }, {
      %n = "torch.aten.neg"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%n) : (!torch.vtensor<[2],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[2],f32>
    "func.return"(%r) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()
}) : () -> ()

// -----

// An early exit: the arms yield [1,3] and [1,7] widened to [1,?] (static-info casts) and an
// int. Not kept: the result has no static shape and one result is not a tensor.
// CHECK-LABEL: sym_name = "early_exit"
// CHECK-NOT:     dycl.keep
"builtin.module"() ({
  "func.func"() <{sym_name = "early_exit", function_type = (!torch.vtensor<[1,4],f32>) -> (!torch.vtensor<[1,?],f32>, !torch.int)}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %none = "torch.constant.none"() : () -> !torch.none
    %s = "torch.aten.sum"(%x, %none) : (!torch.vtensor<[1,4],f32>, !torch.none) -> !torch.vtensor<[],f32>
    %zero = "torch.constant.float"() <{value = 0.0 : f64}> : () -> !torch.float
    %c = "torch.aten.gt.Scalar"(%s, %zero) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %cb = "torch.aten.Bool.Tensor"(%c) : (!torch.vtensor<[],i1>) -> !torch.bool
    %ci = "torch_c.to_i1"(%cb) : (!torch.bool) -> i1
    %out:2 = "scf.if"(%ci) ({
      %w1 = "dycl.param"() {name = "e1.weight"} : () -> !torch.vtensor<[3,4],f32>
      %y1 = "torch.aten.linear"(%x, %w1, %none) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[3,4],f32>, !torch.none) -> !torch.vtensor<[1,3],f32>
      %y1c = "torch.tensor_static_info_cast"(%y1) : (!torch.vtensor<[1,3],f32>) -> !torch.vtensor<[1,?],f32>
      %i0 = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
      "scf.yield"(%y1c, %i0) : (!torch.vtensor<[1,?],f32>, !torch.int) -> ()
    }, {
      %w2 = "dycl.param"() {name = "e2.weight"} : () -> !torch.vtensor<[7,4],f32>
      %y2 = "torch.aten.linear"(%x, %w2, %none) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[7,4],f32>, !torch.none) -> !torch.vtensor<[1,7],f32>
      %y2c = "torch.tensor_static_info_cast"(%y2) : (!torch.vtensor<[1,7],f32>) -> !torch.vtensor<[1,?],f32>
      %i1 = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
      "scf.yield"(%y2c, %i1) : (!torch.vtensor<[1,?],f32>, !torch.int) -> ()
    }) : (i1) -> (!torch.vtensor<[1,?],f32>, !torch.int)
    "func.return"(%out#0, %out#1) : (!torch.vtensor<[1,?],f32>, !torch.int) -> ()
  }) : () -> ()
}) : () -> ()

// -----

// Arms that are not tensor-only: one reads a value with `.item()`, one reads a host int
// (a function argument), one calls a function. Not kept.
// CHECK-LABEL: sym_name = "item_in_arm"
// CHECK-NOT:     dycl.keep
// CHECK-LABEL: sym_name = "host_int_in_arm"
// CHECK-NOT:     dycl.keep
// CHECK-LABEL: sym_name = "call_in_arm"
// CHECK-NOT:     dycl.keep
"builtin.module"() ({
  "func.func"() <{sym_name = "item_in_arm", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %none = "torch.constant.none"() : () -> !torch.none
    %s = "torch.aten.sum"(%x, %none) : (!torch.vtensor<[2],f32>, !torch.none) -> !torch.vtensor<[],f32>
    %zero = "torch.constant.float"() <{value = 0.0 : f64}> : () -> !torch.float
    %c = "torch.aten.gt.Scalar"(%s, %zero) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %cb = "torch.aten.Bool.Tensor"(%c) : (!torch.vtensor<[],i1>) -> !torch.bool
    %ci = "torch_c.to_i1"(%cb) : (!torch.bool) -> i1
    %y = "scf.if"(%ci) ({
      %f = "torch.aten.item"(%s) : (!torch.vtensor<[],f32>) -> !torch.float
      %m = "torch.aten.mul.Scalar"(%x, %f) : (!torch.vtensor<[2],f32>, !torch.float) -> !torch.vtensor<[2],f32>
      "scf.yield"(%m) : (!torch.vtensor<[2],f32>) -> ()
    }, {
      %n = "torch.aten.neg"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%n) : (!torch.vtensor<[2],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[2],f32>
    %t = "torch.aten.tanh"(%y) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    "func.return"(%t) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()
  "func.func"() <{sym_name = "host_int_in_arm", function_type = (!torch.vtensor<[2],f32>, !torch.int) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>, %k: !torch.int):
    %none = "torch.constant.none"() : () -> !torch.none
    %s = "torch.aten.sum"(%x, %none) : (!torch.vtensor<[2],f32>, !torch.none) -> !torch.vtensor<[],f32>
    %zero = "torch.constant.float"() <{value = 0.0 : f64}> : () -> !torch.float
    %c = "torch.aten.gt.Scalar"(%s, %zero) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %cb = "torch.aten.Bool.Tensor"(%c) : (!torch.vtensor<[],i1>) -> !torch.bool
    %ci = "torch_c.to_i1"(%cb) : (!torch.bool) -> i1
    %y = "scf.if"(%ci) ({
      %m = "torch.aten.mul.Scalar"(%x, %k) : (!torch.vtensor<[2],f32>, !torch.int) -> !torch.vtensor<[2],f32>
      "scf.yield"(%m) : (!torch.vtensor<[2],f32>) -> ()
    }, {
      %n = "torch.aten.neg"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%n) : (!torch.vtensor<[2],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[2],f32>
    %t = "torch.aten.tanh"(%y) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    "func.return"(%t) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()
  "func.func"() <{sym_name = "call_in_arm", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %none = "torch.constant.none"() : () -> !torch.none
    %s = "torch.aten.sum"(%x, %none) : (!torch.vtensor<[2],f32>, !torch.none) -> !torch.vtensor<[],f32>
    %zero = "torch.constant.float"() <{value = 0.0 : f64}> : () -> !torch.float
    %c = "torch.aten.gt.Scalar"(%s, %zero) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %cb = "torch.aten.Bool.Tensor"(%c) : (!torch.vtensor<[],i1>) -> !torch.bool
    %ci = "torch_c.to_i1"(%cb) : (!torch.bool) -> i1
    %y = "scf.if"(%ci) ({
      %m = "func.call"(%x) <{callee = @helper}> : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%m) : (!torch.vtensor<[2],f32>) -> ()
    }, {
      %n = "torch.aten.neg"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%n) : (!torch.vtensor<[2],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[2],f32>
    %t = "torch.aten.tanh"(%y) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    "func.return"(%t) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()
  "func.func"() <{sym_name = "helper", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %n = "torch.aten.neg"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    "func.return"(%n) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()
}) : () -> ()

// -----

// A host condition (a bool argument, not a tensor read with Bool.Tensor): not kept.
// CHECK-LABEL: sym_name = "host_condition"
// CHECK-NOT:     dycl.keep
"builtin.module"() ({
  "func.func"() <{sym_name = "host_condition", function_type = (!torch.vtensor<[2],f32>, !torch.bool) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>, %flag: !torch.bool):
    %ci = "torch_c.to_i1"(%flag) : (!torch.bool) -> i1
    %y = "scf.if"(%ci) ({
      %e = "torch.aten.exp"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%e) : (!torch.vtensor<[2],f32>) -> ()
    }, {
      %n = "torch.aten.neg"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%n) : (!torch.vtensor<[2],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[2],f32>
    %t = "torch.aten.tanh"(%y) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    "func.return"(%t) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()
}) : () -> ()

// -----

// Cost model: no compute before or after the if (the condition is an argument) and
// only one arm computes, so the split makes half a call per run and keeping makes one:
// not kept.
// CHECK-LABEL: sym_name = "nothing_to_merge"
// CHECK-NOT:     dycl.keep
"builtin.module"() ({
  "func.func"() <{sym_name = "nothing_to_merge", function_type = (!torch.vtensor<[2],f32>, !torch.vtensor<[],i1>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>, %c: !torch.vtensor<[],i1>):
    %cb = "torch.aten.Bool.Tensor"(%c) : (!torch.vtensor<[],i1>) -> !torch.bool
    %ci = "torch_c.to_i1"(%cb) : (!torch.bool) -> i1
    %y = "scf.if"(%ci) ({
      %e = "torch.aten.exp"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%e) : (!torch.vtensor<[2],f32>) -> ()
    }, {
      "scf.yield"(%x) : (!torch.vtensor<[2],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[2],f32>
    "func.return"(%y) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()
}) : () -> ()

// -----

// Two ifs on one condition chain: the first kept if gets its own copy of the chain just
// before it, the second is then the original's only user; each can travel into a sub-DNN.
// CHECK-LABEL: sym_name = "shared_condition"
// CHECK:         %[[P:.*]] = "torch.aten.gt.Scalar"
// CHECK-NEXT:    %[[B2:.*]] = "torch.aten.Bool.Tensor"(%[[P]])
// CHECK-NEXT:    %[[I2:.*]] = "torch_c.to_i1"(%[[B2]])
// CHECK-NEXT:    %[[B1:.*]] = "torch.aten.Bool.Tensor"(%[[P]])
// CHECK-NEXT:    %[[I1:.*]] = "torch_c.to_i1"(%[[B1]])
// CHECK-NEXT:    "scf.if"(%[[I1]])
// CHECK:         }) {dycl.keep}
// CHECK:         "scf.if"(%[[I2]])
// CHECK:         }) {dycl.keep}
"builtin.module"() ({
  "func.func"() <{sym_name = "shared_condition", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %none = "torch.constant.none"() : () -> !torch.none
    %s = "torch.aten.sum"(%x, %none) : (!torch.vtensor<[2],f32>, !torch.none) -> !torch.vtensor<[],f32>
    %zero = "torch.constant.float"() <{value = 0.0 : f64}> : () -> !torch.float
    %c = "torch.aten.gt.Scalar"(%s, %zero) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %cb = "torch.aten.Bool.Tensor"(%c) : (!torch.vtensor<[],i1>) -> !torch.bool
    %ci = "torch_c.to_i1"(%cb) : (!torch.bool) -> i1
    %y = "scf.if"(%ci) ({
      %e = "torch.aten.exp"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%e) : (!torch.vtensor<[2],f32>) -> ()
    }, {
      "scf.yield"(%x) : (!torch.vtensor<[2],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[2],f32>
    %t = "torch.aten.tanh"(%y) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    %z = "scf.if"(%ci) ({
      %n = "torch.aten.neg"(%t) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%n) : (!torch.vtensor<[2],f32>) -> ()
    }, {
      "scf.yield"(%t) : (!torch.vtensor<[2],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[2],f32>
    %u = "torch.aten.sin"(%z) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    "func.return"(%u) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()
}) : () -> ()
