// RUN: dycl-opt %s -p dycl-outline | filecheck %s
// RUN: dycl-opt %s -p 'dycl-outline{min-ops=2 prefix="net_"}' | filecheck %s --check-prefix=OPTS
// RUN: dycl-opt %s -p dycl-outline | dycl-opt -p dycl-outline | filecheck %s

"builtin.module"() ({

// The run before the branch computes the condition as a 0-d bool tensor result; the host
// reads the flag. Each branch body is its own sub-DNN; weights are cloned in.
// CHECK-LABEL: sym_name = "early_exit"
// CHECK:         %[[H:.*]], %[[C:.*]] = "func.call"(%x) <{callee = @subdnn_[[S0:[0-9]+]]}> : (!torch.vtensor<[1,4],f32>) -> (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],i1>)
// CHECK-NEXT:    %[[B:.*]] = "torch.aten.Bool.Tensor"(%[[C]])
// CHECK-NEXT:    %[[I:.*]] = "torch_c.to_i1"(%[[B]])
// CHECK-NEXT:    "scf.if"(%[[I]])
// CHECK-NEXT:      "func.call"(%[[H]]) <{callee = @subdnn_{{[0-9]+}}}> : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,3],f32>
// CHECK:           "func.call"(%[[H]]) <{callee = @subdnn_{{[0-9]+}}}> : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,7],f32>
// CHECK-NOT:     "torch.aten.linear"
// CHECK:         "func.return"
// OPTS-LABEL: sym_name = "early_exit"
// OPTS:         "func.call"(%x) <{callee = @net_0}>
  "func.func"() <{sym_name = "early_exit", function_type = (!torch.vtensor<[1,4],f32>) -> (!torch.vtensor<[1,?],f32>, !torch.int)}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %w0 = "dycl.param"() {name = "l0.weight"} : () -> !torch.vtensor<[4,4],f32>
    %none = "torch.constant.none"() : () -> !torch.none
    %h = "torch.aten.linear"(%x, %w0, %none) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>, !torch.none) -> !torch.vtensor<[1,4],f32>
    %s = "torch.aten.sum"(%h, %none) : (!torch.vtensor<[1,4],f32>, !torch.none) -> !torch.vtensor<[],f32>
    %zero = "torch.constant.float"() <{value = 0.0 : f64}> : () -> !torch.float
    %c = "torch.aten.gt.Scalar"(%s, %zero) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %cb = "torch.aten.Bool.Tensor"(%c) : (!torch.vtensor<[],i1>) -> !torch.bool
    %ci = "torch_c.to_i1"(%cb) : (!torch.bool) -> i1
    %out:2 = "scf.if"(%ci) ({
      %w1 = "dycl.param"() {name = "e1.weight"} : () -> !torch.vtensor<[3,4],f32>
      %y1 = "torch.aten.linear"(%h, %w1, %none) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[3,4],f32>, !torch.none) -> !torch.vtensor<[1,3],f32>
      %y1c = "torch.tensor_static_info_cast"(%y1) : (!torch.vtensor<[1,3],f32>) -> !torch.vtensor<[1,?],f32>
      %i0 = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
      "scf.yield"(%y1c, %i0) : (!torch.vtensor<[1,?],f32>, !torch.int) -> ()
    }, {
      %w2 = "dycl.param"() {name = "e2.weight"} : () -> !torch.vtensor<[7,4],f32>
      %y2 = "torch.aten.linear"(%h, %w2, %none) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[7,4],f32>, !torch.none) -> !torch.vtensor<[1,7],f32>
      %y2c = "torch.tensor_static_info_cast"(%y2) : (!torch.vtensor<[1,7],f32>) -> !torch.vtensor<[1,?],f32>
      %i1 = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
      "scf.yield"(%y2c, %i1) : (!torch.vtensor<[1,?],f32>, !torch.int) -> ()
    }) : (i1) -> (!torch.vtensor<[1,?],f32>, !torch.int)
    "func.return"(%out#0, %out#1) : (!torch.vtensor<[1,?],f32>, !torch.int) -> ()
  }) : () -> ()

