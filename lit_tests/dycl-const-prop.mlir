// RUN: dycl-opt %s -p dycl-const-prop | filecheck %s

"builtin.module"() ({

// CHECK-LABEL: sym_name = "fold_int_arith"
// CHECK-NEXT:    %[[C:.*]] = "torch.constant.int"() <{value = 5 : i64}> : () -> !torch.int
// CHECK-NEXT:    "func.return"(%[[C]]) : (!torch.int) -> ()
  "func.func"() <{sym_name = "fold_int_arith", function_type = () -> !torch.int}> ({
    %a = "torch.constant.int"() <{value = 2 : i64}> : () -> !torch.int
    %b = "torch.constant.int"() <{value = 3 : i64}> : () -> !torch.int
    %c = "torch.aten.add.int"(%a, %b) : (!torch.int, !torch.int) -> !torch.int
    "func.return"(%c) : (!torch.int) -> ()
  }) : () -> ()

// A branch on a constant comparison keeps only the taken side.
// CHECK-LABEL: sym_name = "resolve_if"
// CHECK-NOT:     scf.if
// CHECK:         %[[R:.*]] = "torch.aten.relu"(%[[X:.*]])
// CHECK-NEXT:    "func.return"(%[[R]])
  "func.func"() <{sym_name = "resolve_if", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %n = "torch.constant.int"() <{value = 4 : i64}> : () -> !torch.int
    %k = "torch.constant.int"() <{value = 3 : i64}> : () -> !torch.int
    %gt = "torch.aten.gt.int"(%n, %k) : (!torch.int, !torch.int) -> !torch.bool
    %c = "torch_c.to_i1"(%gt) : (!torch.bool) -> i1
    %r = "scf.if"(%c) ({
      %y = "torch.aten.relu"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%y) : (!torch.vtensor<[2],f32>) -> ()
    }, {
      %z = "torch.aten.neg"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%z) : (!torch.vtensor<[2],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[2],f32>
    "func.return"(%r) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()

// len and indexing of a constant list fold, so the count of blocks is a constant.
// CHECK-LABEL: sym_name = "fold_list_ops"
// CHECK-NEXT:    %[[N:.*]] = "torch.constant.int"() <{value = 3 : i64}> : () -> !torch.int
// CHECK-NEXT:    %[[E:.*]] = "torch.constant.int"() <{value = 7 : i64}> : () -> !torch.int
// CHECK-NEXT:    "func.return"(%[[N]], %[[E]])
  "func.func"() <{sym_name = "fold_list_ops", function_type = () -> (!torch.int, !torch.int)}> ({
    %a = "torch.constant.int"() <{value = 5 : i64}> : () -> !torch.int
    %b = "torch.constant.int"() <{value = 7 : i64}> : () -> !torch.int
    %c = "torch.constant.int"() <{value = 9 : i64}> : () -> !torch.int
    %l = "torch.prim.ListConstruct"(%a, %b, %c) : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %n = "torch.aten.len.t"(%l) : (!torch.list<int>) -> !torch.int
    %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %e = "torch.aten.__getitem__.t"(%l, %one) : (!torch.list<int>, !torch.int) -> !torch.int
    "func.return"(%n, %e) : (!torch.int, !torch.int) -> ()
  }) : () -> ()

// A loop that never runs is gone; its results are its initial values.
// CHECK-LABEL: sym_name = "zero_trip_loop"
// CHECK-NEXT:  ^bb0(%[[X:.*]]: !torch.vtensor<[2],f32>):
// CHECK-NEXT:    "func.return"(%[[X]])
  "func.func"() <{sym_name = "zero_trip_loop", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %lb = "arith.constant"() <{value = 4 : index}> : () -> index
    %ub = "arith.constant"() <{value = 4 : index}> : () -> index
    %st = "arith.constant"() <{value = 1 : index}> : () -> index
    %r = "scf.for"(%lb, %ub, %st, %x) ({
    ^bb1(%i: index, %acc: !torch.vtensor<[2],f32>):
      %y = "torch.aten.relu"(%acc) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%y) : (!torch.vtensor<[2],f32>) -> ()
    }) : (index, index, index, !torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    "func.return"(%r) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()

// Unused torch ops and weight references go; a tensor-dependent branch stays.
// CHECK-LABEL: sym_name = "dead_ops_and_live_branch"
// CHECK-NOT:     "dycl.param"
// CHECK-NOT:     "torch.aten.sigmoid"
// CHECK:         "torch.aten.Bool.Tensor"
// CHECK:         "scf.if"
  "func.func"() <{sym_name = "dead_ops_and_live_branch", function_type = (!torch.vtensor<[2],f32>, !torch.vtensor<[],i1>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>, %t: !torch.vtensor<[],i1>):
    %w = "dycl.param"() {name = "fc.weight"} : () -> !torch.vtensor<[2,2],f32>
    %dead = "torch.aten.sigmoid"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    %b = "torch.aten.Bool.Tensor"(%t) : (!torch.vtensor<[],i1>) -> !torch.bool
    %c = "torch_c.to_i1"(%b) : (!torch.bool) -> i1
    %r = "scf.if"(%c) ({
      %y = "torch.aten.relu"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%y) : (!torch.vtensor<[2],f32>) -> ()
    }, {
      "scf.yield"(%x) : (!torch.vtensor<[2],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[2],f32>
    "func.return"(%r) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()

// Torch ops that read a loop's carry stay inside the loop (xDSL's RehoistConstInLoops
// would treat them as constants: unregistered ops claim every trait).
// CHECK-LABEL: sym_name = "loop_body_stays"
// CHECK:         "scf.for"
// CHECK-NEXT:    ^bb{{[0-9]+}}(%{{.*}}: index, %[[ACC:.*]]: !torch.vtensor<[2],f32>):
// CHECK-NEXT:      "torch.aten.relu"(%[[ACC]])
  "func.func"() <{sym_name = "loop_body_stays", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %lb = "arith.constant"() <{value = 0 : index}> : () -> index
    %ub = "arith.constant"() <{value = 5 : index}> : () -> index
    %st = "arith.constant"() <{value = 1 : index}> : () -> index
    %r = "scf.for"(%lb, %ub, %st, %x) ({
    ^bb1(%i: index, %acc: !torch.vtensor<[2],f32>):
      %y = "torch.aten.relu"(%acc) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%y) : (!torch.vtensor<[2],f32>) -> ()
    }) : (index, index, index, !torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    "func.return"(%r) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()

// A list a runtime loop appends to that nothing reads after it (gpt-fast's `new_probs`,
// discarded by its caller): the carry, its result and the ops that only compute it go;
// the counter and the tensor the loop returns stay.
// CHECK-LABEL: sym_name = "dead_carry"
// CHECK:         %{{[^ ]*}}, %[[R:[^ ]*]] = "scf.while"(%{{.*}}, %x) ({
// CHECK-NEXT:    ^{{.*}}(%[[I:[^:]*]]: !torch.int, %[[V:[^:]*]]: !torch.vtensor<[2],f32>):
// CHECK:           "scf.condition"(%{{.*}}, %[[I]], %[[V]]) : (i1, !torch.int, !torch.vtensor<[2],f32>) -> ()
// CHECK-NOT:     torch.aten.append.t
// CHECK-NOT:     torch.aten.exp
// CHECK:         }) : (!torch.int, !torch.vtensor<[2],f32>) -> (!torch.int, !torch.vtensor<[2],f32>)
// CHECK-NEXT:    "func.return"(%[[R]])
  "func.func"() <{sym_name = "dead_carry", function_type = (!torch.vtensor<[2],f32>, !torch.int) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>, %n: !torch.int):
    %zero = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
    %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %empty = "torch.prim.ListConstruct"() : () -> !torch.list<vtensor>
    %r:3 = "scf.while"(%zero, %x, %empty) ({
    ^bb1(%i: !torch.int, %v: !torch.vtensor<[2],f32>, %probs: !torch.list<vtensor>):
      %more = "torch.aten.lt.int"(%i, %n) : (!torch.int, !torch.int) -> !torch.bool
      %c = "torch_c.to_i1"(%more) : (!torch.bool) -> i1
      "scf.condition"(%c, %i, %v, %probs) : (i1, !torch.int, !torch.vtensor<[2],f32>, !torch.list<vtensor>) -> ()
    }, {
    ^bb2(%i2: !torch.int, %v2: !torch.vtensor<[2],f32>, %probs2: !torch.list<vtensor>):
      %t = "torch.aten.tanh"(%v2) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      %p = "torch.aten.exp"(%t) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      %grown = "torch.aten.append.t"(%probs2, %p) : (!torch.list<vtensor>, !torch.vtensor<[2],f32>) -> !torch.list<vtensor>
      %next = "torch.aten.add.int"(%i2, %one) : (!torch.int, !torch.int) -> !torch.int
      "scf.yield"(%next, %t, %grown) : (!torch.int, !torch.vtensor<[2],f32>, !torch.list<vtensor>) -> ()
    }) : (!torch.int, !torch.vtensor<[2],f32>, !torch.list<vtensor>) -> (!torch.int, !torch.vtensor<[2],f32>, !torch.list<vtensor>)
    "func.return"(%r#1) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()

}) : () -> ()
