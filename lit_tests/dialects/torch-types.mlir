// RUN: dycl-opt %s | filecheck %s
// RUN: dycl-opt %s | dycl-opt | filecheck %s

// Torch types print back exactly as torch-mlir writes them, unknown ones included.
// CHECK: ^bb0(%{{.*}}: !torch.vtensor<[1,?,32],f32>, %{{.*}}: !torch.vtensor<[],i1>, %{{.*}}: !torch.vtensor<*,si64>, %{{.*}}: !torch.vtensor, %{{.*}}: !torch.list<vtensor<[2],f32>>, %{{.*}}: !torch.optional<list<int>>, %{{.*}}: !torch.tuple<int, float>, %{{.*}}: !torch.Generator):
"builtin.module"() ({
  "func.func"() <{sym_name = "types", function_type = (!torch.vtensor<[1,?,32],f32>, !torch.vtensor<[],i1>, !torch.vtensor<*,si64>, !torch.vtensor, !torch.list<vtensor<[2],f32>>, !torch.optional<list<int>>, !torch.tuple<int, float>, !torch.Generator) -> ()}> ({
  ^bb0(%a: !torch.vtensor<[1,?,32],f32>, %b: !torch.vtensor<[],i1>, %c: !torch.vtensor<*,si64>, %d: !torch.vtensor, %e: !torch.list<vtensor<[2],f32>>, %f: !torch.optional<list<int>>, %g: !torch.tuple<int, float>, %h: !torch.Generator):
    "func.return"() : () -> ()
  }) : () -> ()
}) : () -> ()
