"""Q3: per-inference cost of an 8-gate SkipNet-like chain on ONNX Runtime.
(a) ifs:    one session, 8 ONNX If (torch.cond export)
(b) split:  DyCL-style: 8 gate sessions + 8 block sessions, branch decided in Python,
            numpy in/out, the C++ session's run (as dycl/runtime/runners.py's _fast_run)
(c) oracle: one session, the path's blocks only (no gates)
Paths fixed by the gate biases (decision independent of the input): 'alt' = T,F,T,F,...
(4 of 8 blocks run), 'all' = every block runs. Sessions as DyCL's runtime makes them
(per-session pool, spinning off, ORT_ENABLE_ALL), intra_op_num_threads 1 and 2.
Timing: rounds interleave all variants in shuffled order; each round times `inner`
inferences; we report the median over rounds of the per-inference time."""
import sys, io, time, random, warnings, logging, contextlib, statistics
import numpy as np, torch, onnxruntime as ort
warnings.simplefilter("ignore"); logging.getLogger("torch.onnx").setLevel(logging.ERROR)
torch.manual_seed(0); random.seed(0)
KIND = sys.argv[1] if len(sys.argv) > 1 else "linear"
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 150
N = 8

if KIND == "linear":
    SHAPE = (1, 64)
    def make_block(): return torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU())
    class Gate(torch.nn.Module):
        def __init__(s): super().__init__(); s.lin = torch.nn.Linear(64, 1)
        def forward(s, x): return torch.sigmoid(s.lin(x)).mean() > 0.5
