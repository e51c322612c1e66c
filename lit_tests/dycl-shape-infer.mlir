// RUN: dycl-opt %s -p dycl-shape-infer | filecheck %s
// RUN: dycl-opt %s -p 'dycl-shape-infer{report=true}' 2>&1 >/dev/null | filecheck %s --check-prefix=NOTE
// RUN: dycl-opt %s -p dycl-shape-infer | dycl-opt -p dycl-shape-infer | filecheck %s

"builtin.module"() ({

// Two exits of different widths: the join keeps an unknown dim, each branch casts to it.
// CHECK-LABEL: sym_name = "join_widths"
// CHECK:         "scf.if"
// CHECK:           %[[A:.*]] = "torch.tensor_static_info_cast"(%{{.*}}) : (!torch.vtensor<[1,3],f32>) -> !torch.vtensor<[1,?],f32>
// CHECK-NEXT:      "scf.yield"(%[[A]])
// CHECK:           %[[B:.*]] = "torch.tensor_static_info_cast"(%{{.*}}) : (!torch.vtensor<[1,7],f32>) -> !torch.vtensor<[1,?],f32>
// CHECK-NEXT:      "scf.yield"(%[[B]])
// CHECK:         }) : (i1) -> !torch.vtensor<[1,?],f32>
// NOTE: note: @join_widths: op 1 (scf.if): result #0 merges two shapes: 1x3:float32 | 1x7:float32 -> 1x?:float32
  "func.func"() <{sym_name = "join_widths", function_type = (!torch.vtensor<[1,4],f32>, i1) -> !torch.vtensor<[1,?],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>, %p: i1):
    %none = "torch.constant.none"() : () -> !torch.none
    %r = "scf.if"(%p) ({
      %w1 = "dycl.param"() {name = "e1.weight"} : () -> !torch.vtensor<[3,4],f32>
      %y1 = "torch.aten.linear"(%x, %w1, %none) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[3,4],f32>, !torch.none) -> !torch.vtensor<[1,3],f32>
      %y1c = "torch.tensor_static_info_cast"(%y1) : (!torch.vtensor<[1,3],f32>) -> !torch.vtensor<[1,?],f32>
      "scf.yield"(%y1c) : (!torch.vtensor<[1,?],f32>) -> ()
    }, {
      %w2 = "dycl.param"() {name = "e2.weight"} : () -> !torch.vtensor<[7,4],f32>
      %y2 = "torch.aten.linear"(%x, %w2, %none) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[7,4],f32>, !torch.none) -> !torch.vtensor<[1,7],f32>
      %y2c = "torch.tensor_static_info_cast"(%y2) : (!torch.vtensor<[1,7],f32>) -> !torch.vtensor<[1,?],f32>
      "scf.yield"(%y2c) : (!torch.vtensor<[1,?],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[1,?],f32>
    "func.return"(%r) : (!torch.vtensor<[1,?],f32>) -> ()
  }) : () -> ()

// Both branches agree: the join is static, the casts go, and the op after the join gets
// its static type back (recomputed on meta tensors), as does the function result.
// CHECK-LABEL: sym_name = "join_same"
// CHECK-SAME:    function_type = (!torch.vtensor<[1,4],f32>, i1) -> !torch.vtensor<[1,8],f32>
// CHECK-NOT:     torch.tensor_static_info_cast
// CHECK:         }) : (i1) -> !torch.vtensor<[1,4],f32>
// CHECK:         "torch.aten.cat"(%{{.*}}, %{{.*}}) : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[1,8],f32>
// CHECK:         "torch.aten.relu"(%{{.*}}) : (!torch.vtensor<[1,8],f32>) -> !torch.vtensor<[1,8],f32>
  "func.func"() <{sym_name = "join_same", function_type = (!torch.vtensor<[1,4],f32>, i1) -> !torch.vtensor<[1,?],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>, %p: i1):
    %r = "scf.if"(%p) ({
      %a = "torch.aten.tanh"(%x) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
      %ac = "torch.tensor_static_info_cast"(%a) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,?],f32>
      "scf.yield"(%ac) : (!torch.vtensor<[1,?],f32>) -> ()
    }, {
      %b = "torch.aten.sigmoid"(%x) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
      %bc = "torch.tensor_static_info_cast"(%b) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,?],f32>
      "scf.yield"(%bc) : (!torch.vtensor<[1,?],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[1,?],f32>
    %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %l = "torch.prim.ListConstruct"(%r, %r) : (!torch.vtensor<[1,?],f32>, !torch.vtensor<[1,?],f32>) -> !torch.list<vtensor>
    %c = "torch.aten.cat"(%l, %one) : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[1,?],f32>
    %y = "torch.aten.relu"(%c) : (!torch.vtensor<[1,?],f32>) -> !torch.vtensor<[1,?],f32>
    "func.return"(%y) : (!torch.vtensor<[1,?],f32>) -> ()
  }) : () -> ()

