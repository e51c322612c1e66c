// RUN: dycl-opt %s -p dycl-shape-infer | filecheck %s
// RUN: dycl-opt %s -p dycl-shape-infer | dycl-opt -p dycl-shape-infer | filecheck %s

// dycl-shape-infer on sizes that change from one iteration to the next (the cases of
// dycl-shape-infer.mlir stay as they were: the IR-mutation campaigns' seeds are that file).

"builtin.module"() ({

// A carry that grows, read in the loop (`while x.size(1) < limit`): its size is not the
// entry size. The first round over the body sees only the entry type [1,2]; folding the
// size there froze the test (a loop that never ended).
// CHECK-LABEL: sym_name = "growing_size_read"
// CHECK:         "scf.while"
// CHECK:         "torch.aten.size.int"(%{{.*}}, %{{.*}}) : (!torch.vtensor<[1,?],f32>, !torch.int) -> !torch.int
// CHECK:         "torch.aten.lt.int"
  "func.func"() <{sym_name = "growing_size_read", function_type = (!torch.vtensor<[1,2],f32>, !torch.int) -> !torch.vtensor<[1,?],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,2],f32>, %limit: !torch.int):
    %x0 = "torch.tensor_static_info_cast"(%x) : (!torch.vtensor<[1,2],f32>) -> !torch.vtensor<[1,?],f32>
    %r = "scf.while"(%x0) ({
    ^bb1(%v: !torch.vtensor<[1,?],f32>):
      %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
      %n = "torch.aten.size.int"(%v, %one) : (!torch.vtensor<[1,?],f32>, !torch.int) -> !torch.int
      %small = "torch.aten.lt.int"(%n, %limit) : (!torch.int, !torch.int) -> !torch.bool
      %c = "torch_c.to_i1"(%small) : (!torch.bool) -> i1
      "scf.condition"(%c, %v) : (i1, !torch.vtensor<[1,?],f32>) -> ()
    }, {
    ^bb2(%v2: !torch.vtensor<[1,?],f32>):
      %one2 = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
      %l = "torch.prim.ListConstruct"(%v2, %v2) : (!torch.vtensor<[1,?],f32>, !torch.vtensor<[1,?],f32>) -> !torch.list<vtensor>
      %d = "torch.aten.cat"(%l, %one2) : (!torch.list<vtensor>, !torch.int) -> !torch.vtensor<[1,?],f32>
      "scf.yield"(%d) : (!torch.vtensor<[1,?],f32>) -> ()
    }) : (!torch.vtensor<[1,?],f32>) -> !torch.vtensor<[1,?],f32>
    "func.return"(%r) : (!torch.vtensor<[1,?],f32>) -> ()
  }) : () -> ()

// The last four columns of a runtime dim (`x[:, -4:]`) are min(n, 4) long: unknown, though
// 5 and 13 columns both give 4.
// CHECK-LABEL: sym_name = "crop_to_window"
// CHECK:         "torch.aten.slice.Tensor"(%{{.*}}) : (!torch.vtensor<[1,?],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.vtensor<[1,?],f32>
  "func.func"() <{sym_name = "crop_to_window", function_type = (!torch.vtensor<[1,?],f32>) -> !torch.vtensor<[1,?],f32>}> ({
  ^bb0(%x: !torch.vtensor<[1,?],f32>):
    %one = "torch.constant.int"() <{value = 1 : i64}> : () -> !torch.int
    %start = "torch.constant.int"() <{value = -4 : i64}> : () -> !torch.int
    %end = "torch.constant.int"() <{value = 9223372036854775807 : i64}> : () -> !torch.int
    %w = "torch.aten.slice.Tensor"(%x, %one, %start, %end, %one) : (!torch.vtensor<[1,?],f32>, !torch.int, !torch.int, !torch.int, !torch.int) -> !torch.vtensor<[1,?],f32>
    "func.return"(%w) : (!torch.vtensor<[1,?],f32>) -> ()
  }) : () -> ()
}) : () -> ()
