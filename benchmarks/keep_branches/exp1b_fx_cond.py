"""Q1b: build a torch.fx graph by hand (as fx_rebuild does) containing a
torch.ops.higher_order.cond node whose branches are get_attr'd GraphModules; then
torch.export.export(strict=False) -> torch.onnx export -> ORT."""
import warnings, logging, io, contextlib, operator
import numpy as np, torch, torch.fx, onnxruntime as ort
warnings.simplefilter("ignore"); logging.getLogger("torch.onnx").setLevel(logging.ERROR)
torch.manual_seed(0)
aten = torch.ops.aten
D, N = 64, 8
W = {f"b{k}_w": torch.randn(D, D) * 0.2 for k in range(N)}
W.update({f"b{k}_b": torch.randn(D) * 0.1 for k in range(N)})
W.update({f"g{k}_w": torch.randn(1, D) * 0.3 for k in range(N)})
W.update({f"g{k}_b": torch.zeros(1) for k in range(N)})

def arm_module(root_buffers, k, then):
    """One scf.if arm as its own GraphModule: args = live-ins, returns a tuple."""
    g = torch.fx.Graph(); m = torch.nn.Module()
    x = g.placeholder("x")
    if then:
        m.register_buffer("w", root_buffers[f"b{k}_w"]); m.register_buffer("b", root_buffers[f"b{k}_b"])
        y = g.call_function(aten.relu.default, (g.call_function(aten.addmm.default, (g.get_attr("b"), x, g.call_function(aten.t.default, (g.get_attr("w"),)))),))
    else:
        y = g.call_function(aten.clone.default, (x,))   # identity arm (see 'alias' variant)
    g.output((y,))
    return torch.fx.GraphModule(m, g, class_name=f"arm{k}{'t' if then else 'f'}")

def build(identity_arm="clone"):
    root = torch.nn.Module(); g = torch.fx.Graph()
    x = g.placeholder("in0")
    for k in range(N):
        for nm in ("g%d_w" % k, "g%d_b" % k): root.register_buffer(nm, W[nm])
        logit = g.call_function(aten.addmm.default, (g.get_attr(f"g{k}_b"), x, g.call_function(aten.t.default, (g.get_attr(f"g{k}_w"),))))
        p = g.call_function(aten.mean.default, (g.call_function(aten.sigmoid.default, (logit,)),))
        pred = g.call_function(aten.gt.Scalar, (p, 0.5))               # 0-d bool
        t_arm, f_arm = arm_module(W, k, True), arm_module(W, k, False)
        if identity_arm == "alias":
            fg = torch.fx.Graph(); xx = fg.placeholder("x"); fg.output((xx,))
            f_arm = torch.fx.GraphModule(torch.nn.Module(), fg)
        root.add_module(f"cond{k}_true", t_arm); root.add_module(f"cond{k}_false", f_arm)
        node = g.call_function(torch.ops.higher_order.cond,
                               (pred, g.get_attr(f"cond{k}_true"), g.get_attr(f"cond{k}_false"), (x,)))
        x = g.call_function(operator.getitem, (node, 0))
    g.output((x,))
    return torch.fx.GraphModule(root, g, class_name="subdnn_0")

def reference(x):
    for k in range(N):
        p = torch.sigmoid(x @ W[f"g{k}_w"].T + W[f"g{k}_b"]).mean()
        if p > 0.5: x = torch.relu(x @ W[f"b{k}_w"].T + W[f"b{k}_b"])
    return x

for variant in ("clone", "alias"):
    print(f"=== false arm = {variant}")
    gm = build(variant)
    x = torch.randn(1, D)
    try:
        with torch.no_grad():
            ep = torch.export.export(gm, (x,), strict=False)
        print("torch.export ok; cond nodes:", sum(n.target is torch.ops.higher_order.cond for n in ep.graph.nodes))
        with contextlib.redirect_stdout(io.StringIO()):
            onnx_prog = torch.onnx.export(ep, (), dynamo=True, verbose=False)
        mp = onnx_prog.model_proto
        print("ONNX top-level:", [n.op_type for n in mp.graph.node].count("If"), "If of", len(mp.graph.node))
        sess = ort.InferenceSession(mp.SerializeToString(), providers=["CPUExecutionProvider"])
        name = sess.get_inputs()[0].name
        err, paths = 0.0, set()
        for _ in range(200):
            xi = torch.randn(1, D) * 2
            want = reference(xi)
            err = max(err, float(np.abs(sess.run(None, {name: xi.numpy()})[0] - want.numpy()).max()))
            # also the eager fx module itself
            err = max(err, float((gm(xi)[0] - want).abs().max()))
            xx, p = xi, []
            for k in range(N):
                d = bool(torch.sigmoid(xx @ W[f"g{k}_w"].T + W[f"g{k}_b"]).mean() > 0.5); p.append(d)
                if d: xx = torch.relu(xx @ W[f"b{k}_w"].T + W[f"b{k}_b"])
            paths.add(tuple(p))
        print(f"paths {len(paths)}, max err {err:.2e}")
    except Exception as e:
        print("FAILED:", type(e).__name__, "\n".join(l for l in str(e).splitlines() if "Error" in l or "error" in l)[-1500:]); import traceback; traceback.print_exc(limit=-3) if variant=="clone" else None
