"""Q3d: hypothesis: ORT's NCHWc layout transformer skips the If arms' Convs because their
weights are outer-scope initializers (not constants of the subgraph). Move every
initializer that only one If arm reads into that arm's own initializer list, then compare."""
import io, random, time, statistics, warnings, logging, contextlib, tempfile, os
import numpy as np, torch, onnx, onnxruntime as ort
warnings.simplefilter("ignore"); logging.getLogger("torch.onnx").setLevel(logging.ERROR)
import exp3b_conv_if as b   # builds models + prints its own table (import runs it once)

def sink_initializers(model_bytes):
    m = onnx.load_from_string(model_bytes)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    def reads(graph):  # names read anywhere in a graph (incl. nested)
        out = set()
        for n in graph.node:
            out.update(n.input)
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH: out |= reads(a.g)
        return out
    top_reads = {x for n in g.node for x in n.input} | {o.name for o in g.output}
    readers = {}
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                for name in reads(a.g) & inits.keys():
                    readers.setdefault(name, []).append(a.g)
    moved = 0
    for name, graphs in readers.items():
        if name in top_reads or len(graphs) != 1: continue
        graphs[0].initializer.append(inits[name]); g.initializer.remove(inits[name]); moved += 1
    return m.SerializeToString(), moved

sunk, moved = sink_initializers(b.m_ifs)
print("moved", moved, "initializers into If arms")
tmp = tempfile.mkdtemp(); p = os.path.join(tmp, "x.onnx"); b.session(sunk, "ALL", p)
g = onnx.load(p).graph
print("ALL, sunk: If #0 arms:", [[(a.name, [n.op_type for n in a.g.node]) for a in n.attribute if a.type == 5] for n in g.node if n.op_type == "If"][0])
variants = {"ifs/ALL": b.session(b.m_ifs, "ALL"), "ifs-sunk/ALL": b.session(sunk, "ALL"), "gated-oracle/ALL": b.session(b.m_gp, "ALL")}
gs = [b.session(m, "ALL") for m in b.m_g]; bs = [b.session(m, "ALL") for m in b.m_b]
def split(x):
    for gg, bb in zip(gs, bs):
        if gg(x)[0]: x = bb(x)[0]
    return [x]
variants["split/ALL"] = split
x = np.random.randn(*b.SHAPE).astype(np.float32)
for k, f in variants.items(): assert np.abs(f(x)[0] - split(x)[0]).max() < 1e-4, k
times = {k: [] for k in variants}; names = list(variants)
for r in range(100):
    random.shuffle(names)
    for k in names:
        t = time.perf_counter()
        for _ in range(5): variants[k](x)
        times[k].append((time.perf_counter() - t) / 5 * 1e6)
print("median us / inference, 1 thread, conv, path alt:")
for k in variants: print(f"  {k:22s} {statistics.median(times[k]):7.1f}")
