"""Q1c: which hand-built fx form of a cond exports to ONNX?
A: target=torch.ops.higher_order.cond, arm GraphModules own their weights (get_attr inside arm)
B: target=torch.cond (public API),       arm GraphModules own their weights
C: target=torch.ops.higher_order.cond, weights lifted: root get_attr's them and passes them as
   cond operands; arms hold only placeholders (the form torch.export itself produces)
D: like C, target=torch.cond"""
import warnings, logging, io, contextlib, operator, sys
import numpy as np, torch, torch.fx, onnxruntime as ort
warnings.simplefilter("ignore"); logging.getLogger("torch.onnx").setLevel(logging.ERROR)
torch.manual_seed(0)
aten = torch.ops.aten
D, N = 64, 8
W = {f"b{k}_w": torch.randn(D, D) * 0.2 for k in range(N)}
W.update({f"b{k}_b": torch.randn(D) * 0.1 for k in range(N)})
W.update({f"g{k}_w": torch.randn(1, D) * 0.3 for k in range(N)})
W.update({f"g{k}_b": torch.zeros(1) for k in range(N)})

def linear(g, x, w, b, relu):
    y = g.call_function(aten.addmm.default, (b, x, g.call_function(aten.t.default, (w,))))
    return g.call_function(aten.relu.default, (y,)) if relu else y

def arm(k, then, lifted):
    g = torch.fx.Graph(); m = torch.nn.Module()
    x = g.placeholder("x")
    if lifted:
        w, b = g.placeholder("w"), g.placeholder("b")
    else:
        m.register_buffer("w", W[f"b{k}_w"]); m.register_buffer("b", W[f"b{k}_b"])
        w, b = g.get_attr("w"), g.get_attr("b")
    y = linear(g, x, w, b, True) if then else g.call_function(aten.clone.default, (x,))
    g.output((y,))
    return torch.fx.GraphModule(m, g, class_name=f"arm{k}{'t' if then else 'f'}")

def build(target, lifted):
    root = torch.nn.Module(); g = torch.fx.Graph()
    for name, v in W.items(): root.register_buffer(name, v)
    x = g.placeholder("in0")
    for k in range(N):
        logit = linear(g, x, g.get_attr(f"g{k}_w"), g.get_attr(f"g{k}_b"), False)
        pred = g.call_function(aten.gt.Scalar, (g.call_function(aten.mean.default, (g.call_function(aten.sigmoid.default, (logit,)),)), 0.5))
        root.add_module(f"cond{k}_true", arm(k, True, lifted)); root.add_module(f"cond{k}_false", arm(k, False, lifted))
        ops = (x, g.get_attr(f"b{k}_w"), g.get_attr(f"b{k}_b")) if lifted else (x,)
        node = g.call_function(target, (pred, g.get_attr(f"cond{k}_true"), g.get_attr(f"cond{k}_false"), ops))
        x = g.call_function(operator.getitem, (node, 0))
    g.output((x,))
    return torch.fx.GraphModule(root, g, class_name="subdnn_0")

def reference(x):
    path = []
    for k in range(N):
        d = bool(torch.sigmoid(x @ W[f"g{k}_w"].T + W[f"g{k}_b"]).mean() > 0.5); path.append(d)
        if d: x = torch.relu(x @ W[f"b{k}_w"].T + W[f"b{k}_b"])
    return x, tuple(path)

if __name__ == "__main__":
    for label, target, lifted in [("A", torch.ops.higher_order.cond, False), ("B", torch.cond, False),
                                  ("C", torch.ops.higher_order.cond, True), ("D", torch.cond, True)]:
        print(f"=== {label}: target={getattr(target,'__name__',target)}, lifted={lifted}")
        gm = build(target, lifted)
        try:
            with torch.no_grad():
                ep = torch.export.export(gm, (torch.randn(1, D),), strict=False)
            print("  torch.export ok;", sum(n.target is torch.ops.higher_order.cond for n in ep.graph.nodes), "cond nodes;",
                  "arm0 graph ops:", [n.op for n in ep.graph_module.true_graph_0.graph.nodes])
            with contextlib.redirect_stdout(io.StringIO()):
                mp = torch.onnx.export(ep, (), dynamo=True, verbose=False).model_proto
            print("  ONNX:", [n.op_type for n in mp.graph.node].count("If"), "If of", len(mp.graph.node), "top-level nodes")
            sess = ort.InferenceSession(mp.SerializeToString(), providers=["CPUExecutionProvider"])
            name = sess.get_inputs()[0].name
            err, paths = 0.0, set()
            for _ in range(200):
                xi = torch.randn(1, D) * 2
                want, p = reference(xi); paths.add(p)
                err = max(err, float(np.abs(sess.run(None, {name: xi.numpy()})[0] - want.numpy()).max()))
            print(f"  ORT: {len(paths)} distinct paths, max |ort - ref| = {err:.2e}")
        except Exception as e:
            lines = [l for l in str(e).splitlines() if "Error" in l or "error" in l]
            print("  FAILED:", type(e).__name__, "|", (lines[-1] if lines else str(e).splitlines()[0])[:300])