// Nested ifs, the inner condition computed from the outer branch's tensors (a condition
// feeding a condition): the inner flag is a result of the outer branch's sub-DNN.
// CHECK-LABEL: sym_name = "nested"
// CHECK:         %[[C1:.*]] = "func.call"(%x) <{callee = @subdnn_{{[0-9]+}}}> : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[],i1>
// CHECK:         "scf.if"
// CHECK-NEXT:      %[[T:.*]], %[[C2:.*]] = "func.call"(%x) <{callee = @subdnn_{{[0-9]+}}}> : (!torch.vtensor<[2],f32>) -> (!torch.vtensor<[2],f32>, !torch.vtensor<[],i1>)
// CHECK-NEXT:      "torch.aten.Bool.Tensor"(%[[C2]])
// CHECK-NEXT:      "torch_c.to_i1"
// CHECK-NEXT:      "scf.if"
// CHECK-NEXT:        "func.call"(%[[T]]) <{callee = @subdnn_{{[0-9]+}}}>
// CHECK:             "scf.yield"(%[[T]])
// CHECK:           "func.call"(%x)
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
      %m = "torch.aten.max"(%t) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[],f32>
      %half = "torch.constant.float"() <{value = 0.5 : f64}> : () -> !torch.float
      %c2 = "torch.aten.gt.Scalar"(%m, %half) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
      %b2 = "torch.aten.Bool.Tensor"(%c2) : (!torch.vtensor<[],i1>) -> !torch.bool
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

// A loop kept rolled: its body is one sub-DNN called once per iteration. Host scalar ops
// inside the run's span do not split it: the counter update stays before the call, the
// `.item()` that reads the run moves after it.
// CHECK-LABEL: sym_name = "rolled_loop"
// CHECK:         "scf.for"
// CHECK-NEXT:    ^{{.*}}(%{{.*}}: index, %[[ACC:.*]]: !torch.vtensor<[1,4],f32>, %[[N:.*]]: !torch.int, %{{.*}}: !torch.float):
// CHECK:           %[[N2:.*]] = "torch.aten.add.int"(%[[N]], %{{.*}})
// CHECK-NEXT:      %[[Y:.*]], %[[M:.*]] = "func.call"(%[[ACC]]) <{callee = @subdnn_{{[0-9]+}}}> : (!torch.vtensor<[1,4],f32>) -> (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],f32>)
// CHECK-NEXT:      %[[F:.*]] = "torch.aten.item"(%[[M]])
// CHECK-NEXT:      "scf.yield"(%[[Y]], %[[N2]], %[[F]])
  "func.func"() <{sym_name = "rolled_loop", function_type = (!torch.vtensor<[1,4],f32>) -> (!torch.vtensor<[1,4],f32>, !torch.int, !torch.float)}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %lb = "arith.constant"() <{value = 0 : index}> : () -> index
    %ub = "arith.constant"() <{value = 10 : index}> : () -> index
    %st = "arith.constant"() <{value = 1 : index}> : () -> index
    %n0 = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
    %f0 = "torch.constant.float"() <{value = 0.0 : f64}> : () -> !torch.float
    %r:3 = "scf.for"(%lb, %ub, %st, %x, %n0, %f0) ({
    ^bb1(%i: index, %acc: !torch.vtensor<[1,4],f32>, %n: !torch.int, %f: !torch.float):
      %w = "dycl.param"() {name = "cell.weight"} : () -> !torch.vtensor<[4,4],f32>
      %y0 = "torch.aten.mm"(%acc, %w) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
      %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
      %n2 = "torch.aten.add.int"(%n, %one) : (!torch.int, !torch.int) -> !torch.int
      %y = "torch.aten.tanh"(%y0) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
      %m = "torch.aten.max"(%y) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[],f32>
      %mf = "torch.aten.item"(%m) : (!torch.vtensor<[],f32>) -> !torch.float
      "scf.yield"(%y, %n2, %mf) : (!torch.vtensor<[1,4],f32>, !torch.int, !torch.float) -> ()
    }) : (index, index, index, !torch.vtensor<[1,4],f32>, !torch.int, !torch.float) -> (!torch.vtensor<[1,4],f32>, !torch.int, !torch.float)
    "func.return"(%r#0, %r#1, %r#2) : (!torch.vtensor<[1,4],f32>, !torch.int, !torch.float) -> ()
  }) : () -> ()

// Host lists stay in the host; a list of tensors that only `aten.cat` reads travels into
// the sub-DNN; a tensor op that reads a host value computed from the run splits the run.
// CHECK-LABEL: sym_name = "lists"
// CHECK:         %[[A:.*]] = "func.call"(%x) <{callee = @subdnn_{{[0-9]+}}}> : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[4],f32>
// CHECK-NEXT:    %[[L:.*]] = "torch.prim.ListConstruct"(%[[A]])
// CHECK-NEXT:    %[[G:.*]] = "torch.aten.__getitem__.t"(%[[L]], %{{.*}})
// CHECK-NEXT:    "func.call"(%[[G]]) <{callee = @subdnn_{{[0-9]+}}}> : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
  "func.func"() <{sym_name = "lists", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %zero = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
    %t = "torch.aten.tanh"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    %pair = "torch.prim.ListConstruct"(%t, %x) : (!torch.vtensor<[2],f32>, !torch.vtensor<[2],f32>) -> !torch.list<vtensor>
    %a = "torch.aten.cat"(%pair, %zero) : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[4],f32>
    %l = "torch.prim.ListConstruct"(%a) : (!torch.vtensor<[4],f32>) -> !torch.list<vtensor>
    %g = "torch.aten.__getitem__.t"(%l, %zero) : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[4],f32>
    %e = "torch.aten.exp"(%g) : (!torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32>
    "func.return"(%e) : (!torch.vtensor<[4],f32>) -> ()
  }) : () -> ()

