"""dycl-pipeline: host IR -> HCFG, DyCL's phases 2-3 in order.

    dycl-const-prop
    dycl-shape-infer                              (marks loop carries whose shape varies)
    dycl-unroll-loops{shape-varying-only=true}    (specialises those loops)
    dycl-shape-infer                              (static shapes in the unrolled copies)
    dycl-hoist-invariant                          (what a loop repeats unchanged, once before it)
    dycl-keep-branches{backend=...}               (unless keep-branches=false: tensor-only
                                                   ifs stay inside a sub-DNN)
    dycl-outline -> dycl-hoist-free
    dycl-merge-calls                              (only with merge-calls=true: one call where
                                                   two were)
    dycl-dedup
    dycl-const-prop

Shape inference runs before unrolling too, so that the unroller sees the carries whose
shape changes per iteration even when the frontend typed them statically.

The steps run as an xDSL `PassPipeline`. A driver that wants to act between them (dycl-opt
verifies the IR after each pass and times it with `--time-passes`) builds its own pipeline
from `expand_pipelines`, which replaces each dycl-pipeline by its steps.

Any other pipeline is parsed and run by `dycl.passes.compose`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.passes import ModulePass, PassPipeline

from dycl.passes.const_prop import ConstPropPass
from dycl.passes.dedup import DedupPass
from dycl.passes.hoist_free import HoistFreePass
from dycl.passes.hoist_invariant import HoistInvariantPass
from dycl.passes.keep_branches import KeepBranchesPass
from dycl.passes.merge_calls import MergeCallsPass
from dycl.passes.outline import OutlinePass
from dycl.passes.shape_infer import ShapeInferPass
from dycl.passes.unroll_loops import UnrollLoopsPass


@dataclass(frozen=True)
class PipelinePass(ModulePass):
    name: ClassVar[str] = "dycl-pipeline"

    min_ops: int = 1
    """dycl-outline: computation-free runs shorter than this stay in the host."""

    prefix: str = "subdnn_"
    """dycl-outline: sub-DNN name prefix."""

    max_trip_count: int = 64
    """dycl-unroll-loops: loops with more iterations stay rolled (and must have static carries)."""

    weights_as_args: bool = False
    """dycl-dedup: also merge sub-DNNs that differ only in their weights."""

    merge_calls: bool = False
    """dycl-merge-calls: merge back-to-back sub-DNN calls (sinking a call that follows an
    scf.if into its branches to make them back-to-back). Off by default: on SkipNet with
    keep-branches=false it saves 9 of 27 calls per inference (kept branches make it one) but, at 2 threads, makes inference ~5% slower (the merged
    block+gate crosses the runtime's one-thread threshold, so the gate's small ops run on two
    threads); docs/bench.md. Never with weights-as-args, which asks for the fewest compiled
    functions: merging makes more of them (a gate alone and fused with each block before it)."""

    keep_branches: bool = True
    """dycl-keep-branches: keep tensor-only scf.ifs (a SkipNet or BlockDrop gate) inside a
    sub-DNN, run by the backend as ONNX `If` / Relax `if`: SkipNet and BlockDrop become one
    call per inference instead of 8-31, exact and faster on both backends
    (docs/keep-branches.md). `keep-branches=false` is the pure split of the DyCL paper."""

    backend: str = "onnxruntime"
    """dycl-keep-branches: whose costs decide which ifs to keep."""

    def passes(self) -> tuple[ModulePass, ...]:
        """The steps, in order, with this pipeline's options."""
        merge = (MergeCallsPass(prefix=self.prefix),) if self.merge_calls and not self.weights_as_args else ()
        return (
            ConstPropPass(),
            ShapeInferPass(),
            UnrollLoopsPass(max_trip_count=self.max_trip_count, shape_varying_only=True),
            ShapeInferPass(),
            HoistInvariantPass(),
            *((KeepBranchesPass(backend=self.backend),) if self.keep_branches else ()),
            OutlinePass(min_ops=self.min_ops, prefix=self.prefix),
            HoistFreePass(),
            *merge,
            DedupPass(weights_as_args=self.weights_as_args),
            ConstPropPass(),
        )

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PassPipeline(self.passes()).apply(ctx, op)


def expand_pipelines(passes: Iterable[ModulePass]) -> tuple[ModulePass, ...]:
    """`passes` with each dycl-pipeline replaced by its steps, so that a `PassPipeline`
    callback runs after every step rather than once after the whole pipeline."""
    return tuple(step for p in passes for step in (p.passes() if isinstance(p, PipelinePass) else (p,)))