else:
    SHAPE = (1, 16, 32, 32)
    def make_block(): return torch.nn.Sequential(torch.nn.Conv2d(16, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU())
    class Gate(torch.nn.Module):
        def __init__(s): super().__init__(); s.lin = torch.nn.Linear(16, 1)
        def forward(s, x): return torch.sigmoid(s.lin(x.mean(dim=(2, 3)))).mean() > 0.5

blocks = [make_block().eval() for _ in range(N)]
gates = [Gate().eval() for _ in range(N)]
for g in gates: g.lin.weight.data.mul_(0.01)

class Ifs(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.blocks = torch.nn.ModuleList(blocks); s.gates = torch.nn.ModuleList(gates)
    def forward(s, x):
        for g, b in zip(s.gates, s.blocks):
            x = torch.cond(g(x), lambda x, b=b: b(x), lambda x: x.clone(), (x,))
        return x

class Path(torch.nn.Module):
    def __init__(s, taken):
        super().__init__(); s.blocks = torch.nn.ModuleList(b for b, t in zip(blocks, taken) if t)
    def forward(s, x):
        for b in s.blocks: x = b(x)
        return x

class GatedPath(torch.nn.Module):
    """The oracle path, but every gate still evaluated (its flags are extra outputs, so
    nothing prunes them): the floor for any program that must decide the path."""
    def __init__(s, taken):
        super().__init__(); s.taken = taken
        s.blocks = torch.nn.ModuleList(blocks); s.gates = torch.nn.ModuleList(gates)
    def forward(s, x):
        flags = []
        for g, b, t in zip(s.gates, s.blocks, s.taken):
            flags.append(g(x))
            if t: x = b(x)
        return x, torch.stack(flags)

def onnx_bytes(module):
    x = torch.randn(SHAPE)
    with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):
        return torch.onnx.export(module, (x,), dynamo=True, verbose=False).model_proto.SerializeToString()

def session(model, threads):
    o = ort.SessionOptions()
    o.intra_op_num_threads = threads; o.inter_op_num_threads = 1
    o.add_session_config_entry("session.intra_op.allow_spinning", "0")
    o.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    o.log_severity_level = 3
    s = ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
    name, outs = s.get_inputs()[0].name, [o.name for o in s.get_outputs()]
    native = s._sess.run
    return lambda a: native(outs, {name: a}, None)

t0 = time.time()
m_ifs = onnx_bytes(Ifs().eval())
m_gates = [onnx_bytes(g) for g in gates]
m_blocks = [onnx_bytes(b) for b in blocks]
_top = [n.op_type for n in __import__("onnx").load_from_string(m_ifs).graph.node]
print(f"[{KIND}] exported in {time.time()-t0:.1f}s; (a) has {_top.count('If')} If among {len(_top)} top-level nodes", flush=True)

paths = {"alt": [k % 2 == 0 for k in range(N)], "all": [True] * N}
variants = {}
for threads in (1, 2):
    ifs = session(m_ifs, threads)
    gs = [session(m, threads) for m in m_gates]
    bs = [session(m, threads) for m in m_blocks]
    def split(x, gs=gs, bs=bs):
        for g, b in zip(gs, bs):
            if g(x)[0]:
                x = b(x)[0]
        return x
    variants[f"ifs/t{threads}"] = lambda x, f=ifs: f(x)[0]
    variants[f"split/t{threads}"] = split
    for pname, taken in paths.items():
        variants[f"oracle-{pname}/t{threads}"] = (lambda x, f=session(onnx_bytes(Path(taken).eval()), threads): f(x)[0])

for pname, taken in paths.items():
    for g, t in zip(gates, taken): g.lin.bias.data.fill_(5.0 if t else -5.0)
    # the gate biases are weights: rebuild (a) and (b) for this path
    m_ifs = onnx_bytes(Ifs().eval()); m_gates = [onnx_bytes(g) for g in gates]
    m_gp = onnx_bytes(GatedPath(taken).eval())
    for threads in (1, 2):
        variants[f"gated-oracle-{pname}/t{threads}"] = (lambda x, f=session(m_gp, threads): f(x)[0])
        ifs = session(m_ifs, threads); gs = [session(m, threads) for m in m_gates]
        bs = [session(m, threads) for m in m_blocks]
        def split(x, gs=gs, bs=bs):
            for g, b in zip(gs, bs):
                if g(x)[0]:
                    x = b(x)[0]
            return x
        variants[f"ifs-{pname}/t{threads}"] = lambda x, f=ifs: f(x)[0]
        variants[f"split-{pname}/t{threads}"] = split
    # correctness: all three agree with eager on this path
    x = np.random.randn(*SHAPE).astype(np.float32)
    with torch.no_grad(): want = Path(taken).eval()(torch.from_numpy(x)).numpy()
    for t in (1, 2):
        for v in ("ifs", "split", "oracle", "gated-oracle"):
            got = variants[f"{v}-{pname}/t{t}"](x)
            assert np.abs(got - want).max() < 1e-4, (v, pname, t, np.abs(got - want).max())
for k in [k for k in variants if k.startswith(("ifs/", "split/"))]: del variants[k]
print(f"correct on both paths; setup {time.time()-t0:.1f}s; timing {len(variants)} variants x {ROUNDS} rounds", flush=True)

x = np.random.randn(*SHAPE).astype(np.float32)
inner = 20 if KIND == "linear" else 5
for f in variants.values():
    for _ in range(20): f(x)
times = {k: [] for k in variants}
names = list(variants)
for r in range(ROUNDS):
    random.shuffle(names)
    for k in names:
        f = variants[k]
        t = time.perf_counter()
        for _ in range(inner): f(x)
        times[k].append((time.perf_counter() - t) / inner * 1e6)

print(f"\n[{KIND}] input {SHAPE}, median us per inference (IQR), {ROUNDS} rounds x {inner}")
for pname in paths:
    for t in (1, 2):
        med = {v: statistics.median(times[f"{v}-{pname}/t{t}"]) for v in ("ifs", "split", "gated-oracle", "oracle")}
        q = {v: statistics.quantiles(times[f"{v}-{pname}/t{t}"], n=4) for v in med}
        calls = N + sum(paths[pname])
        print(f"path={pname:3s} threads={t}: " + "  ".join(f"{v} {med[v]:.1f} ({q[v][0]:.0f}-{q[v][2]:.0f})" for v in med) + "\n   "
              + f" | ifs/oracle {med['ifs']/med['oracle']:.2f}  split/oracle {med['split']/med['oracle']:.2f}"
              + f"  ifs/gated-oracle {med['ifs']/med['gated-oracle']:.2f}  split/ifs {med['split']/med['ifs']:.2f}  split extra per call {(med['split']-med['oracle'])/calls:.1f}us ({calls} calls)")