// A computation-free run shorter than min-ops stays in the host (OPTS); by default it is
// outlined (and dycl-hoist-free moves it back).
// CHECK-LABEL: sym_name = "lone_view"
// CHECK:         "func.call"
// OPTS-LABEL: sym_name = "lone_view"
// OPTS-NOT:     "func.call"
// OPTS:         "torch.aten.flatten.using_ints"
  "func.func"() <{sym_name = "lone_view", function_type = (!torch.vtensor<[2,3],f32>) -> !torch.vtensor<[6],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2,3],f32>):
    %zero = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
    %m1 = "torch.constant.int"() <{value = -1 : i64}> : () -> !torch.int
    %f = "torch.aten.flatten.using_ints"(%x, %zero, %m1) : (!torch.vtensor<[2,3],f32>, !torch.int, !torch.int) -> !torch.vtensor<[6],f32>
    "func.return"(%f) : (!torch.vtensor<[6],f32>) -> ()
  }) : () -> ()

// A list of tensors that only `prim.ListUnpack` reads (`aten.split`, as in a decomposed
// GRU cell) stays inside the run: one sub-DNN, nothing list-valued crosses the boundary.
// CHECK-LABEL: sym_name = "split_unpack"
// CHECK-NEXT:    ^{{.*}}(%x: !torch.vtensor<[1,6],f32>):
// CHECK-NEXT:    %[[S:.*]] = "func.call"(%x) <{callee = @subdnn_{{[0-9]+}}}> : (!torch.vtensor<[1,6],f32>) -> !torch.vtensor<[1,3],f32>
// CHECK-NEXT:    "func.return"(%[[S]])
  "func.func"() <{sym_name = "split_unpack", function_type = (!torch.vtensor<[1,6],f32>) -> !torch.vtensor<[1,3],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,6],f32>):
    %three = "torch.constant.int"() <{value = 3 : i64}> : () -> !torch.int
    %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %parts = "torch.aten.split.Tensor"(%x, %three, %one) : (!torch.vtensor<[1,6],f32>, !torch.int, !torch.int) -> !torch.list<vtensor>
    %a, %b = "torch.prim.ListUnpack"(%parts) : (!torch.list<vtensor>) -> (!torch.vtensor<[1,3],f32>, !torch.vtensor<[1,3],f32>)
    %s = "torch.aten.mul.Tensor"(%a, %b) : (!torch.vtensor<[1,3],f32>, !torch.vtensor<[1,3],f32>) -> !torch.vtensor<[1,3],f32>
    "func.return"(%s) : (!torch.vtensor<[1,3],f32>) -> ()
  }) : () -> ()

// A kept if (dycl.keep) is tensor compute: the gate before it, the if with both arms and
// the compute after it become one sub-DNN; its condition chain is cloned in, and so is
// the constant its arm reads from outside. The host makes one call and reads no flag.
// CHECK-LABEL: sym_name = "kept_gate"
// CHECK-NEXT:    ^{{.*}}(%x: !torch.vtensor<[1,4],f32>):
// CHECK-NEXT:    %[[K:.*]] = "func.call"(%x) <{callee = @[[KEPT:subdnn_[0-9]+]]}> : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
// CHECK-NEXT:    "func.return"(%[[K]])
  "func.func"() <{sym_name = "kept_gate", function_type = (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %none = "torch.constant.none"() : () -> !torch.none
    %s = "torch.aten.sum"(%x, %none) : (!torch.vtensor<[1,4],f32>, !torch.none) -> !torch.vtensor<[],f32>
    %half = "torch.constant.float"() <{value = 0.5 : f64}> : () -> !torch.float
    %c = "torch.aten.gt.Scalar"(%s, %half) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %cb = "torch.aten.Bool.Tensor"(%c) : (!torch.vtensor<[],i1>) -> !torch.bool
    %ci = "torch_c.to_i1"(%cb) : (!torch.bool) -> i1
    %y = "scf.if"(%ci) ({
      "scf.yield"(%x) : (!torch.vtensor<[1,4],f32>) -> ()
    }, {
      %w = "dycl.param"() {name = "block.weight"} : () -> !torch.vtensor<[4,4],f32>
      %b = "torch.aten.linear"(%x, %w, %none) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>, !torch.none) -> !torch.vtensor<[1,4],f32>
      "scf.yield"(%b) : (!torch.vtensor<[1,4],f32>) -> ()
    }) {dycl.keep} : (i1) -> !torch.vtensor<[1,4],f32>
    %out = "torch.aten.tanh"(%y) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
    "func.return"(%out) : (!torch.vtensor<[1,4],f32>) -> ()
  }) : () -> ()

