"""Hand-written host IR for the HCFG pass tests (the shapes the frontend writes)."""

V = "!torch.vtensor"

# An early exit whose two exits have different widths and an int in the return.
EARLY_EXIT_WIDTHS = f"""
"builtin.module"() ({{
  "func.func"() <{{function_type = ({V}<[1,4],f32>) -> ({V}<[1,?],f32>, !torch.int), sym_name = "forward"}}> ({{
  ^bb0(%x: {V}<[1,4],f32>):
    %w0 = "dycl.param"() {{name = "l0.weight"}} : () -> {V}<[4,4],f32>
    %b0 = "dycl.param"() {{name = "l0.bias"}} : () -> {V}<[4],f32>
    %h = "torch.aten.linear"(%x, %w0, %b0) : ({V}<[1,4],f32>, {V}<[4,4],f32>, {V}<[4],f32>) -> {V}<[1,4],f32>
    %r = "torch.aten.relu"(%h) : ({V}<[1,4],f32>) -> {V}<[1,4],f32>
    %none = "torch.constant.none"() : () -> !torch.none
    %s = "torch.aten.sum"(%r, %none) : ({V}<[1,4],f32>, !torch.none) -> {V}<[],f32>
    %thr = "torch.constant.float"() <{{value = 1.0 : f64}}> : () -> !torch.float
    %c = "torch.aten.gt.Scalar"(%s, %thr) : ({V}<[],f32>, !torch.float) -> {V}<[],i1>
    %cb = "torch.aten.Bool.Tensor"(%c) : ({V}<[],i1>) -> !torch.bool
    %ci = "torch_c.to_i1"(%cb) : (!torch.bool) -> i1
    %out:2 = "scf.if"(%ci) ({{
      %w1 = "dycl.param"() {{name = "e1.weight"}} : () -> {V}<[3,4],f32>
      %b1 = "dycl.param"() {{name = "e1.bias"}} : () -> {V}<[3],f32>
      %y1 = "torch.aten.linear"(%r, %w1, %b1) : ({V}<[1,4],f32>, {V}<[3,4],f32>, {V}<[3],f32>) -> {V}<[1,3],f32>
      %y1c = "torch.tensor_static_info_cast"(%y1) : ({V}<[1,3],f32>) -> {V}<[1,?],f32>
      %i0 = "torch.constant.int"() <{{value = 0 : i64}}> : () -> !torch.int
      "scf.yield"(%y1c, %i0) : ({V}<[1,?],f32>, !torch.int) -> ()
    }}, {{
      %w2 = "dycl.param"() {{name = "e2.weight"}} : () -> {V}<[7,4],f32>
      %b2 = "dycl.param"() {{name = "e2.bias"}} : () -> {V}<[7],f32>
      %t = "torch.aten.tanh"(%r) : ({V}<[1,4],f32>) -> {V}<[1,4],f32>
      %y2 = "torch.aten.linear"(%t, %w2, %b2) : ({V}<[1,4],f32>, {V}<[7,4],f32>, {V}<[7],f32>) -> {V}<[1,7],f32>
      %y2c = "torch.tensor_static_info_cast"(%y2) : ({V}<[1,7],f32>) -> {V}<[1,?],f32>
      %i1 = "torch.constant.int"() <{{value = 1 : i64}}> : () -> !torch.int
      "scf.yield"(%y2c, %i1) : ({V}<[1,?],f32>, !torch.int) -> ()
    }}) : (i1) -> ({V}<[1,?],f32>, !torch.int)
    "func.return"(%out#0, %out#1) : ({V}<[1,?],f32>, !torch.int) -> ()
  }}) {{dycl.output_tree = "{{\\"tuple\\": [0, 1]}}"}} : () -> ()
}}) : () -> ()
"""

