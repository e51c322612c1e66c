// RUN: dycl-opt %s --split-input-file -p dycl-const-prop | filecheck %s

// CHECK-LABEL: sym_name = "first"
// CHECK:       <{value = 3 : i64}>
// CHECK:       // {{-----}}
// CHECK-LABEL: sym_name = "second"
// CHECK:       <{value = true}>
"builtin.module"() ({
  "func.func"() <{sym_name = "first", function_type = () -> !torch.int}> ({
    %a = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %b = "torch.aten.add.int"(%a, %a) : (!torch.int, !torch.int) -> !torch.int
    %c = "torch.aten.add.int"(%b, %a) : (!torch.int, !torch.int) -> !torch.int
    "func.return"(%c) : (!torch.int) -> ()
  }) : () -> ()
}) : () -> ()

// -----

"builtin.module"() ({
  "func.func"() <{sym_name = "second", function_type = () -> !torch.bool}> ({
    %a = "torch.constant.float"() <{value = 1.5 : f64}> : () -> !torch.float
    %b = "torch.constant.float"() <{value = 0.5 : f64}> : () -> !torch.float
    %c = "torch.aten.gt.float"(%a, %b) : (!torch.float, !torch.float) -> !torch.bool
    "func.return"(%c) : (!torch.bool) -> ()
  }) : () -> ()
}) : () -> ()
