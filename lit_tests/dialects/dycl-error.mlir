// RUN: dycl-opt %s | filecheck %s
// RUN: dycl-opt %s --pretty | dycl-opt | filecheck %s
// RUN: dycl-opt %s -p dycl-pipeline | filecheck %s

// An arm of the program that cannot compute raises its message when taken. It is an effect:
// the pipeline keeps it though nothing reads it.
// CHECK: "dycl.error"() {message = "model.py:12: `y[1] * 2` cannot run when `y` has size 1 in dim 0"} : () -> ()
"builtin.module"() ({
  "func.func"() <{sym_name = "forward", function_type = (i1, !torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%p: i1, %x: !torch.vtensor<[2],f32>):
    %r = "scf.if"(%p) ({
      "dycl.error"() {message = "model.py:12: `y[1] * 2` cannot run when `y` has size 1 in dim 0"} : () -> ()
      "scf.yield"(%x) : (!torch.vtensor<[2],f32>) -> ()
    }, {
      %y = "torch.aten.tanh"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
      "scf.yield"(%y) : (!torch.vtensor<[2],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[2],f32>
    "func.return"(%r) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()
}) : () -> ()