// A carry that grows every iteration: the fixed point has an unknown dim (the mark that
// dycl-unroll-loops{shape-varying-only=true} reads), the entry value is cast to it.
// CHECK-LABEL: sym_name = "growing_carry"
// CHECK:         %[[INIT:.*]] = "torch.tensor_static_info_cast"(%x) : (!torch.vtensor<[1,2],f32>) -> !torch.vtensor<[1,?],f32>
// CHECK:         "scf.for"(%{{.*}}, %{{.*}}, %{{.*}}, %[[INIT]])
// CHECK:         ^{{.*}}(%{{.*}}: index, %{{.*}}: !torch.vtensor<[1,?],f32>):
// CHECK:           "torch.aten.cat"{{.*}} -> !torch.vtensor<[1,?],f32>
// CHECK:         }) : (index, index, index, !torch.vtensor<[1,?],f32>) -> !torch.vtensor<[1,?],f32>
// NOTE: note: @growing_carry: op 5 (scf.for): loop-carried value #0 of scf.for changes shape per iteration: 1x2:float32 -> 1x?:float32
  "func.func"() <{sym_name = "growing_carry", function_type = (!torch.vtensor<[1,2],f32>) -> !torch.vtensor<[1,?],f32>}> ({
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

// A carry of one static shape, typed loosely by the frontend: made static, loop kept.
// CHECK-LABEL: sym_name = "static_carry"
// CHECK-SAME:    -> !torch.vtensor<[1,2],f32>
// CHECK-NOT:     torch.tensor_static_info_cast
// CHECK:         ^{{.*}}(%{{.*}}: index, %{{.*}}: !torch.vtensor<[1,2],f32>):
// CHECK:         }) : (index, index, index, !torch.vtensor<[1,2],f32>) -> !torch.vtensor<[1,2],f32>
// NOTE-NOT: static_carry
  "func.func"() <{sym_name = "static_carry", function_type = (!torch.vtensor<[1,2],f32>) -> !torch.vtensor<[1,?],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,2],f32>):
    %lb = "arith.constant"() <{value = 0 : index}> : () -> index
    %ub = "arith.constant"() <{value = 100 : index}> : () -> index
    %st = "arith.constant"() <{value = 1 : index}> : () -> index
    %x0 = "torch.tensor_static_info_cast"(%x) : (!torch.vtensor<[1,2],f32>) -> !torch.vtensor<[1,?],f32>
    %r = "scf.for"(%lb, %ub, %st, %x0) ({
    ^bb1(%i: index, %acc: !torch.vtensor<[1,?],f32>):
      %t = "torch.aten.tanh"(%acc) : (!torch.vtensor<[1,?],f32>) -> !torch.vtensor<[1,?],f32>
      "scf.yield"(%t) : (!torch.vtensor<[1,?],f32>) -> ()
    }) : (index, index, index, !torch.vtensor<[1,?],f32>) -> !torch.vtensor<[1,?],f32>
    "func.return"(%r) : (!torch.vtensor<[1,?],f32>) -> ()
  }) : () -> ()

// scf.while: the carry reaches its fixed point through the condition and the body.
// CHECK-LABEL: sym_name = "while_carry"
// CHECK:         "scf.condition"(%{{.*}}, %{{.*}}) : (i1, !torch.vtensor<[2,3],f32>) -> ()
// CHECK:         ^{{.*}}(%{{.*}}: !torch.vtensor<[2,3],f32>):
// CHECK:         }) : (!torch.vtensor<[2,3],f32>) -> !torch.vtensor<[2,3],f32>
  "func.func"() <{sym_name = "while_carry", function_type = (!torch.vtensor<[2,3],f32>) -> !torch.vtensor<[?,?],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2,3],f32>):
    %x0 = "torch.tensor_static_info_cast"(%x) : (!torch.vtensor<[2,3],f32>) -> !torch.vtensor<[?,?],f32>
    %r = "scf.while"(%x0) ({
    ^bb1(%v: !torch.vtensor<[?,?],f32>):
      %m = "torch.aten.max"(%v) : (!torch.vtensor<[?,?],f32>) -> !torch.vtensor<[],f32>
      %mf = "torch.aten.item"(%m) : (!torch.vtensor<[],f32>) -> !torch.float
      %eight = "torch.constant.float"() <{value = 8.000000e+00 : f64}> : () -> !torch.float
      %small = "torch.aten.lt.float"(%mf, %eight) : (!torch.float, !torch.float) -> !torch.bool
      %c = "torch_c.to_i1"(%small) : (!torch.bool) -> i1
      "scf.condition"(%c, %v) : (i1, !torch.vtensor<[?,?],f32>) -> ()
    }, {
    ^bb2(%v2: !torch.vtensor<[?,?],f32>):
      %two = "torch.constant.float"() <{value = 2.000000e+00 : f64}> : () -> !torch.float
      %d = "torch.aten.mul.Scalar"(%v2, %two) : (!torch.vtensor<[?,?],f32>, !torch.float) -> !torch.vtensor<[?,?],f32>
      "scf.yield"(%d) : (!torch.vtensor<[?,?],f32>) -> ()
    }) : (!torch.vtensor<[?,?],f32>) -> !torch.vtensor<[?,?],f32>
    "func.return"(%r) : (!torch.vtensor<[?,?],f32>) -> ()
  }) : () -> ()

