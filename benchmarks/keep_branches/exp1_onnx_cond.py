"""Q1: torch.cond -> torch.onnx.export(dynamo=True) -> ONNX If -> onnxruntime."""
import warnings, logging, sys, io, contextlib
import numpy as np, torch, onnxruntime as ort
warnings.simplefilter("ignore"); logging.getLogger("torch.onnx").setLevel(logging.ERROR)
torch.manual_seed(0)

class Block(torch.nn.Module):
    def __init__(s, d): super().__init__(); s.lin = torch.nn.Linear(d, d)
    def forward(s, x): return torch.relu(s.lin(x))

class Gate(torch.nn.Module):
    def __init__(s, d): super().__init__(); s.lin = torch.nn.Linear(d, 1)
    def forward(s, x): return torch.sigmoid(s.lin(x)).mean()  # 0-d

class Gated(torch.nn.Module):
    def __init__(s, d=64, n=1):
        super().__init__()
        s.blocks = torch.nn.ModuleList(Block(d) for _ in range(n))
        s.gates = torch.nn.ModuleList(Gate(d) for _ in range(n))
    def forward(s, x):
        for g, b in zip(s.gates, s.blocks):
            pred = g(x) > 0.5                      # 0-d bool tensor, computed in graph
            x = torch.cond(pred, lambda x, b=b: b(x), lambda x: x.clone(), (x,))
        return x

class Eager(Gated):  # reference with python branching
    def forward(s, x):
        for g, b in zip(s.gates, s.blocks):
            if g(x) > 0.5: x = b(x)
        return x

def export(m, x):
    with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):
        return torch.onnx.export(m, (x,), dynamo=True, verbose=False)

def op_types(graph, depth=0):
    out = []
    for n in graph.node:
        out.append(("  " * depth) + n.op_type)
        for a in n.attribute:
            if a.g is not None and a.g.node:
                out.append(("  " * depth) + f"  [{a.name}] " + ",".join(x.op_type for x in a.g.node))
    return out

def check(n):
    m = Gated(64, n).eval(); ref = Eager(64, n).eval(); ref.load_state_dict(m.state_dict())
    x = torch.randn(1, 64)
    prog = export(m, x)
    mp = prog.model_proto
    top = [nd.op_type for nd in mp.graph.node]
    print(f"--- n={n}: top-level ops: {top.count('If')} If of {len(top)} nodes; opset", mp.opset_import[0].version)
    if n == 1: print("\n".join(op_types(mp.graph)))
    sess = ort.InferenceSession(mp.SerializeToString(), providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    taken = set(); maxerr = 0.0
    # simpler: test branch coverage by picking inputs whose gate values differ
    results = []
    for bias in (-5.0, 5.0, 0.0):
        for g in m.gates: g.lin.bias.data.fill_(bias)
        ref.load_state_dict(m.state_dict())
        mp = export(m, x).model_proto
        sess = ort.InferenceSession(mp.SerializeToString(), providers=["CPUExecutionProvider"])
        for _ in range(20):
            xi = torch.randn(1, 64) * 3
            with torch.no_grad():
                want = ref(xi).numpy()
                path = tuple(bool(g(xx) > 0.5) for g, xx in [(m.gates[0], xi)])
            got = sess.run(None, {name: xi.numpy()})[0]
            maxerr = max(maxerr, float(np.abs(got - want).max()))
            with torch.no_grad():
                # full path of gate decisions
                p, xx = [], xi
                for g, b in zip(m.gates, m.blocks):
                    d = bool(g(xx) > 0.5); p.append(d); xx = b(xx) if d else xx
            taken.add(tuple(p))
    print(f"n={n}: distinct paths exercised {len(taken)}; "
          f"first-gate values seen {sorted({p[0] for p in taken})}; max |ort - eager| = {maxerr:.2e}")

check(1)
check(8)
