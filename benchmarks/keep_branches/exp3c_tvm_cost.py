"""Q3c (TVM, rough): 8-gate linear chain, one Relax VM with 8 R.If vs 16 VMs split vs oracle.
TVM_NUM_THREADS=1. Path alt (4 of 8 blocks). Interleaved rounds, medians."""
import os, random, time, statistics, warnings, operator
os.environ.setdefault("TVM_NUM_THREADS", "1")
import numpy as np, torch, torch.fx
warnings.simplefilter("ignore")
import tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program
from exp1c_fx_variants import build, W, D, N, aten, linear
for k in range(N): W[f"g{k}_b"].fill_(5.0 if k % 2 == 0 else -5.0); W[f"g{k}_w"].mul_(0.01)
target = tvm.target.Target({"kind": "llvm", "num-cores": 1})
def vm_of(module, *shapes):
    with torch.no_grad():
        ep = torch.export.export(module, tuple(torch.randn(s) for s in shapes), strict=False)
    ex = tvm.compile(from_exported_program(ep, keep_params_as_input=False), target=target)
    f = relax.VirtualMachine(ex, tvm.cpu())["main"]
    return f
class Gate(torch.nn.Module):
    def __init__(s, k): super().__init__(); s.k = k
    def forward(s, x): return torch.sigmoid(x @ W[f"g{s.k}_w"].T + W[f"g{s.k}_b"]).mean() > 0.5
class Blk(torch.nn.Module):
    def __init__(s, k): super().__init__(); s.k = k
    def forward(s, x): return torch.relu(x @ W[f"b{s.k}_w"].T + W[f"b{s.k}_b"])
class Path(torch.nn.Module):
    def forward(s, x):
        for k in range(0, N, 2): x = torch.relu(x @ W[f"b{k}_w"].T + W[f"b{k}_b"])
        return x
ifs = vm_of(build(torch.ops.higher_order.cond, True), (1, D))
gs = [vm_of(Gate(k), (1, D)) for k in range(N)]; bs = [vm_of(Blk(k), (1, D)) for k in range(N)]
orc = vm_of(Path(), (1, D))
T = tvm.runtime.tensor if hasattr(tvm.runtime, "tensor") else tvm.nd.array
def split(x):
    for g, b in zip(gs, bs):
        if g(x)[0].numpy(): x = b(x)[0]
    return x
variants = {"ifs": lambda x: ifs(x)[0], "split": split, "oracle": lambda x: orc(x)[0]}
x = T(np.random.randn(1, D).astype(np.float32))
ref = variants["oracle"](x).numpy()
for k, f in variants.items(): assert np.abs(f(x).numpy() - ref).max() < 1e-4, k
times = {k: [] for k in variants}; names = list(variants)
for r in range(150):
    random.shuffle(names)
    for k in names:
        t = time.perf_counter()
        for _ in range(20): variants[k](x)
        times[k].append((time.perf_counter() - t) / 20 * 1e6)
med = {k: statistics.median(v) for k, v in times.items()}
print("TVM linear, 1 thread, path alt, median us/inference:", {k: round(v, 1) for k, v in med.items()},
      f"| ifs/oracle {med['ifs']/med['oracle']:.2f} split/oracle {med['split']/med['oracle']:.2f} split/ifs {med['split']/med['ifs']:.2f}")