// A host list whose length the program fixes (ListConstruct + append.t chain): `stack`
// reads a plain list of its elements and gets a static type; `len.t` folds.
// CHECK-LABEL: sym_name = "static_list"
// CHECK-SAME:    -> (!torch.vtensor<[3],f32>, !torch.int)
// CHECK:         %[[L:.*]] = "torch.prim.ListConstruct"(%a, %b, %c) : (!torch.vtensor<[],f32>, !torch.vtensor<[],f32>, !torch.vtensor<[],f32>) -> !torch.list<vtensor>
// CHECK-NEXT:    "torch.aten.stack"(%[[L]], %{{.*}}) : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[3],f32>
// CHECK:         "torch.constant.int"() <{value = 3 : i64}>
// CHECK-NOT:     "torch.aten.len.t"
  "func.func"() <{sym_name = "static_list", function_type = (!torch.vtensor<[],f32>, !torch.vtensor<[],f32>, !torch.vtensor<[],f32>) -> (!torch.vtensor<[?],f32>, !torch.int)}> ({
  ^bb0(%a: !torch.vtensor<[],f32>, %b: !torch.vtensor<[],f32>, %c: !torch.vtensor<[],f32>):
    %zero = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
    %l0 = "torch.prim.ListConstruct"(%a) : (!torch.vtensor<[],f32>) -> !torch.list<vtensor>
    %l1 = "torch.aten.append.t"(%l0, %b) : (!torch.list<vtensor>, !torch.vtensor<[],f32>) -> !torch.list<vtensor>
    %l2 = "torch.aten.append.t"(%l1, %c) : (!torch.list<vtensor>, !torch.vtensor<[],f32>) -> !torch.list<vtensor>
    %s = "torch.aten.stack"(%l2, %zero) : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[?],f32>
    %n = "torch.aten.len.t"(%l2) : (!torch.list<vtensor>) -> !torch.int
    "func.return"(%s, %n) : (!torch.vtensor<[?],f32>, !torch.int) -> ()
  }) : () -> ()

// The size of a static dim is a constant.
// CHECK-LABEL: sym_name = "static_size"
// CHECK-NOT:     torch.aten.size.int
// CHECK:         "torch.constant.int"() <{value = 5 : i64}>
  "func.func"() <{sym_name = "static_size", function_type = (!torch.vtensor<[3,5],f32>) -> !torch.int}> ({
  ^bb0(%x: !torch.vtensor<[3,5],f32>):
    %one = "torch.constant.int"() <{value = -1 : i64}> : () -> !torch.int
    %n = "torch.aten.size.int"(%x, %one) : (!torch.vtensor<[3,5],f32>, !torch.int) -> !torch.int
    "func.return"(%n) : (!torch.int) -> ()
  }) : () -> ()
// Slices between two runtime ints (`x[a:b]`): the rows are unknown, whatever value the
// probes give both ints at once; a declared static dim (the columns) stays static.
// CHECK-LABEL: sym_name = "runtime_bounds"
// CHECK:         "torch.aten.slice.Tensor"(%x, %{{.*}}, %a, %b, %{{.*}}) : (!torch.vtensor<[5,4],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.vtensor<[?,4],f32>
// CHECK:         "torch.aten.select.int"(%x, %{{.*}}, %a) : (!torch.vtensor<[5,4],f32>, !torch.int, !torch.int) -> !torch.vtensor<[4],f32>
  "func.func"() <{sym_name = "runtime_bounds", function_type = (!torch.vtensor<[5,4],f32>, !torch.int, !torch.int) -> (!torch.vtensor<[?,4],f32>, !torch.vtensor<[4],f32>)}> ({
  ^bb0(%x: !torch.vtensor<[5,4],f32>, %a: !torch.int, %b: !torch.int):
    %zero = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
    %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %rows = "torch.aten.slice.Tensor"(%x, %zero, %a, %b, %one) : (!torch.vtensor<[5,4],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.vtensor<[?,4],f32>
    %row = "torch.aten.select.int"(%x, %zero, %a) : (!torch.vtensor<[5,4],f32>, !torch.int, !torch.int) -> !torch.vtensor<[4],f32>
    "func.return"(%rows, %row) : (!torch.vtensor<[?,4],f32>, !torch.vtensor<[4],f32>) -> ()
  }) : () -> ()
}) : () -> ()
