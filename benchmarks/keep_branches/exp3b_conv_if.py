"""Q3b: why is the conv If chain slower than the split at 1 thread? Inspect what ORT's
optimizer makes of the top level vs the If subgraphs, per optimization level, and time
ifs / split / gated-oracle per level (1 thread, interleaved)."""
import sys, io, random, time, statistics, warnings, logging, contextlib, tempfile, os
import numpy as np, torch, onnx, onnxruntime as ort
warnings.simplefilter("ignore"); logging.getLogger("torch.onnx").setLevel(logging.ERROR)
sys.argv = ["x", "conv"]
torch.manual_seed(0); random.seed(0)
N = 8; SHAPE = (1, 16, 32, 32)
blocks = [torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU()).eval() for _ in range(N)]
class Gate(torch.nn.Module):
    def __init__(s): super().__init__(); s.lin = torch.nn.Linear(16, 1)
    def forward(s, x): return torch.sigmoid(s.lin(x.mean(dim=(2, 3)))).mean() > 0.5
gates = [Gate().eval() for _ in range(N)]
for k, g in enumerate(gates): g.lin.weight.data.mul_(0.01); g.lin.bias.data.fill_(5.0 if k % 2 == 0 else -5.0)
class Ifs(torch.nn.Module):
    def __init__(s): super().__init__(); s.b = torch.nn.ModuleList(blocks); s.g = torch.nn.ModuleList(gates)
    def forward(s, x):
        for g, b in zip(s.g, s.b): x = torch.cond(g(x), lambda x, b=b: b(x), lambda x: x.clone(), (x,))
        return x
class GatedPath(torch.nn.Module):
    def __init__(s): super().__init__(); s.b = torch.nn.ModuleList(blocks); s.g = torch.nn.ModuleList(gates)
    def forward(s, x):
        f = []
        for k, (g, b) in enumerate(zip(s.g, s.b)):
            f.append(g(x))
            if k % 2 == 0: x = b(x)
        return x, torch.stack(f)
def onnx_model(m):
    with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):
        return torch.onnx.export(m, (torch.randn(SHAPE),), dynamo=True, verbose=False).model_proto.SerializeToString()
LEVELS = {"ALL": ort.GraphOptimizationLevel.ORT_ENABLE_ALL, "EXTENDED": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED}
def session(model, level, dump=None):
    o = ort.SessionOptions(); o.intra_op_num_threads = 1; o.inter_op_num_threads = 1
    o.add_session_config_entry("session.intra_op.allow_spinning", "0")
    o.graph_optimization_level = LEVELS[level]; o.log_severity_level = 3
    if dump: o.optimized_model_filepath = dump
    s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
    n, outs = s.get_inputs()[0].name, [x.name for x in s.get_outputs()]
    r = s._sess.run
    return lambda a: r(outs, {n: a}, None)

m_ifs, m_gp = onnx_model(Ifs()), onnx_model(GatedPath())
m_g = [onnx_model(g) for g in gates]; m_b = [onnx_model(b) for b in blocks]
tmp = tempfile.mkdtemp()
for level in LEVELS:
    p = os.path.join(tmp, f"ifs_{level}.onnx"); session(m_ifs, level, p)
    g = onnx.load(p).graph
    top = [n.op_type for n in g.node]
    sub = [[(a.name, [n.op_type for n in a.g.node]) for a in n.attribute if a.type == onnx.AttributeProto.GRAPH] for n in g.node if n.op_type == "If"][0]
    p2 = os.path.join(tmp, f"blk_{level}.onnx"); session(m_b[0], level, p2)
    print(f"{level}: top level of ifs ({len(top)} nodes): {sorted(set(top))}\n   If #0 arms: {sub}\n   lone block session: {[n.op_type for n in onnx.load(p2).graph.node]}")

variants = {}
for level in LEVELS:
    ifs = session(m_ifs, level); gp = session(m_gp, level)
    gs = [session(m, level) for m in m_g]; bs = [session(m, level) for m in m_b]
    def split(x, gs=gs, bs=bs):
        for g, b in zip(gs, bs):
            if g(x)[0]: x = b(x)[0]
        return x
    variants[f"ifs/{level}"] = lambda x, f=ifs: f(x)[0]
    variants[f"split/{level}"] = split
    variants[f"gated-oracle/{level}"] = lambda x, f=gp: f(x)[0]
x = np.random.randn(*SHAPE).astype(np.float32)
ref = variants["split/ALL"](x)
for k, f in variants.items(): assert np.abs(f(x) - ref).max() < 1e-4, k
times = {k: [] for k in variants}; names = list(variants)
for r in range(100):
    random.shuffle(names)
    for k in names:
        t = time.perf_counter()
        for _ in range(5): variants[k](x)
        times[k].append((time.perf_counter() - t) / 5 * 1e6)
print("median us / inference, 1 thread, path alt (4 of 8 blocks):")
for k in variants: print(f"  {k:22s} {statistics.median(times[k]):7.1f}")
