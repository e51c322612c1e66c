"""Hand-written host IR with tensor-dependent control flow, and inputs that take every path."""

import torch

T4 = "!torch.vtensor<[1,4],f32>"

EARLY_EXIT = f"""
"builtin.module"() ({{
  "func.func"() <{{sym_name = "forward", function_type = ({T4}) -> ({T4}, !torch.int)}}> ({{
  ^bb0(%x: {T4}):
    %w = "dycl.param"() {{name = "fc.weight"}} : () -> !torch.vtensor<[4,4],f32>
    %b = "dycl.param"() {{name = "fc.bias"}} : () -> !torch.vtensor<[4],f32>
    %h = "torch.aten.linear"(%x, %w, %b) : ({T4}, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4],f32>) -> {T4}
    %m = "torch.aten.max"(%h) : ({T4}) -> !torch.vtensor<[],f32>
    %thr = "torch.constant.float"() <{{value = 5.000000e-01 : f64}}> : () -> !torch.float
    %gt = "torch.aten.gt.Scalar"(%m, %thr) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
    %bb = "torch.aten.Bool.Tensor"(%gt) : (!torch.vtensor<[],i1>) -> !torch.bool
    %c = "torch_c.to_i1"(%bb) : (!torch.bool) -> i1
    %r, %idx = "scf.if"(%c) ({{
      %zero = "torch.constant.int"() <{{value = 0 : i64}}> : () -> !torch.int
      "scf.yield"(%h, %zero) : ({T4}, !torch.int) -> ()
    }}, {{
      %h1 = "torch.aten.relu"(%h) : ({T4}) -> {T4}
      %h2 = "torch.aten.linear"(%h1, %w, %b) : ({T4}, !torch.vtensor<[4,4],f32>, !torch.vtensor<[4],f32>) -> {T4}
      %one = "torch.constant.int"() <{{value = 1 : i64}}> : () -> !torch.int
      %two = "torch.constant.int"() <{{value = 2 : i64}}> : () -> !torch.int
      %k = "torch.aten.sub.int"(%two, %one) : (!torch.int, !torch.int) -> !torch.int
      "scf.yield"(%h2, %k) : ({T4}, !torch.int) -> ()
    }}) : (i1) -> ({T4}, !torch.int)
    "func.return"(%r, %idx) : ({T4}, !torch.int) -> ()
  }}) {{dycl.output_tree = "{{\\"tuple\\": [0, 1]}}"}} : () -> ()
}}) : () -> ()
"""

# Four gated residual steps, the gate decided per step from the data; counts the steps run.
GATED_LOOP = f"""
"builtin.module"() ({{
  "func.func"() <{{sym_name = "forward", function_type = ({T4}) -> ({T4}, !torch.int)}}> ({{
  ^bb0(%x: {T4}):
    %w = "dycl.param"() {{name = "fc.weight"}} : () -> !torch.vtensor<[4,4],f32>
    %lb = "arith.constant"() <{{value = 0 : index}}> : () -> index
    %ub = "arith.constant"() <{{value = 4 : index}}> : () -> index
    %st = "arith.constant"() <{{value = 1 : index}}> : () -> index
    %n0 = "torch.constant.int"() <{{value = 0 : i64}}> : () -> !torch.int
    %r, %n = "scf.for"(%lb, %ub, %st, %x, %n0) ({{
    ^bb1(%i: index, %acc: {T4}, %cnt: !torch.int):
      %s = "torch.aten.sum"(%acc, %none) : ({T4}, !torch.none) -> !torch.vtensor<[],f32>
      %zero = "torch.constant.float"() <{{value = 0.000000e+00 : f64}}> : () -> !torch.float
      %gt = "torch.aten.gt.Scalar"(%s, %zero) : (!torch.vtensor<[],f32>, !torch.float) -> !torch.vtensor<[],i1>
      %bb = "torch.aten.Bool.Tensor"(%gt) : (!torch.vtensor<[],i1>) -> !torch.bool
      %c = "torch_c.to_i1"(%bb) : (!torch.bool) -> i1
      %next, %cnt2 = "scf.if"(%c) ({{
        %y = "torch.aten.mm"(%acc, %w) : ({T4}, !torch.vtensor<[4,4],f32>) -> {T4}
        %one = "torch.constant.int"() <{{value = 1 : i64}}> : () -> !torch.int
        %z = "torch.aten.sub.Tensor"(%acc, %y, %one) : ({T4}, {T4}, !torch.int) -> {T4}
        %inc = "torch.aten.add.int"(%cnt, %one) : (!torch.int, !torch.int) -> !torch.int
        "scf.yield"(%z, %inc) : ({T4}, !torch.int) -> ()
      }}, {{
        %neg = "torch.aten.neg"(%acc) : ({T4}) -> {T4}
        "scf.yield"(%neg, %cnt) : ({T4}, !torch.int) -> ()
      }}) : (i1) -> ({T4}, !torch.int)
      "scf.yield"(%next, %cnt2) : ({T4}, !torch.int) -> ()
    }}) : (index, index, index, {T4}, !torch.int) -> ({T4}, !torch.int)
    "func.return"(%r, %n) : ({T4}, !torch.int) -> ()
  }}) : () -> ()
}}) : () -> ()
""".replace(
    '%s = "torch.aten.sum"(%acc, %none)',
    '%none = "torch.constant.none"() : () -> !torch.none\n      %s = "torch.aten.sum"(%acc, %none)',
)