// A dim that a runtime int gives (`x[:k]` in the frontend) stays `?` in the sub-DNN: the
// backends compile it as a symbolic size.
// CHECK-LABEL: sym_name = "runtime_rows"
// CHECK-NEXT:    ^{{.*}}(%x: !torch.vtensor<[?,4],f32>):
// CHECK-NEXT:    %[[R:.*]] = "func.call"(%x) <{callee = @[[ROWS:subdnn_[0-9]+]]}> : (!torch.vtensor<[?,4],f32>) -> !torch.vtensor<[?,4],f32>
  "func.func"() <{sym_name = "runtime_rows", function_type = (!torch.vtensor<[?,4],f32>) -> !torch.vtensor<[?,4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[?,4],f32>):
    %y = "torch.aten.relu"(%x) : (!torch.vtensor<[?,4],f32>) -> !torch.vtensor<[?,4],f32>
    %z = "torch.aten.tanh"(%y) : (!torch.vtensor<[?,4],f32>) -> !torch.vtensor<[?,4],f32>
    "func.return"(%z) : (!torch.vtensor<[?,4],f32>) -> ()
  }) : () -> ()

// Sub-DNN functions: private, marked, ranked; weights and constants cloned in.
// CHECK-LABEL: sym_name = "subdnn_0", function_type = (!torch.vtensor<[1,4],f32>) -> (!torch.vtensor<[1,4],f32>, !torch.vtensor<[],i1>), sym_visibility = "private"
// CHECK:         "dycl.param"() {name = "l0.weight"}
// CHECK:         "torch.aten.gt.Scalar"
// CHECK:         }) {dycl.subdnn} : () -> ()
// The rolled loop's body:
// CHECK-LABEL: sym_name = "subdnn_7"
// CHECK:         "dycl.param"() {name = "cell.weight"}
// CHECK:         "torch.aten.mm"
// CHECK:         "torch.aten.tanh"
// CHECK:         "torch.aten.max"
// CHECK:         "func.return"
// The list of tensors that only `cat` reads:
// CHECK-LABEL: sym_name = "subdnn_8"
// CHECK:         %[[LL:.*]] = "torch.prim.ListConstruct"(%{{.*}}, %{{.*}}) : (!torch.vtensor<[2],f32>, !torch.vtensor<[2],f32>) -> !torch.list<vtensor>
// CHECK:         "torch.aten.cat"(%[[LL]], %{{.*}})
// The kept gate's sub-DNN holds the whole if:
// CHECK:       sym_name = "[[KEPT]]"
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: !torch.vtensor<[1,4],f32>):
// CHECK-NEXT:    %[[N:.*]] = "torch.constant.none"
// CHECK-NEXT:    %[[S:.*]] = "torch.aten.sum"(%[[X]], %[[N]])
// CHECK:         %[[P:.*]] = "torch.aten.gt.Scalar"(%[[S]], %{{.*}})
// CHECK-NEXT:    %[[B:.*]] = "torch.aten.Bool.Tensor"(%[[P]])
// CHECK-NEXT:    %[[I:.*]] = "torch_c.to_i1"(%[[B]])
// CHECK-NEXT:    %[[Y:.*]] = "scf.if"(%[[I]]) ({
// CHECK-NEXT:      "scf.yield"(%[[X]])
// CHECK-NEXT:    }, {
// CHECK-NEXT:      "dycl.param"() {name = "block.weight"}
// CHECK-NEXT:      "torch.aten.linear"(%[[X]], %{{.*}}, %[[N]])
// CHECK:         }) {dycl.keep}
// CHECK-NEXT:    %[[T:.*]] = "torch.aten.tanh"(%[[Y]])
// CHECK-NEXT:    "func.return"(%[[T]])
// CHECK:       sym_name = "[[ROWS]]", function_type = (!torch.vtensor<[?,4],f32>) -> !torch.vtensor<[?,4],f32>
// CHECK:         "torch.aten.relu"
// CHECK-NEXT:    "torch.aten.tanh"
}) : () -> ()
