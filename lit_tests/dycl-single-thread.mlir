// RUN: dycl-opt %s -p 'dycl-single-thread{max-macs=1000}' --verify-hcfg | filecheck %s
// RUN: dycl-opt %s -p dycl-single-thread | filecheck %s --check-prefix=DEFAULT

"builtin.module"() ({

// The host function is no sub-DNN: it is left alone.
// CHECK-LABEL: sym_name = "forward"
// CHECK:       }) : () -> ()
  "func.func"() <{sym_name = "forward", function_type = (!torch.vtensor<[1,512],f32>) -> (!torch.vtensor<[1,4],f32>, !torch.vtensor<[1,512],f32>)}> ({
  ^bb0(%x: !torch.vtensor<[1,512],f32>):
    %h = "func.call"(%x) <{callee = @block}> : (!torch.vtensor<[1,512],f32>) -> !torch.vtensor<[1,512],f32>
    %g = "func.call"(%x) <{callee = @gate}> : (!torch.vtensor<[1,512],f32>) -> !torch.vtensor<[1,4],f32>
    %r = "func.call"(%g) <{callee = @activation}> : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
    %p = "func.call"(%r) <{callee = @pinned}> : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
    "func.return"(%p, %h) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[1,512],f32>) -> ()
  }) : () -> ()

// 512 x 512 = 262144 multiply-accumulates: over 1000, under the default 2 M.
// CHECK-LABEL: sym_name = "block"
// CHECK:       }) {dycl.subdnn} : () -> ()
// DEFAULT-LABEL: sym_name = "block"
// DEFAULT:       }) {dycl.subdnn, dycl.threads = 1 : i64} : () -> ()
  "func.func"() <{sym_name = "block", function_type = (!torch.vtensor<[1,512],f32>) -> !torch.vtensor<[1,512],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[1,512],f32>):
    %w = "dycl.param"() {name = "block.weight"} : () -> !torch.vtensor<[512,512],f32>
    %y = "torch.aten.mm"(%a, %w) : (!torch.vtensor<[1,512],f32>, !torch.vtensor<[512,512],f32>) -> !torch.vtensor<[1,512],f32>
    "func.return"(%y) : (!torch.vtensor<[1,512],f32>) -> ()
  }) {dycl.subdnn} : () -> ()

// 512 x 4 = 2048 multiply-accumulates: over 1000 too.
// CHECK-LABEL: sym_name = "gate"
// CHECK:       }) {dycl.subdnn} : () -> ()
  "func.func"() <{sym_name = "gate", function_type = (!torch.vtensor<[1,512],f32>) -> !torch.vtensor<[1,4],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[1,512],f32>):
    %w = "dycl.param"() {name = "gate.weight"} : () -> !torch.vtensor<[4,512],f32>
    %none = "torch.constant.none"() : () -> !torch.none
    %y = "torch.aten.linear"(%a, %w, %none) : (!torch.vtensor<[1,512],f32>, !torch.vtensor<[4,512],f32>, !torch.none) -> !torch.vtensor<[1,4],f32>
    "func.return"(%y) : (!torch.vtensor<[1,4],f32>) -> ()
  }) {dycl.subdnn} : () -> ()

// No product at all: marked.
// CHECK-LABEL: sym_name = "activation"
// CHECK:       }) {dycl.subdnn, dycl.threads = 1 : i64} : () -> ()
  "func.func"() <{sym_name = "activation", function_type = (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[1,4],f32>):
    %y = "torch.aten.relu"(%a) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
    "func.return"(%y) : (!torch.vtensor<[1,4],f32>) -> ()
  }) {dycl.subdnn} : () -> ()

// A thread count already given is kept.
// CHECK-LABEL: sym_name = "pinned"
// CHECK:       }) {dycl.subdnn, dycl.threads = 2 : i64} : () -> ()
  "func.func"() <{sym_name = "pinned", function_type = (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>, sym_visibility = "private"}> ({
  ^bb0(%a: !torch.vtensor<[1,4],f32>):
    %y = "torch.aten.tanh"(%a) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
    "func.return"(%y) : (!torch.vtensor<[1,4],f32>) -> ()
  }) {dycl.subdnn, dycl.threads = 2 : i64} : () -> ()

}) : () -> ()
