// RUN: dycl-opt %s | filecheck %s
// RUN: dycl-opt %s --pretty | dycl-opt | filecheck %s

// A weight is a named reference to the weight store; the IR never holds its values.
// CHECK: %{{.*}} = "dycl.param"() {name = "blocks.3.conv.weight"} : () -> !torch.vtensor<[16,16,3,3],f32>
"builtin.module"() ({
  "func.func"() <{sym_name = "weights", function_type = () -> !torch.vtensor<[16,16,3,3],f32>}> ({
    %w = "dycl.param"() {name = "blocks.3.conv.weight"} : () -> !torch.vtensor<[16,16,3,3],f32>
    "func.return"(%w) : (!torch.vtensor<[16,16,3,3],f32>) -> ()
  }) : () -> ()
}) : () -> ()
