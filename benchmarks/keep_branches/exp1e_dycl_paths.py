"""Q1e: the fx-built cond (form C) through DyCL's own export entry points, unmodified:
dycl.backends.onnxruntime.export_onnx (the registry-cached _core.export), the side-by-side
batch module of fx_rebuild, and dycl.backends.tvm's Relax import with its converters."""
import warnings, io, contextlib, numpy as np, torch, onnxruntime as ort
warnings.simplefilter("ignore")
from dycl.backends.onnxruntime import export_onnx
from dycl.backends.fx_rebuild import _SideBySide
from dycl.backends import tvm as dycl_tvm
from exp1c_fx_variants import build, reference, D

gm = build(torch.ops.higher_order.cond, True)
x = torch.randn(1, D)
with torch.no_grad():
    ep = torch.export.export(gm, (x,), strict=False)
mp = export_onnx(ep, None, ["in0"], ["out0"]).model_proto
s = ort.InferenceSession(mp.SerializeToString(), providers=["CPUExecutionProvider"])
err = max(float(np.abs(s.run(None, {"in0": xi.numpy()})[0] - reference(xi)[0].numpy()).max()) for xi in (torch.randn(1, D) * 2 for _ in range(100)))
print("dycl export_onnx:", [n.op_type for n in mp.graph.node].count("If"), "If; max err", f"{err:.1e}")

side = _SideBySide([build(torch.ops.higher_order.cond, True), build(torch.ops.higher_order.cond, True)], [1, 1])
with torch.no_grad():
    ep2 = torch.export.export(side, (x, x), strict=False)
mp2 = export_onnx(ep2, None, ["s0_in0", "s1_in0"], ["s0_out0", "s1_out0"]).model_proto
print("side-by-side export:", [n.op_type for n in mp2.graph.node].count("If"), "If (2 x 8 expected)")

dycl_tvm._cast_scalar_operands(ep)
mod = dycl_tvm.from_exported_program(ep, keep_params_as_input=False, custom_convert_map=dycl_tvm._converters()) \
    if hasattr(dycl_tvm, "from_exported_program") else None
if mod is None:
    from tvm.relax.frontend.torch import from_exported_program
    mod = from_exported_program(ep, keep_params_as_input=False, custom_convert_map=dycl_tvm._converters())
print("TVM import with DyCL's converters: ok;", mod["main"].script().count("if "), "if in main")
