// RUN: dycl-opt %s -p 'dycl-pipeline{keep-branches=false}' | filecheck %s
// RUN: dycl-opt %s -p dycl-pipeline | filecheck %s --check-prefix=KEEP
// RUN: dycl-opt %s -p 'dycl-pipeline{max-trip-count=2}' --split-input-file --verify-diagnostics | filecheck %s --check-prefix=ROLLED

"builtin.module"() ({

// A loop whose carry grows (cat) is unrolled and specialised: one static sub-DNN.
// CHECK-LABEL: sym_name = "growing"
// CHECK-SAME:    function_type = (!torch.vtensor<[1,2],f32>) -> !torch.vtensor<[1,8],f32>
// CHECK-NOT:     "scf.for"
// CHECK:         %[[R:.*]] = "func.call"(%x) <{callee = @[[G:subdnn_[0-9]+]]}> : (!torch.vtensor<[1,2],f32>) -> !torch.vtensor<[1,8],f32>
// CHECK-NEXT:    "func.return"(%[[R]])
// With the loop too long to unroll, the carry keeps a width known only at run time: the
// body is one sub-DNN, which the backends compile with a symbolic width.
// ROLLED-LABEL: sym_name = "growing"
// ROLLED:         "scf.for"
// ROLLED:           "func.call"(%acc, %x) <{callee = @subdnn_{{[0-9]+}}}> : (!torch.vtensor<[1,?],f32>, !torch.vtensor<[1,2],f32>) -> !torch.vtensor<[1,?],f32>
  "func.func"() <{sym_name = "growing", function_type = (!torch.vtensor<[1,2],f32>) -> !torch.vtensor<[1,?],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,2],f32>):
    %lb = "arith.constant"() <{value = 0 : index}> : () -> index
    %ub = "arith.constant"() <{value = 3 : index}> : () -> index
    %st = "arith.constant"() <{value = 1 : index}> : () -> index
    %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %x0 = "torch.tensor_static_info_cast"(%x) : (!torch.vtensor<[1,2],f32>) -> !torch.vtensor<[1,?],f32>
    %r = "scf.for"(%lb, %ub, %st, %x0) ({
    ^bb1(%i: index, %acc: !torch.vtensor<[1,?],f32>):
      %l = "torch.prim.ListConstruct"(%acc, %x) : (!torch.vtensor<[1,?],f32>, !torch.vtensor<[1,2],f32>) -> !torch.list<vtensor>
      %c = "torch.aten.cat"(%l, %one) : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[1,?],f32>
      %t = "torch.aten.tanh"(%c) : (!torch.vtensor<[1,?],f32>) -> !torch.vtensor<[1,?],f32>
      "scf.yield"(%t) : (!torch.vtensor<[1,?],f32>) -> ()
    }) : (index, index, index, !torch.vtensor<[1,?],f32>) -> !torch.vtensor<[1,?],f32>
    "func.return"(%r) : (!torch.vtensor<[1,?],f32>) -> ()
  }) : () -> ()

// A loop of one static shape with a data-dependent gate stays rolled: the gate, and each
// branch, are one sub-DNN each, compiled once and called every iteration.
// CHECK-LABEL: sym_name = "gated_loop"
// CHECK:         "scf.for"
// CHECK:           "func.call"(%{{.*}}) <{callee = @subdnn_{{[0-9]+}}}> : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[],i1>
// CHECK:           "scf.if"
// CHECK-NEXT:        "func.call"
// CHECK:             "func.call"
// CHECK-NOT:     "func.call"
// CHECK:         "func.return"
// By default (dycl-keep-branches) the gate stays inside the loop body's one sub-DNN: one
// call per iteration, no flag read by the host.
// KEEP-LABEL: sym_name = "gated_loop"
// KEEP:         "scf.for"
// KEEP-NEXT:    ^{{.*}}(%{{.*}}: index, %[[ACC:.*]]: !torch.vtensor<[1,4],f32>):
// KEEP-NEXT:      %[[N:.*]] = "func.call"(%[[ACC]]) <{callee = @[[BODY:subdnn_[0-9]+]]}> : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
// KEEP-NEXT:      "scf.yield"(%[[N]])
// KEEP:       sym_name = "[[BODY]]"
// KEEP:         "torch.aten.Bool.Tensor"
// KEEP:         "scf.if"
// KEEP:         {dycl.keep}
  "func.func"() <{sym_name = "gated_loop", function_type = (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %w = "dycl.param"() {name = "fc.weight"} : () -> !torch.vtensor<[4,4],f32>
    %lb = "arith.constant"() <{value = 0 : index}> : () -> index
    %ub = "arith.constant"() <{value = 4 : index}> : () -> index
    %st = "arith.constant"() <{value = 1 : index}> : () -> index
    %r = "scf.for"(%lb, %ub, %st, %x) ({
    ^bb1(%i: index, %acc: !torch.vtensor<[1,4],f32>):
      %none = "torch.constant.none"() : () -> !torch.none
      %s = "torch.aten.sum"(%acc, %none) : (!torch.vtensor<[1,4],f32>, !torch.none) -> !torch.vtensor<[],f32>
      %zero = "torch.constant.float"() <{value = 0.000000e+00 : f64}> : () -> !torch.float
      %gt = "torch.aten.gt.Scalar"(%s, %zero) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
      %bb = "torch.aten.Bool.Tensor"(%gt) : (!torch.vtensor<[],i1>) -> !torch.bool
      %c = "torch_c.to_i1"(%bb) : (!torch.bool) -> i1
      %next = "scf.if"(%c) ({
        %y = "torch.aten.mm"(%acc, %w) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
        "scf.yield"(%y) : (!torch.vtensor<[1,4],f32>) -> ()
      }, {
        %neg = "torch.aten.neg"(%acc) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
        "scf.yield"(%neg) : (!torch.vtensor<[1,4],f32>) -> ()
      }) : (i1) -> !torch.vtensor<[1,4],f32>
      "scf.yield"(%next) : (!torch.vtensor<[1,4],f32>) -> ()
    }) : (index, index, index, !torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
    "func.return"(%r) : (!torch.vtensor<[1,4],f32>) -> ()
  }) : () -> ()

// The specialised sub-DNN of the unrolled loop: three static cats.
// CHECK:       sym_name = "[[G]]", function_type = (!torch.vtensor<[1,2],f32>) -> !torch.vtensor<[1,8],f32>
// CHECK:         "torch.aten.cat"{{.*}} -> !torch.vtensor<[1,4],f32>
// CHECK:         "torch.aten.cat"{{.*}} -> !torch.vtensor<[1,6],f32>
// CHECK:         "torch.aten.cat"{{.*}} -> !torch.vtensor<[1,8],f32>
}) : () -> ()
