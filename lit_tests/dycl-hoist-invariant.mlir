// RUN: dycl-opt %s -p dycl-hoist-invariant | filecheck %s
// RUN: dycl-opt %s -p 'dycl-hoist-invariant{min-macs=0}' | filecheck %s --check-prefix=ALL

"builtin.module"() ({

// The attention's projection of the features is the same at every step: it and its weights
// move before the loop. The projection of the carried state, the relu of their sum and the
// cheap negation of the features (under min-macs) stay.
// CHECK-LABEL: sym_name = "decode"
// CHECK:         %[[W:.*]] = "dycl.param"() {name = "att.weight"}
// CHECK-NEXT:    %[[P:.*]] = "torch.aten.linear"(%features, %[[W]], %{{.*}}) : (!torch.vtensor<[1,64,512],f32>, !torch.vtensor<[256,512],f32>, !torch.none) -> !torch.vtensor<[1,64,256],f32>
// CHECK-NEXT:    "scf.while"
// CHECK:         "scf.condition"
// CHECK:         %[[H:.*]] = "torch.aten.linear"(%{{.*}}, %{{.*}}, %{{.*}}) : (!torch.vtensor<[1,1,256],f32>
// CHECK-NEXT:    %{{.*}} = "torch.aten.add.Tensor"(%[[P]], %[[H]], %{{.*}})
// CHECK:         "torch.aten.neg"(%features)
// CHECK:         "scf.yield"
// ALL-LABEL:   sym_name = "decode"
// ALL:           "torch.aten.neg"(%features)
// ALL:           "scf.while"
  "func.func"() <{sym_name = "decode", function_type = (!torch.vtensor<[1,64,512],f32>, !torch.vtensor<[1,1,256],f32>) -> !torch.vtensor<[1,1,256],f32>}> ({
  ^bb0(%features: !torch.vtensor<[1,64,512],f32>, %h0: !torch.vtensor<[1,1,256],f32>):
    %zero = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
    %r:2 = "scf.while"(%zero, %h0) ({
    ^bb0(%i: !torch.int, %h: !torch.vtensor<[1,1,256],f32>):
      %ten = "torch.constant.int"() <{value = 10 : i64}> : () -> !torch.int
      %lt = "torch.aten.lt.int"(%i, %ten) : (!torch.int, !torch.int) -> !torch.bool
      %c = "torch_c.to_i1"(%lt) : (!torch.bool) -> i1
      "scf.condition"(%c, %i, %h) : (i1, !torch.int, !torch.vtensor<[1,1,256],f32>) -> ()
    }, {
    ^bb0(%i: !torch.int, %h: !torch.vtensor<[1,1,256],f32>):
      %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
      %next = "torch.aten.add.int"(%i, %one) : (!torch.int, !torch.int) -> !torch.int
      %none = "torch.constant.none"() : () -> !torch.none
      %w = "dycl.param"() {name = "att.weight"} : () -> !torch.vtensor<[256,512],f32>
      %p = "torch.aten.linear"(%features, %w, %none) : (!torch.vtensor<[1,64,512],f32>, !torch.vtensor<[256,512],f32>, !torch.none) -> !torch.vtensor<[1,64,256],f32>
      %v = "dycl.param"() {name = "dec.weight"} : () -> !torch.vtensor<[256,256],f32>
      %q = "torch.aten.linear"(%h, %v, %none) : (!torch.vtensor<[1,1,256],f32>, !torch.vtensor<[256,256],f32>, !torch.none) -> !torch.vtensor<[1,1,256],f32>
      %s = "torch.aten.add.Tensor"(%p, %q, %one) : (!torch.vtensor<[1,64,256],f32>, !torch.vtensor<[1,1,256],f32>, !torch.int) -> !torch.vtensor<[1,64,256],f32>
      %n = "torch.aten.neg"(%features) : (!torch.vtensor<[1,64,512],f32>) -> !torch.vtensor<[1,64,512],f32>
      %dims = "torch.prim.ListConstruct"(%one) : (!torch.int) -> !torch.list<int>
      %false = "torch.constant.bool"() <{value = false}> : () -> !torch.bool
      %m = "torch.aten.mean.dim"(%s, %dims, %false, %none) : (!torch.vtensor<[1,64,256],f32>, !torch.list<int>, !torch.bool, !torch.none) -> !torch.vtensor<[1,256],f32>
      %mn = "torch.aten.mean.dim"(%n, %dims, %false, %none) : (!torch.vtensor<[1,64,512],f32>, !torch.list<int>, !torch.bool, !torch.none) -> !torch.vtensor<[1,512],f32>
      %ten2 = "torch.constant.int"() <{value = 256 : i64}> : () -> !torch.int
      %shape = "torch.prim.ListConstruct"(%one, %one, %ten2) : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
      %h2 = "torch.aten.view"(%m, %shape) : (!torch.vtensor<[1,256],f32>, !torch.list<int>) -> !torch.vtensor<[1,1,256],f32>
      "scf.yield"(%next, %h2) : (!torch.int, !torch.vtensor<[1,1,256],f32>) -> ()
    }) : (!torch.int, !torch.vtensor<[1,1,256],f32>) -> (!torch.int, !torch.vtensor<[1,1,256],f32>)
    "func.return"(%r#1) : (!torch.vtensor<[1,1,256],f32>) -> ()
  }) : () -> ()

// An index read (an integer tensor) may be out of range where the loop would not run, and an
// op under an scf.if may not run at all: both stay, however heavy.
// CHECK-LABEL: sym_name = "guarded"
// CHECK:         "scf.for"
// CHECK:         "torch.aten.embedding"
// CHECK:         "scf.if"
// CHECK:         "torch.aten.linear"
  "func.func"() <{sym_name = "guarded", function_type = (!torch.vtensor<[1,64,512],f32>, !torch.vtensor<[64],si64>, index, i1) -> !torch.vtensor<[1,64,256],f32>}> ({
  ^bb0(%features: !torch.vtensor<[1,64,512],f32>, %ids: !torch.vtensor<[64],si64>, %n: index, %flag: i1):
    %lb = "arith.constant"() <{value = 0 : index}> : () -> index
    %st = "arith.constant"() <{value = 1 : index}> : () -> index
    %none = "torch.constant.none"() : () -> !torch.none
    %w = "dycl.param"() {name = "att.weight"} : () -> !torch.vtensor<[256,512],f32>
    %init = "torch.aten.linear"(%features, %w, %none) : (!torch.vtensor<[1,64,512],f32>, !torch.vtensor<[256,512],f32>, !torch.none) -> !torch.vtensor<[1,64,256],f32>
    %r = "scf.for"(%lb, %n, %st, %init) ({
    ^bb1(%k: index, %acc: !torch.vtensor<[1,64,256],f32>):
      %table = "dycl.param"() {name = "table"} : () -> !torch.vtensor<[100000,256],f32>
      %m1 = "torch.constant.int"() <{value = -1 : i64}> : () -> !torch.int
      %false = "torch.constant.bool"() <{value = false}> : () -> !torch.bool
      %e = "torch.aten.embedding"(%table, %ids, %m1, %false, %false) : (!torch.vtensor<[100000,256],f32>, !torch.vtensor<[64],si64>, !torch.int, !torch.bool, !torch.bool) -> !torch.vtensor<[64,256],f32>
      %next = "scf.if"(%flag) ({
        %p = "torch.aten.linear"(%features, %w, %none) : (!torch.vtensor<[1,64,512],f32>, !torch.vtensor<[256,512],f32>, !torch.none) -> !torch.vtensor<[1,64,256],f32>
        "scf.yield"(%p) : (!torch.vtensor<[1,64,256],f32>) -> ()
      }, {
        "scf.yield"(%acc) : (!torch.vtensor<[1,64,256],f32>) -> ()
      }) : (i1) -> !torch.vtensor<[1,64,256],f32>
      %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
      %sum = "torch.aten.add.Tensor"(%next, %e, %one) : (!torch.vtensor<[1,64,256],f32>, !torch.vtensor<[64,256],f32>, !torch.int) -> !torch.vtensor<[1,64,256],f32>
      "scf.yield"(%sum) : (!torch.vtensor<[1,64,256],f32>) -> ()
    }) : (index, index, index, !torch.vtensor<[1,64,256],f32>) -> !torch.vtensor<[1,64,256],f32>
    "func.return"(%r) : (!torch.vtensor<[1,64,256],f32>) -> ()
  }) : () -> ()

// Nested loops: the projection is invariant in both and leaves both.
// CHECK-LABEL: sym_name = "nested"
// CHECK:         "torch.aten.linear"(%features
// CHECK-NEXT:    "scf.for"
// CHECK:         "scf.for"
// CHECK-NOT:     "torch.aten.linear"
// CHECK:         "func.return"
  "func.func"() <{sym_name = "nested", function_type = (!torch.vtensor<[1,64,512],f32>, !torch.vtensor<[1,64,256],f32>, index) -> !torch.vtensor<[1,64,256],f32>}> ({
  ^bb0(%features: !torch.vtensor<[1,64,512],f32>, %a0: !torch.vtensor<[1,64,256],f32>, %n: index):
    %lb = "arith.constant"() <{value = 0 : index}> : () -> index
    %st = "arith.constant"() <{value = 1 : index}> : () -> index
    %r = "scf.for"(%lb, %n, %st, %a0) ({
    ^bb1(%k: index, %acc: !torch.vtensor<[1,64,256],f32>):
      %r2 = "scf.for"(%lb, %n, %st, %acc) ({
      ^bb2(%j: index, %acc2: !torch.vtensor<[1,64,256],f32>):
        %none = "torch.constant.none"() : () -> !torch.none
        %w = "dycl.param"() {name = "att.weight"} : () -> !torch.vtensor<[256,512],f32>
        %p = "torch.aten.linear"(%features, %w, %none) : (!torch.vtensor<[1,64,512],f32>, !torch.vtensor<[256,512],f32>, !torch.none) -> !torch.vtensor<[1,64,256],f32>
        %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
        %s = "torch.aten.add.Tensor"(%acc2, %p, %one) : (!torch.vtensor<[1,64,256],f32>, !torch.vtensor<[1,64,256],f32>, !torch.int) -> !torch.vtensor<[1,64,256],f32>
        "scf.yield"(%s) : (!torch.vtensor<[1,64,256],f32>) -> ()
      }) : (index, index, index, !torch.vtensor<[1,64,256],f32>) -> !torch.vtensor<[1,64,256],f32>
      "scf.yield"(%r2) : (!torch.vtensor<[1,64,256],f32>) -> ()
    }) : (index, index, index, !torch.vtensor<[1,64,256],f32>) -> !torch.vtensor<[1,64,256],f32>
    "func.return"(%r) : (!torch.vtensor<[1,64,256],f32>) -> ()
  }) : () -> ()
}) : () -> ()