# A greedy decoder with `break`: a bounded scf.while carrying the hidden state, the last
# token, the host list of tokens, the step count and the "go on" flag; the tokens are
# stacked at host level after the loop (a list of data-dependent length).
_STEP = f"""
      %emb = "torch.aten.embedding"(%we, %tok, %m1, %false, %false) : ({V}<[10,8],f32>, {V}<[1],si64>, !torch.int, !torch.bool, !torch.bool) -> {V}<[1,8],f32>
      %a = "torch.aten.linear"(%emb, %wx, %none) : ({V}<[1,8],f32>, {V}<[8,8],f32>, !torch.none) -> {V}<[1,8],f32>
      %b = "torch.aten.linear"(%h, %wh, %none) : ({V}<[1,8],f32>, {V}<[8,8],f32>, !torch.none) -> {V}<[1,8],f32>
      %ab = "torch.aten.add.Tensor"(%a, %b, %one) : ({V}<[1,8],f32>, {V}<[1,8],f32>, !torch.int) -> {V}<[1,8],f32>
      %h2 = "torch.aten.tanh"(%ab) : ({V}<[1,8],f32>) -> {V}<[1,8],f32>
      %logits = "torch.aten.linear"(%h2, %wo, %none) : ({V}<[1,8],f32>, {V}<[10,8],f32>, !torch.none) -> {V}<[1,10],f32>
      %tok2 = "torch.aten.argmax"(%logits, %one, %false) : ({V}<[1,10],f32>, !torch.int, !torch.bool) -> {V}<[1],si64>
"""
DECODE = f"""
"builtin.module"() ({{
  "func.func"() <{{function_type = ({V}<[1,8],f32>) -> ({V}<[1,?],si64>, !torch.int), sym_name = "forward"}}> ({{
  ^bb0(%h0: {V}<[1,8],f32>):
    %zero = "torch.constant.int"() <{{value = 0 : i64}}> : () -> !torch.int
    %one = "torch.constant.int"() <{{value = 1 : i64}}> : () -> !torch.int
    %three = "torch.constant.int"() <{{value = 3 : i64}}> : () -> !torch.int
    %six = "torch.constant.int"() <{{value = 6 : i64}}> : () -> !torch.int
    %m1 = "torch.constant.int"() <{{value = -1 : i64}}> : () -> !torch.int
    %false = "torch.constant.bool"() <{{value = false}}> : () -> !torch.bool
    %true = "torch.constant.bool"() <{{value = true}}> : () -> !torch.bool
    %none = "torch.constant.none"() : () -> !torch.none
    %four = "torch.constant.int"() <{{value = 4 : i64}}> : () -> !torch.int
    %sz = "torch.prim.ListConstruct"(%one) : (!torch.int) -> !torch.list<int>
    %tok0 = "torch.aten.full"(%sz, %four, %four, %none, %none, %false) : (!torch.list<int>, !torch.int, !torch.int, !torch.none, !torch.none, !torch.bool) -> {V}<[1],si64>
    %l0 = "torch.prim.ListConstruct"() : () -> !torch.list<vtensor>
    %res:5 = "scf.while"(%h0, %tok0, %l0, %zero, %true) ({{
    ^bb1(%h: {V}<[1,8],f32>, %tok: {V}<[1],si64>, %toks: !torch.list<vtensor>, %n: !torch.int, %go: !torch.bool):
      %lt = "torch.aten.lt.int"(%n, %six) : (!torch.int, !torch.int) -> !torch.bool
      %both = "torch.aten.__and__.bool"(%lt, %go) : (!torch.bool, !torch.bool) -> !torch.bool
      %c = "torch_c.to_i1"(%both) : (!torch.bool) -> i1
      "scf.condition"(%c, %h, %tok, %toks, %n, %go) : (i1, {V}<[1,8],f32>, {V}<[1],si64>, !torch.list<vtensor>, !torch.int, !torch.bool) -> ()
    }}, {{
    ^bb2(%h: {V}<[1,8],f32>, %tok: {V}<[1],si64>, %toks: !torch.list<vtensor>, %n: !torch.int, %go: !torch.bool):
      %we = "dycl.param"() {{name = "emb.weight"}} : () -> {V}<[10,8],f32>
      %wx = "dycl.param"() {{name = "cell.wx"}} : () -> {V}<[8,8],f32>
      %wh = "dycl.param"() {{name = "cell.wh"}} : () -> {V}<[8,8],f32>
      %wo = "dycl.param"() {{name = "out.weight"}} : () -> {V}<[10,8],f32>{_STEP}
      %toks2 = "torch.aten.append.t"(%toks, %tok2) : (!torch.list<vtensor>, {V}<[1],si64>) -> !torch.list<vtensor>
      %eq = "torch.aten.eq.Scalar"(%tok2, %three) : ({V}<[1],si64>, !torch.int) -> {V}<[1],i1>
      %any = "torch.aten.any"(%eq) : ({V}<[1],i1>) -> {V}<[],i1>
      %stop = "torch.aten.Bool.Tensor"(%any) : ({V}<[],i1>) -> !torch.bool
      %go2 = "torch.aten.__not__"(%stop) : (!torch.bool) -> !torch.bool
      %n2 = "torch.aten.add.int"(%n, %one) : (!torch.int, !torch.int) -> !torch.int
      "scf.yield"(%h2, %tok2, %toks2, %n2, %go2) : ({V}<[1,8],f32>, {V}<[1],si64>, !torch.list<vtensor>, !torch.int, !torch.bool) -> ()
    }}) : ({V}<[1,8],f32>, {V}<[1],si64>, !torch.list<vtensor>, !torch.int, !torch.bool) -> ({V}<[1,8],f32>, {V}<[1],si64>, !torch.list<vtensor>, !torch.int, !torch.bool)
    %seq = "torch.aten.stack"(%res#2, %one) : (!torch.list<vtensor>, !torch.int) -> {V}<[1,?],si64>
    "func.return"(%seq, %res#3) : ({V}<[1,?],si64>, !torch.int) -> ()
  }}) : () -> ()
}}) : () -> ()
"""

SAMPLES = {"early_exit_widths": EARLY_EXIT_WIDTHS, "decode": DECODE}
