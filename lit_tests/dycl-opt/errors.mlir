// Malformed input, bad pipelines and missing files end in a located diagnostic and exit 1.
// RUN: not dycl-opt %s 2>&1 | filecheck %s --check-prefix=UNDEF
// RUN: not dycl-opt %s -p no-such-pass 2>&1 | filecheck %s --check-prefix=PASS
// RUN: not dycl-opt %s -p 'dycl-unroll-loops{max-trip-count=many}' 2>&1 | filecheck %s --check-prefix=OPTION
// RUN: not dycl-opt %s.missing 2>&1 | filecheck %s --check-prefix=MISSING

// UNDEF: errors.mlir:{{[0-9]+}}:{{[0-9]+}}: error: values used but not defined: [%undefined]
// UNDEF-NOT: Traceback
// PASS: error: Unrecognized passes: ['no-such-pass']
// OPTION: <pass pipeline>: error: Incompatible types
// MISSING: errors.mlir.missing: error: No such file or directory

"builtin.module"() ({
  "func.func"() <{sym_name = "f", function_type = () -> !torch.int}> ({
    "func.return"(%undefined) : (!torch.int) -> ()
  }) : () -> ()
}) : () -> ()
