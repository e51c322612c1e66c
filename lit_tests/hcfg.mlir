// RUN: dycl-opt %s -p 'dycl-pipeline{keep-branches=false}' --emit-hcfg=summary | filecheck %s --check-prefix=SUMMARY
// RUN: dycl-opt %s -p 'dycl-pipeline{keep-branches=false}' --emit-hcfg=dot | filecheck %s --check-prefix=DOT

// An early exit: the HCFG is entry -> sub-DNN (with the flag) -> if -> one sub-DNN per exit.
// SUMMARY:      HCFG of @forward: 3 sub-DNNs, 3 call sites, 1 control ops, 2 host ops
// SUMMARY:        @subdnn_0: 4 ops
// SUMMARY:        torch.aten.Bool.Tensor: 1
// SUMMARY:        torch_c.to_i1: 1
// SUMMARY:      calls (input bytes -> output bytes):
// SUMMARY-NEXT:   n1 @subdnn_0: 16 -> 17
// DOT:      digraph "forward" {
// DOT-DAG:    entry [label="@forward", shape=invhouse];
// DOT-DAG:    n1 [label="@subdnn_0\n4 ops", shape=box
// DOT-DAG:    n2 [label="scf.if", shape=diamond];
// DOT-DAG:    entry -> n1 [label="1x4:float32"];
// DOT-DAG:    n1 -> n2 [label="i1 via Bool.Tensor+torch_c.to_i1"];
// DOT-DAG:    n2 -> n3 [label="then", style=dashed
// DOT-DAG:    n2 -> n4 [label="else", style=dashed
// DOT-DAG:    n2 -> return [label="1x4:float32"];
// DOT:      }
"builtin.module"() ({
  "func.func"() <{sym_name = "forward", function_type = (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,4],f32>):
    %w = "dycl.param"() {name = "fc.weight"} : () -> !torch.vtensor<[4,4],f32>
    %h = "torch.aten.mm"(%x, %w) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
    %m = "torch.aten.max"(%h) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[],f32>
    %thr = "torch.constant.float"() <{value = 5.000000e-01 : f64}> : () -> !torch.float
    %gt = "torch.aten.gt.Scalar"(%m, %thr) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %t = "torch.aten.tanh"(%h) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
    %bb = "torch.aten.Bool.Tensor"(%gt) : (!torch.vtensor<[],i1>) -> !torch.bool
    %c = "torch_c.to_i1"(%bb) : (!torch.bool) -> i1
    %r = "scf.if"(%c) ({
      %e = "torch.aten.exp"(%t) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
      "scf.yield"(%e) : (!torch.vtensor<[1,4],f32>) -> ()
    }, {
      %y = "torch.aten.mm"(%t, %w) : (!torch.vtensor<[1,4],f32>, !torch.vtensor<[4,4],f32>) -> !torch.vtensor<[1,4],f32>
      %z = "torch.aten.relu"(%y) : (!torch.vtensor<[1,4],f32>) -> !torch.vtensor<[1,4],f32>
      "scf.yield"(%z) : (!torch.vtensor<[1,4],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[1,4],f32>
    "func.return"(%r) : (!torch.vtensor<[1,4],f32>) -> ()
  }) : () -> ()
}) : () -> ()
