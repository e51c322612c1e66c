"""dycl-hoist-free finds each sub-DNN's calls in one index per application (`CallIndex`)
instead of walking every host function at every pattern visit, which made it quadratic in
the program (fuzz seed 480036: over 10 minutes in `call_sites`; 13.6 s for the whole
pipeline with the index). The index must find exactly what the walk finds: the pass with it
and the same patterns without it write the same IR, on programs whose calls it rewrites."""

import pytest
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker

from dycl.frontend import import_module
from dycl.ir import make_context, print_module
from dycl.passes.hoist_free import HoistFreePass, hoist_patterns
from tests.passes import support
from tests.passes.test_frontend_models import Decode, EarlyExit, SkipGate
from tests.passes.test_reduce_by_row import GatedBlocks, ShallowDeep

import torch


BEFORE_HOIST = "dycl-const-prop,dycl-shape-infer,dycl-outline"
RUN_MANY = "dycl-pipeline{keep-branches=false},dycl-reduce-by-row"  # (squeezes left at sub-DNN ends)


@pytest.mark.parametrize("model, example, spec", [
    (EarlyExit, (1, 8), BEFORE_HOIST), (SkipGate, (1, 8), BEFORE_HOIST), (Decode, (1, 8), BEFORE_HOIST),
    (ShallowDeep, (1, 3, 4, 4), RUN_MANY), (GatedBlocks, (1, 4, 4, 4), RUN_MANY),
], ids=["early_exit", "skip_gate", "decode", "sdn_run_many", "gates_run_many"])
def test_hoist_free_with_its_call_index_writes_what_the_walk_writes(model, example, spec):
    torch.manual_seed(0)
    program = import_module(model().eval(), (torch.randn(*example),))
    before = support.apply(spec, program.module)
    indexed, walked = before.clone(), before.clone()
    HoistFreePass().apply(make_context(), indexed)
    PatternRewriteWalker(GreedyRewritePatternApplier(hoist_patterns()), walk_regions_first=False).rewrite_module(walked)
    assert print_module(indexed) == print_module(walked)
    if spec == RUN_MANY:  # (calls rewritten: results sunk to the host, the index told of the new calls)
        assert print_module(indexed) != print_module(before)
