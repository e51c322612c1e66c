// RUN: dycl-opt %s -p dycl-hoist-free | filecheck %s
// RUN: dycl-opt %s -p dycl-outline,dycl-hoist-free | filecheck %s --check-prefix=PIPE

"builtin.module"() ({

// A sub-DNN that only flattens and copies its input is emptied: the host flattens (a
// view), the copy disappears (value semantics), the sub-DNN is dropped.
// CHECK-LABEL: sym_name = "emptied"
// CHECK:         %[[F:.*]] = "torch.aten.flatten.using_ints"(%x, %{{.*}}, %{{.*}}) : (!torch.vtensor<[1,2,3],f32>, !torch.int, !torch.int) -> !torch.vtensor<[1,6],f32>
// CHECK-NEXT:    %[[E:.*]] = "func.call"(%[[F]]) <{callee = @exp_of_flat}> : (!torch.vtensor<[1,6],f32>) -> !torch.vtensor<[1,6],f32>
// CHECK-NEXT:    "func.return"(%[[E]], %[[F]])
// CHECK-NOT:     @only_views
  "func.func"() <{sym_name = "emptied", function_type = (!torch.vtensor<[1,2,3],f32>) -> (!torch.vtensor<[1,6],f32>, !torch.vtensor<[1,6],f32>)}> ({
  ^bb0(%x: !torch.vtensor<[1,2,3],f32>):
    %v = "func.call"(%x) <{callee = @only_views}> : (!torch.vtensor<[1,2,3],f32>) -> !torch.vtensor<[1,6],f32>
    %e = "func.call"(%v) <{callee = @exp_of_flat}> : (!torch.vtensor<[1,6],f32>) -> !torch.vtensor<[1,6],f32>
    "func.return"(%e, %v) : (!torch.vtensor<[1,6],f32>, !torch.vtensor<[1,6],f32>) -> ()
  }) : () -> ()
  "func.func"() <{sym_name = "only_views", function_type = (!torch.vtensor<[1,2,3],f32>) -> !torch.vtensor<[1,6],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[1,2,3],f32>):
    %i1 = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %m1 = "torch.constant.int"() <{value = -1 : i64}> : () -> !torch.int
    %f = "torch.aten.flatten.using_ints"(%a, %i1, %m1) : (!torch.vtensor<[1,2,3],f32>, !torch.int, !torch.int) -> !torch.vtensor<[1,6],f32>
    %none = "torch.constant.none"() : () -> !torch.none
    %c = "torch.aten.clone"(%f, %none) : (!torch.vtensor<[1,6],f32>, !torch.none) -> !torch.vtensor<[1,6],f32>
    "func.return"(%c) : (!torch.vtensor<[1,6],f32>) -> ()
  }) {dycl.subdnn} : () -> ()
  "func.func"() <{sym_name = "exp_of_flat", function_type = (!torch.vtensor<[1,6],f32>) -> !torch.vtensor<[1,6],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[1,6],f32>):
    %e = "torch.aten.exp"(%a) : (!torch.vtensor<[1,6],f32>) -> !torch.vtensor<[1,6],f32>
    "func.return"(%e) : (!torch.vtensor<[1,6],f32>) -> ()
  }) {dycl.subdnn} : () -> ()

