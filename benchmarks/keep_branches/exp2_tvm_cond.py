"""Q2: does tvm.relax.frontend.torch.from_exported_program accept torch.cond?"""
import warnings, traceback, torch
warnings.simplefilter("ignore")
import tvm
from tvm.relax.frontend.torch import from_exported_program
from exp1c_fx_variants import build, D

class One(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.g = torch.nn.Linear(64, 1); s.b = torch.nn.Linear(64, 64)
    def forward(s, x):
        pred = torch.sigmoid(s.g(x)).mean() > 0.5
        return torch.cond(pred, lambda x: torch.relu(s.b(x)), lambda x: x.clone(), (x,))

for label, mod in [("nn.Module with torch.cond", One().eval()), ("fx-built form C (8 gates)", build(torch.ops.higher_order.cond, True))]:
    with torch.no_grad():
        ep = torch.export.export(mod, (torch.randn(1, D),), strict=False)
    print("===", label, "| exported; nodes:", [str(n.target) for n in ep.graph.nodes if n.op == "call_function"][:8])
    for decomp in (False, True):
        try:
            irmod = from_exported_program(ep, run_ep_decomposition=decomp) if decomp else from_exported_program(ep)
            print(f"  run_ep_decomposition={decomp}: ACCEPTED"); print(str(irmod)[:1500])
        except TypeError as e:
            print(f"  run_ep_decomposition={decomp}: TypeError {e}")
        except Exception as e:
            print(f"  run_ep_decomposition={decomp}: {type(e).__name__}: {str(e).strip().splitlines()[-1][:400]}")
