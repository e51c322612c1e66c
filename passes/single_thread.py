"""dycl-single-thread: run small sub-DNNs on one intra-op thread.

Waking a second ONNX Runtime thread costs tens of microseconds per call, more than it saves
on a sub-DNN that does little arithmetic (a gate, an exit head). The runtime already runs
sub-DNNs under `dycl.runtime.runners.SINGLE_THREAD_MACS` multiply-accumulates on one
thread; this pass moves that line for one model: every sub-DNN whose estimate
(`dycl.backends.cost.estimated_macs`) is under `max-macs` gets `dycl.threads = 1`, which
the artifact's manifest records and the runtime honours. docs/passes.md builds it step by
step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.dialects.builtin import IntegerAttr
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from dycl.backends.cost import estimated_macs
from dycl.dialects.dycl import THREADS_ATTR, is_subdnn


@dataclass(frozen=True)
class MarkSmallSubDNNs(RewritePattern):
    max_macs: int

    @op_type_rewrite_pattern
    def match_and_rewrite(self, fn: func.FuncOp, rewriter: PatternRewriter) -> None:
        if not is_subdnn(fn) or THREADS_ATTR in fn.attributes:
            return
        if estimated_macs(fn) >= self.max_macs:
            return
        fn.attributes[THREADS_ATTR] = IntegerAttr(1, 64)
        rewriter.notify_op_modified(fn)


@dataclass(frozen=True)
class SingleThreadPass(ModulePass):
    name: ClassVar[str] = "dycl-single-thread"

    max_macs: int = 2_000_000
    """Sub-DNNs with fewer multiply-accumulates than this run on one thread."""

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        PatternRewriteWalker(MarkSmallSubDNNs(self.max_macs)).rewrite_module(op)
