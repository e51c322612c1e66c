// RUN: dycl-opt %s -p dycl-outline --split-input-file --verify-diagnostics | filecheck %s
// RUN: not dycl-opt %s -p dycl-outline 2>&1 | filecheck %s --check-prefix=CLI

// IR that parses but does not verify is reported at the op that fails, before any pass
// runs (dycl.fuzz, seed 1: cases 2913, 7351, 9770, 8218); a function a pass cannot take
// is the pass's diagnostic.

// A block label at module level: the module has two blocks. xDSL verified the func.call
// inside first, and its symbol lookup raised ValueError ('block' property ... single-block).
// CHECK: verifier-diagnostics.mlir:[[# @LINE + 3]]:1: error: 'builtin.module' op Region 'body' at position 0 expected a single block, but got 2 blocks
// CLI: verifier-diagnostics.mlir:[[# @LINE + 2]]:1: error: 'builtin.module' op Region 'body' at position 0 expected a single block
// CLI-NOT: Traceback
"builtin.module"() ({
  "func.func"() <{sym_name = "f", function_type = () -> ()}> ({
    "func.call"() <{callee = @g}> : () -> ()
    "func.return"() : () -> ()
  }) : () -> ()
^bb0:
  "func.func"() <{sym_name = "g", function_type = () -> ()}> ({
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()

// -----

// A func.func whose function_type is misspelled: xDSL verified the func.return inside
// first, which read the missing property (KeyError 'function_type').
// CHECK: verifier-diagnostics.mlir:[[# @LINE + 2]]:3: error: 'func.func' op property 'function_type' expected in operation 'func.func'
"builtin.module"() ({
  "func.func"() <{sym_name = "f", function_typ = (!torch.int) -> !torch.int}> ({
  ^bb0(%x: !torch.int):
    "func.return"(%x) : (!torch.int) -> ()
  }) : () -> ()
}) : () -> ()

// -----

// A use above its definition (swapped lines). xDSL checks no dominance: the passes met it
// and erased an op that still had uses ("Erased SSA value is used by the operation").
// CHECK: verifier-diagnostics.mlir:[[# @LINE + 4]]:5: error: 'torch.aten.relu' op operand #0 (%y) does not dominate this use (defined at line [[# @LINE + 5]], column 5)
"builtin.module"() ({
  "func.func"() <{sym_name = "f", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %z = "torch.aten.relu"(%y) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    %y = "torch.aten.relu"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    "func.return"(%z) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()
}) : () -> ()

// -----

// An op's own result used inside its region.
// CHECK: verifier-diagnostics.mlir:[[# @LINE + 5]]:7: error: 'scf.yield' op operand #0 (%r) does not dominate this use
"builtin.module"() ({
  "func.func"() <{sym_name = "f", function_type = (!torch.vtensor<[2],f32>, i1) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>, %c: i1):
    %r = "scf.if"(%c) ({
      "scf.yield"(%r) : (!torch.vtensor<[2],f32>) -> ()
    }, {
      "scf.yield"(%x) : (!torch.vtensor<[2],f32>) -> ()
    }) : (i1) -> !torch.vtensor<[2],f32>
    "func.return"(%r) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()
}) : () -> ()

// -----

// A function body of two blocks verifies (cf-style IR) but no DyCL pass takes it; the
// passes' `body.block` raised ValueError.
// CHECK: @f: a function with 2 blocks: DyCL's passes need one block per function
"builtin.module"() ({
  "func.func"() <{sym_name = "f", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>):
    "func.return"(%x) : (!torch.vtensor<[2],f32>) -> ()
  ^bb1(%z: !torch.vtensor<[2],f32>):
    "func.return"(%z) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()
}) : () -> ()

// -----

// An unknown op where func.return should be verifies (xDSL takes any unregistered op for a
// terminator); in a sub-DNN it failed an assertion in dycl-hoist-free (seed 2, case 8275).
// CHECK: @f: op 1 (foo.return): a function that does not end in func.return
"builtin.module"() ({
  "func.func"() <{sym_name = "f", function_type = (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>}> ({
  ^bb0(%x: !torch.vtensor<[2],f32>):
    %y = "torch.aten.relu"(%x) : (!torch.vtensor<[2],f32>) -> !torch.vtensor<[2],f32>
    "foo.return"(%y) : (!torch.vtensor<[2],f32>) -> ()
  }) : () -> ()
}) : () -> ()
