// RUN: dycl-opt %s -p dycl-outline | filecheck %s
// RUN: dycl-opt %s -p dycl-outline,dycl-hoist-free | filecheck %s --check-prefix=HOIST

// Views whose shape reads the size of a runtime dim (gpt-fast's `q.view(bsz, seqlen, ...)`
// of a prompt of any length) stay in the run: the sub-DNN computes the size again.

"builtin.module"() ({

// The size of an argument: one call, the host's size op gone with the view.
// CHECK-LABEL: sym_name = "view_of_runtime_length"
// CHECK-NEXT:    ^{{.*}}(%x: !torch.vtensor<[1,?,8],f32>):
// CHECK-NEXT:    %[[R:.*]] = "func.call"(%x) <{callee = @[[ONE:subdnn_[0-9]+]]}> : (!torch.vtensor<[1,?,8],f32>) -> !torch.vtensor<[1,?,2,4],f32>
// CHECK-NEXT:    "func.return"(%[[R]])
// HOIST-LABEL: sym_name = "view_of_runtime_length"
// HOIST-NEXT:    ^{{.*}}(%x: !torch.vtensor<[1,?,8],f32>):
// HOIST-NEXT:    "func.call"(%x)
// HOIST-NEXT:    "func.return"
  "func.func"() <{sym_name = "view_of_runtime_length", function_type = (!torch.vtensor<[1,?,8],f32>) -> !torch.vtensor<[1,?,2,4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,?,8],f32>):
    %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %two = "torch.constant.int"() <{value = 2 : i64}> : () -> !torch.int
    %four = "torch.constant.int"() <{value = 4 : i64}> : () -> !torch.int
    %n = "torch.aten.size.int"(%x, %one) : (!torch.vtensor<[1,?,8],f32>, !torch.int) -> !torch.int
    %h = "torch.aten.tanh"(%x) : (!torch.vtensor<[1,?,8],f32>) -> !torch.vtensor<[1,?,8],f32>
    %shape = "torch.prim.ListConstruct"(%one, %n, %two, %four) : (!torch.int, !torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %v = "torch.aten.view"(%h, %shape) : (!torch.vtensor<[1,?,8],f32>, !torch.list<int>) -> !torch.vtensor<[1,?,2,4],f32>
    %e = "torch.aten.exp"(%v) : (!torch.vtensor<[1,?,2,4],f32>) -> !torch.vtensor<[1,?,2,4],f32>
    "func.return"(%e) : (!torch.vtensor<[1,?,2,4],f32>) -> ()
  }) : () -> ()

// The size of a tensor the run makes, doubled (`h.view(1, 2 * h.size(1), 4)`), and read by
// the host too: the view is still inside, and the sub-DNN returns no tensor for its size
// (the host reads the size of the argument it has, the run's own copy stays inside).
// CHECK-LABEL: sym_name = "size_of_run_value"
// CHECK-NEXT:    ^{{.*}}(%x: !torch.vtensor<[1,?,8],f32>):
// CHECK:         %[[R:.*]] = "func.call"(%x) <{callee = @[[TWO:subdnn_[0-9]+]]}> : (!torch.vtensor<[1,?,8],f32>) -> !torch.vtensor<[1,?,4],f32>
// CHECK-NOT:     "func.call"
// CHECK:         "func.return"(%[[R]], %{{.*}}) : (!torch.vtensor<[1,?,4],f32>, !torch.int) -> ()
  "func.func"() <{sym_name = "size_of_run_value", function_type = (!torch.vtensor<[1,?,8],f32>) -> (!torch.vtensor<[1,?,4],f32>, !torch.int)}> ({
  ^bb0(%x: !torch.vtensor<[1,?,8],f32>):
    %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %two = "torch.constant.int"() <{value = 2 : i64}> : () -> !torch.int
    %four = "torch.constant.int"() <{value = 4 : i64}> : () -> !torch.int
    %n = "torch.aten.size.int"(%x, %one) : (!torch.vtensor<[1,?,8],f32>, !torch.int) -> !torch.int
    %h = "torch.aten.tanh"(%x) : (!torch.vtensor<[1,?,8],f32>) -> !torch.vtensor<[1,?,8],f32>
    %m = "torch.aten.size.int"(%h, %one) : (!torch.vtensor<[1,?,8],f32>, !torch.int) -> !torch.int
    %rows = "torch.aten.mul.int"(%two, %m) : (!torch.int, !torch.int) -> !torch.int
    %shape = "torch.prim.ListConstruct"(%one, %rows, %four) : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %v = "torch.aten.view"(%h, %shape) : (!torch.vtensor<[1,?,8],f32>, !torch.list<int>) -> !torch.vtensor<[1,?,4],f32>
    %e = "torch.aten.exp"(%v) : (!torch.vtensor<[1,?,4],f32>) -> !torch.vtensor<[1,?,4],f32>
    "func.return"(%e, %n) : (!torch.vtensor<[1,?,4],f32>, !torch.int) -> ()
  }) : () -> ()

// A size no backend computes as Python does (`//`: ONNX's `Div` truncates below 0) stays in
// the host, and its view splits the run, as any host value does.
// CHECK-LABEL: sym_name = "halved_length"
// CHECK:         "torch.aten.floordiv.int"
// CHECK:         "func.call"
// CHECK:         "torch.aten.view"
// CHECK-NEXT:    "func.call"
  "func.func"() <{sym_name = "halved_length", function_type = (!torch.vtensor<[1,?,8],f32>) -> !torch.vtensor<[1,?,16],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,?,8],f32>):
    %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %two = "torch.constant.int"() <{value = 2 : i64}> : () -> !torch.int
    %sixteen = "torch.constant.int"() <{value = 16 : i64}> : () -> !torch.int
    %n = "torch.aten.size.int"(%x, %one) : (!torch.vtensor<[1,?,8],f32>, !torch.int) -> !torch.int
    %half = "torch.aten.floordiv.int"(%n, %two) : (!torch.int, !torch.int) -> !torch.int
    %h = "torch.aten.tanh"(%x) : (!torch.vtensor<[1,?,8],f32>) -> !torch.vtensor<[1,?,8],f32>
    %shape = "torch.prim.ListConstruct"(%one, %half, %sixteen) : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %v = "torch.aten.view"(%h, %shape) : (!torch.vtensor<[1,?,8],f32>, !torch.list<int>) -> !torch.vtensor<[1,?,16],f32>
    %e = "torch.aten.exp"(%v) : (!torch.vtensor<[1,?,16],f32>) -> !torch.vtensor<[1,?,16],f32>
    "func.return"(%e) : (!torch.vtensor<[1,?,16],f32>) -> ()
  }) : () -> ()