// Results that are an argument, a weight reference, or a view of a computed value; an
// argument only a reshape reads; an unused argument. A permute that moves data stays.
// CHECK-LABEL: sym_name = "boundary"
// CHECK-DAG:     %[[W:.*]] = "dycl.param"() {name = "w"} : () -> !torch.vtensor<[3],f32>
// CHECK-DAG:     %[[R:.*]] = "torch.aten.reshape"(%y, %{{.*}}) : (!torch.vtensor<[4],f32>, !torch.list<int>) -> !torch.vtensor<[2,2],f32>
// CHECK:         %[[P:.*]], %[[E:.*]] = "func.call"(%x, %[[R]]) <{callee = @mixed}> : (!torch.vtensor<[2,3],f32>, !torch.vtensor<[2,2],f32>) -> (!torch.vtensor<[3,2],f32>, !torch.vtensor<[2,2],f32>)
// CHECK:         %[[U:.*]] = "torch.aten.unsqueeze"(%[[E]], %{{.*}}) : (!torch.vtensor<[2,2],f32>, !torch.int) -> !torch.vtensor<[1,2,2],f32>
// CHECK-NEXT:    "func.return"(%x, %[[P]], %[[U]], %[[W]])
// CHECK-LABEL: sym_name = "mixed", function_type = (!torch.vtensor<[2,3],f32>, !torch.vtensor<[2,2],f32>) -> (!torch.vtensor<[3,2],f32>, !torch.vtensor<[2,2],f32>)
// CHECK-NEXT:    ^{{.*}}(%[[A:.*]]: !torch.vtensor<[2,3],f32>, %[[B:.*]]: !torch.vtensor<[2,2],f32>):
// CHECK:         %[[PP:.*]] = "torch.aten.permute"(%[[A]], %{{.*}})
// CHECK:         %[[EE:.*]] = "torch.aten.exp"(%[[B]])
// CHECK-NEXT:    "func.return"(%[[PP]], %[[EE]])
  "func.func"() <{sym_name = "boundary", function_type = (!torch.vtensor<[2,3],f32>, !torch.vtensor<[4],f32>) -> (!torch.vtensor<[2,3],f32>, !torch.vtensor<[3,2],f32>, !torch.vtensor<[1,2,2],f32>, !torch.vtensor<[3],f32>)}> ({
  ^bb0(%x: !torch.vtensor<[2,3],f32>, %y: !torch.vtensor<[4],f32>):
    %r:4 = "func.call"(%x, %y, %x) <{callee = @mixed}> : (!torch.vtensor<[2,3],f32>, !torch.vtensor<[4],f32>, !torch.vtensor<[2,3],f32>) -> (!torch.vtensor<[2,3],f32>, !torch.vtensor<[3,2],f32>, !torch.vtensor<[1,2,2],f32>, !torch.vtensor<[3],f32>)
    "func.return"(%r#0, %r#1, %r#2, %r#3) : (!torch.vtensor<[2,3],f32>, !torch.vtensor<[3,2],f32>, !torch.vtensor<[1,2,2],f32>, !torch.vtensor<[3],f32>) -> ()
  }) : () -> ()
  "func.func"() <{sym_name = "mixed", function_type = (!torch.vtensor<[2,3],f32>, !torch.vtensor<[4],f32>, !torch.vtensor<[2,3],f32>) -> (!torch.vtensor<[2,3],f32>, !torch.vtensor<[3,2],f32>, !torch.vtensor<[1,2,2],f32>, !torch.vtensor<[3],f32>), sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[2,3],f32>, %b: !torch.vtensor<[4],f32>, %unused: !torch.vtensor<[2,3],f32>):
    %i0 = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
    %i1 = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %i2 = "torch.constant.int"() <{value = 2 : i64}> : () -> !torch.int
    %perm = "torch.prim.ListConstruct"(%i1, %i0) : (!torch.int, !torch.int) -> !torch.list<int>
    %p = "torch.aten.permute"(%a, %perm) : (!torch.vtensor<[2,3],f32>, !torch.list<int>) -> !torch.vtensor<[3,2],f32>
    %shape = "torch.prim.ListConstruct"(%i2, %i2) : (!torch.int, !torch.int) -> !torch.list<int>
    %rb = "torch.aten.reshape"(%b, %shape) : (!torch.vtensor<[4],f32>, !torch.list<int>) -> !torch.vtensor<[2,2],f32>
    %e = "torch.aten.exp"(%rb) : (!torch.vtensor<[2,2],f32>) -> !torch.vtensor<[2,2],f32>
    %u = "torch.aten.unsqueeze"(%e, %i0) : (!torch.vtensor<[2,2],f32>, !torch.int) -> !torch.vtensor<[1,2,2],f32>
    %w = "dycl.param"() {name = "w"} : () -> !torch.vtensor<[3],f32>
    "func.return"(%a, %p, %u, %w) : (!torch.vtensor<[2,3],f32>, !torch.vtensor<[3,2],f32>, !torch.vtensor<[1,2,2],f32>, !torch.vtensor<[3],f32>) -> ()
  }) {dycl.subdnn} : () -> ()

// From host IR: a gate whose "true" branch only reshapes (computation-free): after
// outlining, that branch's sub-DNN is emptied and dropped; a permute of size-1 dims (no
// data movement) leaves the sub-DNN too.
// PIPE-LABEL: sym_name = "gate"
// PIPE:         %[[C:.*]] = "func.call"(%x) <{callee = @subdnn_{{[0-9]+}}}> : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[],i1>
// PIPE:         "scf.if"
// PIPE-NOT:       "func.call"
// PIPE:           "torch.aten.view"(%x, %{{.*}}) : (!torch.vtensor<[1,4],f32>, !torch.list<int>) -> !torch.vtensor<[4,1],f32>
// PIPE-NEXT:      "scf.yield"
// PIPE:           %[[S:.*]] = "func.call"(%x) <{callee = @subdnn_{{[0-9]+}}}> : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
// PIPE:           "torch.aten.permute"(%[[S]], %{{.*}}) : (!torch.vtensor<[1,4],f32>, !torch.list<int>) -> !torch.vtensor<[4,1],f32>
// PIPE-NOT:     "func.call"
// PIPE:         "func.return"
  "func.func"() <{sym_name = "gate", function_type = (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[4,1],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %none = "torch.constant.none"() : () -> !torch.none
    %zero = "torch.constant.float"() <{value = 0.0 : f64}> : () -> !torch.float
    %s = "torch.aten.sum"(%x, %none) : (!torch.vtensor<[1,4],f32>, !torch.none) -> !torch.vtensor<[],f32>
    %c = "torch.aten.gt.Scalar"(%s, %zero) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %b = "torch.aten.Bool.Tensor"(%c) : (!torch.vtensor<[],i1>) -> !torch.bool
    %i = "torch_c.to_i1"(%b) : (!torch.bool) -> i1
    %r = "scf.if"(%i) ({
      %four = "torch.constant.int"() <{value = 4 : i64}> : () -> !torch.int
      %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
      %shape = "torch.prim.ListConstruct"(%four, %one) : (!torch.int, !torch.int) -> !torch.list<int>
      %v = "torch.aten.view"(%x, %shape) : (!torch.vtensor<[1,4],f32>, !torch.list<int>) -> !torch.vtensor<[4,1],f32>
      "scf.yield"(%v) : (!torch.vtensor<[4,1],f32>) -> ()
    }, {
      %sg = "torch.aten.sigmoid"(%x) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
      %zero_i = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
      %one_i = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
      %perm = "torch.prim.ListConstruct"(%one_i, %zero_i) : (!torch.int, !torch.int) -> !torch.list<int>
      %p = "torch.aten.permute"(%sg, %perm) : (!torch.vtensor<[1,4],f32>, !torch.list<int>) -> !torch.vtensor<[4,1],f32>
      "scf.yield"(%p) : (!torch.vtensor<[4,1],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[4,1],f32>
    "func.return"(%r) : (!torch.vtensor<[4,1],f32>) -> ()
  }) : () -> ()
}) : () -> ()
