// RUN: dycl-opt %s --verify-diagnostics | filecheck %s

// CHECK: Operation does not verify: result {{.*}} does not verify:
// CHECK-NEXT: !torch.int should be of base attribute torch.vtensor
"builtin.module"() ({
  %w = "dycl.param"() {name = "fc.weight"} : () -> !torch.int
}) : () -> ()
