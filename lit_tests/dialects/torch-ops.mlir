// RUN: dycl-opt %s | filecheck %s

// Registered constants and list ops, and an aten op DyCL does not register, all keep
// torch-mlir's generic form.
// CHECK-LABEL: sym_name = "ops"
// CHECK:       "torch.constant.int"() <{value = -1 : i64}> : () -> !torch.int
// CHECK:       "torch.constant.float"() <{value = 2.500000e-01 : f64}> : () -> !torch.float
// CHECK:       "torch.constant.bool"() <{value = true}> : () -> !torch.bool
// CHECK:       "torch.constant.none"() : () -> !torch.none
// CHECK:       "torch.constant.str"() <{value = "mean"}> : () -> !torch.str
// CHECK:       "torch.prim.ListConstruct"(%{{.*}}, %{{.*}}) : (!torch.int, !torch.int) -> !torch.list<int>
// CHECK:       "torch.aten.my_custom.overload"(%{{.*}}, %{{.*}}) {note = "kept"} : (!torch.vtensor<[2],f32>, !torch.list<int>) -> !torch.vtensor<[2],f32>
// CHECK:       "torch.vtensor.literal"() <{value = dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>}> : () -> !torch.vtensor<[2],f32>
// CHECK:       "torch_c.to_i1"(%{{.*}}) : (!torch.bool) -> i1
"builtin.module"() ({
  "func.func"() <{sym_name = "ops", function_type = (!torch.vtensor<[2],f32>) -> ()}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %i = "torch.constant.int"() <{value = -1 : i64}> : () -> !torch.int
    %f = "torch.constant.float"() <{value = 2.500000e-01 : f64}> : () -> !torch.float
    %b = "torch.constant.bool"() <{value = true}> : () -> !torch.bool
    %n = "torch.constant.none"() : () -> !torch.none
    %s = "torch.constant.str"() <{value = "mean"}> : () -> !torch.str
    %l = "torch.prim.ListConstruct"(%i, %i) : (!torch.int, !torch.int) -> !torch.list<int>
    %y = "torch.aten.my_custom.overload"(%x, %l) {note = "kept"} : (!torch.vtensor<[2],f32>, !torch.list<int>) -> !torch.vtensor<[2],f32>
    %lit = "torch.vtensor.literal"() <{value = dense<[1.0, 2.0]> : tensor<2xf32>}> : () -> !torch.vtensor<[2],f32>
    %c = "torch_c.to_i1"(%b) : (!torch.bool) -> i1
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()
