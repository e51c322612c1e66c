"""Q1d: an arm that yields its operand unchanged (scf.yield %x), and an arm with two
results, in the lifted form C."""
import warnings, logging, io, contextlib, operator
import numpy as np, torch, torch.fx, onnxruntime as ort
warnings.simplefilter("ignore"); logging.getLogger("torch.onnx").setLevel(logging.ERROR)
from exp1c_fx_variants import W, D, N, aten, linear, reference

def build(identity):
    root = torch.nn.Module(); g = torch.fx.Graph()
    for name, v in W.items(): root.register_buffer(name, v)
    x = g.placeholder("in0")
    for k in range(N):
        logit = linear(g, x, g.get_attr(f"g{k}_w"), g.get_attr(f"g{k}_b"), False)
        pred = g.call_function(aten.gt.Scalar, (g.call_function(aten.mean.default, (g.call_function(aten.sigmoid.default, (logit,)),)), 0.5))
        tg = torch.fx.Graph(); a, w, b = (tg.placeholder(n) for n in "xwb"); tg.output((linear(tg, a, w, b, True),))
        fg = torch.fx.Graph(); a, w, b = (fg.placeholder(n) for n in "xwb")
        fg.output(((a if identity == "alias" else fg.call_function(aten.clone.default, (a,))),))
        root.add_module(f"t{k}", torch.fx.GraphModule(torch.nn.Module(), tg)); root.add_module(f"f{k}", torch.fx.GraphModule(torch.nn.Module(), fg))
        node = g.call_function(torch.ops.higher_order.cond, (pred, g.get_attr(f"t{k}"), g.get_attr(f"f{k}"), (x, g.get_attr(f"b{k}_w"), g.get_attr(f"b{k}_b"))))
        x = g.call_function(operator.getitem, (node, 0))
    g.output((x,))
    return torch.fx.GraphModule(root, g)

for identity in ("alias", "clone"):
    try:
        with torch.no_grad():
            ep = torch.export.export(build(identity), (torch.randn(1, D),), strict=False)
        with contextlib.redirect_stdout(io.StringIO()):
            mp = torch.onnx.export(ep, (), dynamo=True, verbose=False).model_proto
        s = ort.InferenceSession(mp.SerializeToString(), providers=["CPUExecutionProvider"])
        err = max(float(np.abs(s.run(None, {s.get_inputs()[0].name: xi.numpy()})[0] - reference(xi)[0].numpy()).max())
                  for xi in (torch.randn(1, D) * 2 for _ in range(100)))
        print(f"{identity}: ok, {[n.op_type for n in mp.graph.node].count('If')} If, branches:",
              {a.name: [n.op_type for n in a.g.node] for a in [nd for nd in mp.graph.node if nd.op_type == 'If'][0].attribute}, f"max err {err:.1e}")
    except Exception as e:
        lines = [l for l in str(e).splitlines() if "Error" in l or "error" in l][-1:]
        print(f"{identity}: FAILED {type(e).__name__}: {lines[0][:300]}")
