"""Q2b: compile the Relax module with torch.cond (-> R.If) and run it on both branch values."""
import warnings, operator, re, time, numpy as np, torch, torch.fx
warnings.simplefilter("ignore")
import tvm
from tvm import relax
from tvm.relax.frontend.torch import from_exported_program
from exp1c_fx_variants import build, reference, W, D, N, aten, linear

def build_alias():  # form C, but the false arm yields its operand itself (no clone)
    root = torch.nn.Module(); g = torch.fx.Graph()
    for name, v in W.items(): root.register_buffer(name, v)
    x = g.placeholder("in0")
    for k in range(N):
        logit = linear(g, x, g.get_attr(f"g{k}_w"), g.get_attr(f"g{k}_b"), False)
        pred = g.call_function(aten.gt.Scalar, (g.call_function(aten.mean.default, (g.call_function(aten.sigmoid.default, (logit,)),)), 0.5))
        tg = torch.fx.Graph(); a, w, b = (tg.placeholder(n) for n in "xwb"); tg.output((linear(tg, a, w, b, True),))
        fg = torch.fx.Graph(); a, w, b = (fg.placeholder(n) for n in "xwb"); fg.output((a,))
        root.add_module(f"t{k}", torch.fx.GraphModule(torch.nn.Module(), tg)); root.add_module(f"f{k}", torch.fx.GraphModule(torch.nn.Module(), fg))
        node = g.call_function(torch.ops.higher_order.cond, (pred, g.get_attr(f"t{k}"), g.get_attr(f"f{k}"), (x, g.get_attr(f"b{k}_w"), g.get_attr(f"b{k}_b"))))
        x = g.call_function(operator.getitem, (node, 0))
    g.output((x,))
    return torch.fx.GraphModule(root, g)

target = tvm.target.Target({"kind": "llvm", "num-cores": 2})
for label, gm in [("form C (clone arm)", build(torch.ops.higher_order.cond, True)), ("alias arm", build_alias())]:
    try:
        with torch.no_grad():
            ep = torch.export.export(gm, (torch.randn(1, D),), strict=False)
        mod = from_exported_program(ep, keep_params_as_input=False)
        main = mod["main"].script()
        print(f"=== {label}: imported; 'R.If'/'if ' in main: {main.count('if ')}, private branch functions:",
              sum(1 for gv in mod.functions if 'branch' in gv.name_hint))
        t0 = time.time(); ex = tvm.compile(mod, target=target); print(f"  compiled in {time.time()-t0:.1f}s")
        vm = relax.VirtualMachine(ex, tvm.cpu()); fn = vm["main"]
        err, paths = 0.0, set()
        for _ in range(200):
            xi = torch.randn(1, D) * 2
            want, p = reference(xi); paths.add(p)
            out = fn(tvm.runtime.tensor(xi.numpy()) if hasattr(tvm.runtime, "tensor") else tvm.nd.array(xi.numpy()))
            got = out[0].numpy()
            err = max(err, float(np.abs(got - want.numpy()).max()))
        print(f"  ran: {len(paths)} distinct paths, max |tvm - ref| = {err:.2e}")
    except Exception as e:
        import traceback; tb = traceback.extract_tb(e.__traceback__); print(f"=== {label}: FAILED {type(e).__name__}: {[l for l in str(e).splitlines() if l.strip()][0][:300]} (raised under {[f.name for f in tb][:3]})")
if 'main' in dir(): print(main[:2500])