// A view alone (nothing to compute around it): a sub-DNN of one op after dycl-outline, which
// dycl-hoist-free gives back to the host with its size, read from the argument there.
// CHECK-LABEL: sym_name = "lone_view"
// CHECK:         "func.call"
// HOIST-LABEL: sym_name = "lone_view"
// HOIST-NEXT:    ^{{.*}}(%x: !torch.vtensor<[?,8],f32>):
// HOIST-NOT:     "func.call"
// HOIST:         %[[N:.*]] = "torch.aten.size.int"(%x, %{{.*}})
// HOIST:         %[[S:.*]] = "torch.prim.ListConstruct"(%[[N]], %{{.*}}, %{{.*}})
// HOIST-NEXT:    %[[V:.*]] = "torch.aten.view"(%x, %[[S]])
// HOIST-NEXT:    "func.return"(%[[V]])
  "func.func"() <{sym_name = "lone_view", function_type = (!torch.vtensor<[?,8],f32>) -> !torch.vtensor<[?,2,4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[?,8],f32>):
    %zero = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
    %two = "torch.constant.int"() <{value = 2 : i64}> : () -> !torch.int
    %four = "torch.constant.int"() <{value = 4 : i64}> : () -> !torch.int
    %n = "torch.aten.size.int"(%x, %zero) : (!torch.vtensor<[?,8],f32>, !torch.int) -> !torch.int
    %shape = "torch.prim.ListConstruct"(%n, %two, %four) : (!torch.int, !torch.int, !torch.int) -> !torch.list<int>
    %v = "torch.aten.view"(%x, %shape) : (!torch.vtensor<[?,8],f32>, !torch.list<int>) -> !torch.vtensor<[?,2,4],f32>
    "func.return"(%v) : (!torch.vtensor<[?,2,4],f32>) -> ()
  }) : () -> ()

// The sub-DNNs compute the sizes themselves:
// CHECK:       sym_name = "[[ONE]]"
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: !torch.vtensor<[1,?,8],f32>):
// CHECK:         %[[H:.*]] = "torch.aten.tanh"(%[[X]])
// CHECK:         %[[N:.*]] = "torch.aten.size.int"(%[[X]], %{{.*}})
// CHECK:         %[[S:.*]] = "torch.prim.ListConstruct"(%{{.*}}, %[[N]], %{{.*}}, %{{.*}})
// CHECK-NEXT:    %[[V:.*]] = "torch.aten.view"(%[[H]], %[[S]])
// CHECK-NEXT:    "torch.aten.exp"(%[[V]])
// CHECK:       sym_name = "[[TWO]]"
// CHECK:         %[[H2:.*]] = "torch.aten.tanh"
// CHECK:         %[[M:.*]] = "torch.aten.size.int"(%[[H2]], %{{.*}})
// CHECK-NEXT:    %[[ROWS:.*]] = "torch.aten.mul.int"(%{{.*}}, %[[M]])
// CHECK:         "torch.prim.ListConstruct"(%{{.*}}, %[[ROWS]], %{{.*}})
// CHECK-NEXT:    "torch.aten.view"(%[[H2]]
}) : () -> ()
