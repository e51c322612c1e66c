"""Compose DyCL's pipeline with a pass of your own, from Python (docs/passes.md).

    python examples/compose_passes.py [zoo network]      # default: caption_googlenet

Imports a zoo network, runs the frontend once, prints the HCFG that dycl-pipeline makes,
then compiles the same host IR with ONNX Runtime through a custom pipeline: dycl-pipeline,
a pass defined here that names each sub-DNN after the module whose weights it reads
(`@subdnn_0` -> `@encoder_0_0`), and dycl-single-thread (the decoder step, 10 M
multiply-accumulates run once per word, gets one thread). Prints the HCFG it compiled and
checks the compiled model against eager PyTorch on inputs that take every path.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import StringAttr, SymbolRefAttr
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern, op_type_rewrite_pattern

import dycl
from dycl.api import check_against_eager
from dycl.dialects.dycl import ParamOp, is_subdnn
from dycl.frontend import import_module
from dycl.hcfg import HCFG
from dycl.ir import make_context
from dycl.passes.compose import run_passes
from dycl.passes.pipeline import PipelinePass
from dycl.passes.single_thread import SingleThreadPass
from dycl.zoo import REGISTRY


@dataclass(frozen=True)
class NameAfterWeights(RewritePattern):
    """`@subdnn_<k>` -> the module path of the first weight it reads (`@decoder_embed`),
    numbered when two sub-DNNs would take one name; its calls follow."""

    prefix: str

    @op_type_rewrite_pattern
    def match_and_rewrite(self, fn: func.FuncOp, rewriter: PatternRewriter) -> None:
        old = fn.sym_name.data
        if not is_subdnn(fn) or not old.startswith(self.prefix):
            return
        weight = next((op.weight_name for op in fn.walk() if isinstance(op, ParamOp)), None)
        if weight is None:
            return
        module = fn.parent_op()
        taken = {op.sym_name.data for op in module.ops if isinstance(op, func.FuncOp)}
        base = re.sub(r"\W", "_", weight.rpartition(".")[0] or weight)
        new, k = base, 1
        while new in taken:
            new, k = f"{base}_{k}", k + 1
        fn.sym_name = StringAttr(new)
        rewriter.notify_op_modified(fn)
        for call in module.walk():
            if isinstance(call, func.CallOp) and call.callee.root_reference.data == old:
                call.callee = SymbolRefAttr(new)
                rewriter.notify_op_modified(call)


@dataclass(frozen=True)
class NameAfterWeightsPass(ModulePass):
    name: ClassVar[str] = "example-name-after-weights"

    prefix: str = "subdnn_"
    """Only sub-DNNs whose names start with this are renamed."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(NameAfterWeights(self.prefix)).rewrite_module(op)


def main(name: str = "caption_googlenet") -> int:
    entry = REGISTRY[name]
    model = entry.build()
    program = import_module(model, entry.example_inputs())  # the frontend: host IR + weights

    before = program.module.clone()
    run_passes(make_context(), before, [PipelinePass()])
    print(f"== {name}: dycl-pipeline ==")
    print(HCFG.from_module(before, program.function_name).summary())

    passes = [PipelinePass(), NameAfterWeightsPass(), SingleThreadPass(max_macs=20_000_000)]
    compiled = dycl.compile_module(program.module, program.weights, "onnxruntime", entry=program.function_name,
                                   passes=passes, progress=False)
    print(f"\n== {name}: " + ", ".join(p.name for p in passes) + " ==")
    print(compiled.hcfg.summary())
    for record in compiled.manifest["subdnns"]:
        print(f"  manifest: @{record['name']}: {record['macs']} multiply-accumulates, threads {record.get('threads')}")

    inputs = entry.path_inputs()
    errors = [check_against_eager(model, compiled, args)["max_abs_error"] for args in inputs]
    print(f"\nmatches eager PyTorch on {len(inputs)} inputs that take every path: max abs error {max(errors):.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
