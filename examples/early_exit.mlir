// An early exit: one linear layer, then either return (max > 0.5) or one more layer.
// Weights are named references (dycl.param) bound from early_exit.weights.npz.
"builtin.module"() ({
  "func.func"() <{sym_name = "forward", function_type = (!torch.vtensor<[1,4],f32>) -> (!torch.vtensor<[1,4],f32>, !torch.int)}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %w = "dycl.param"() {name = "fc.weight"} : () -> !torch.vtensor<[4,4],f32>
    %b = "dycl.param"() {name = "fc.bias"} : () -> !torch.vtensor<[4],f32>
    %h = "torch.aten.linear"(%x, %w, %b) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4],f32>) -> !torch.vtensor<[1,4],f32>
    %m = "torch.aten.max"(%h) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[],f32>
    %thr = "torch.constant.float"() <{value = 5.000000e-01 : f64}> : () -> !torch.float
    %gt = "torch.aten.gt.Scalar"(%m, %thr) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %bb = "torch.aten.Bool.Tensor"(%gt) : (!torch.vtensor<[],i1>) -> !torch.bool
    %c = "torch_c.to_i1"(%bb) : (!torch.bool) -> i1
    %r, %idx = "scf.if"(%c) ({
      %zero = "torch.constant.int"() <{value = 0 : i64}> : () -> !torch.int
      "scf.yield"(%h, %zero) : (!torch.vtensor<[1,4],f32>, !torch.int) -> ()
    }, {
      %h1 = "torch.aten.relu"(%h) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
      %h2 = "torch.aten.linear"(%h1, %w, %b) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4],f32>) -> !torch.vtensor<[1,4],f32>
      %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
      %two = "torch.constant.int"() <{value = 2 : i64}> : () -> !torch.int
      %k = "torch.aten.sub.int"(%two, %one) : (!torch.int, !torch.int) -> !torch.int
      "scf.yield"(%h2, %k) : (!torch.vtensor<[1,4],f32>, !torch.int) -> ()
    }) : (i1) -> (!torch.vtensor<[1,4],f32>, !torch.int)
    "func.return"(%r, %idx) : (!torch.vtensor<[1,4],f32>, !torch.int) -> ()
  }) {dycl.output_tree = "{\"tuple\": [0, 1]}"} : () -> ()
}) : () -> ()