# Doubles x while its max stays below 8, at most 6 times (a bounded while with a data exit).
BOUNDED_WHILE = f"""
"builtin.module"() ({{
  "func.func"() <{{sym_name = "forward", function_type = ({T4}) -> ({T4}, !torch.int)}}> ({{
  ^bb0(%x: {T4}):
    %i0 = "torch.constant.int"() <{{value = 0 : i64}}> : () -> !torch.int
    %r, %n = "scf.while"(%x, %i0) ({{
    ^bb1(%v: {T4}, %i: !torch.int):
      %six = "torch.constant.int"() <{{value = 6 : i64}}> : () -> !torch.int
      %lt = "torch.aten.lt.int"(%i, %six) : (!torch.int, !torch.int) -> !torch.bool
      %m = "torch.aten.max"(%v) : ({T4}) -> !torch.vtensor<[],f32>
      %mf = "torch.aten.item"(%m) : (!torch.vtensor<[],f32>) -> !torch.float
      %eight = "torch.constant.float"() <{{value = 8.000000e+00 : f64}}> : () -> !torch.float
      %small = "torch.aten.lt.float"(%mf, %eight) : (!torch.float, !torch.float) -> !torch.bool
      %go = "torch.aten.__and__.bool"(%lt, %small) : (!torch.bool, !torch.bool) -> !torch.bool
      %c = "torch_c.to_i1"(%go) : (!torch.bool) -> i1
      "scf.condition"(%c, %v, %i) : (i1, {T4}, !torch.int) -> ()
    }}, {{
    ^bb2(%v2: {T4}, %i2: !torch.int):
      %two = "torch.constant.float"() <{{value = 2.000000e+00 : f64}}> : () -> !torch.float
      %d = "torch.aten.mul.Scalar"(%v2, %two) : ({T4}, !torch.float) -> {T4}
      %one = "torch.constant.int"() <{{value = 1 : i64}}> : () -> !torch.int
      %i3 = "torch.aten.add.int"(%i2, %one) : (!torch.int, !torch.int) -> !torch.int
      "scf.yield"(%d, %i3) : ({T4}, !torch.int) -> ()
    }}) : ({T4}, !torch.int) -> ({T4}, !torch.int)
    "func.return"(%r, %n) : ({T4}, !torch.int) -> ()
  }}) : () -> ()
}}) : () -> ()
"""


def weights(seed=0):
    gen = torch.Generator().manual_seed(seed)
    return {
        "fc.weight": torch.randn(4, 4, generator=gen) * 0.5,
        "fc.bias": torch.randn(4, generator=gen) * 0.1,
    }


def inputs(n=24, seed=1):
    """Random inputs at several scales, so that every branch above is taken."""
    gen = torch.Generator().manual_seed(seed)
    scales = (0.01, 0.1, 1.0, 5.0, 20.0)
    return [torch.randn(1, 4, generator=gen) * scales[i % len(scales)] for i in range(n)]


SAMPLES = {"early_exit": EARLY_EXIT, "gated_loop": GATED_LOOP, "bounded_while": BOUNDED_WHILE}
