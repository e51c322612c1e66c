// RUN: dycl-opt %s -p 'dycl-unroll-loops{max-trip-count=3}' | filecheck %s
// RUN: dycl-opt %s -p 'dycl-unroll-loops{shape-varying-only=true}' | filecheck %s --check-prefix=VARYING

"builtin.module"() ({

// Three iterations: unrolled into three copies of the body, the carry threaded through.
// CHECK-LABEL: sym_name = "small_loop"
// CHECK-NOT:     "scf.for"
// CHECK:         %[[A:.*]] = "torch.aten.add.Tensor"(%[[X:.*]], %[[X]], %{{.*}})
// CHECK:         %[[B:.*]] = "torch.aten.add.Tensor"(%[[A]], %[[X]], %{{.*}})
// CHECK:         %[[C:.*]] = "torch.aten.add.Tensor"(%[[B]], %[[X]], %{{.*}})
// CHECK:         "func.return"(%[[C]])
// VARYING-LABEL: sym_name = "small_loop"
// VARYING:         "scf.for"
  "func.func"() <{sym_name = "small_loop", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %lb = "arith.constant"() <{value = 0 : index}> : () -> index
    %ub = "arith.constant"() <{value = 3 : index}> : () -> index
    %st = "arith.constant"() <{value = 1 : index}> : () -> index
    %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %r = "scf.for"(%lb, %ub, %st, %x) ({
    ^bb1(%i: index, %acc: !torch.vtensor<[2],f32>):
      %y = "torch.aten.add.Tensor"(%acc, %x, %one) : (!torch.vtensor<[2],f32>, !torch.vtensor<[2],f32>, !torch.int) -> !torch.vtensor<[2],f32>
      "scf.yield"(%y) : (!torch.vtensor<[2],f32>) -> ()
    }) : (index, index, index, !torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    "func.return"(%r) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()

// More iterations than max-trip-count: kept rolled.
// CHECK-LABEL: sym_name = "long_loop"
// CHECK:         "scf.for"
  "func.func"() <{sym_name = "long_loop", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %lb = "arith.constant"() <{value = 0 : index}> : () -> index
    %ub = "arith.constant"() <{value = 8 : index}> : () -> index
    %st = "arith.constant"() <{value = 1 : index}> : () -> index
    %r = "scf.for"(%lb, %ub, %st, %x) ({
    ^bb1(%i: index, %acc: !torch.vtensor<[2],f32>):
      %y = "torch.aten.relu"(%acc) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%y) : (!torch.vtensor<[2],f32>) -> ()
    }) : (index, index, index, !torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    "func.return"(%r) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()

// The carried tensor grows each iteration (its type has an unknown dim): in
// shape-varying-only mode this is the loop that gets unrolled.
// VARYING-LABEL: sym_name = "growing_carry"
// VARYING-NOT:     "scf.for"
// VARYING-COUNT-2: "torch.aten.cat"
  "func.func"() <{sym_name = "growing_carry", function_type = (!torch.vtensor<[1,2],f32>) -> !torch.vtensor<[?,2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,2],f32>):
    %lb = "arith.constant"() <{value = 0 : index}> : () -> index
    %ub = "arith.constant"() <{value = 2 : index}> : () -> index
    %st = "arith.constant"() <{value = 1 : index}> : () -> index
    %zero = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
    %init = "torch.tensor_static_info_cast"(%x) : (!torch.vtensor<[1,2],f32>) -> !torch.vtensor<[?,2],f32>
    %r = "scf.for"(%lb, %ub, %st, %init) ({
    ^bb1(%i: index, %acc: !torch.vtensor<[?,2],f32>):
      %l = "torch.prim.ListConstruct"(%acc, %x) : (!torch.vtensor<[?,2],f32>, !torch.vtensor<[1,2],f32>) -> !torch.list<vtensor>
      %y = "torch.aten.cat"(%l, %zero) : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[?,2],f32>
      "scf.yield"(%y) : (!torch.vtensor<[?,2],f32>) -> ()
    }) : (index, index, index, !torch.vtensor<[?,2],f32>) -> !torch.vtensor<[?,2],f32>
    "func.return"(%r) : (!torch.vtensor<[?,2],f32>) -> ()
  }) : () -> ()

}) : () -> ()
