"""dycl-split-batchable computes exactly what the HCFG computed before it (reference
interpreter, random weights and inputs), keeps the HCFG contract, and leaves a row part
that dycl-mark-batchable proves batchable; on the early-exit sample of the pass tests
(a frontend-made HCFG) the block before the exit test becomes batchable."""

from __future__ import annotations

from pathlib import Path

import pytest

from dycl.dialects.dycl import is_batchable
from dycl.ir import parse_module, print_module
from dycl.passes._common import subdnn_functions
from dycl.passes.split_batchable import PER_REQUEST_SUFFIX
from tests.passes import support

LIT = Path(__file__).resolve().parents[2] / "lit_tests"
CASES = [c for c in (LIT / "dycl-split-batchable.mlir").read_text().split("// -----") if c.strip()]


def _host_cases() -> list[int]:
    return [k for k, case in enumerate(CASES) if any(support.host_functions(parse_module(case)))]


@pytest.mark.parametrize("case", _host_cases())
def test_lit_cases_preserve_results(case):
    before = parse_module(CASES[case])
    after = support.apply("dycl-split-batchable", CASES[case])
    support.check_hcfg(after)
    weights = support.random_weights(before)
    for fn in support.host_functions(before):
        support.assert_equivalent(before, after, fn.sym_name.data, support.random_args(fn), weights)


@pytest.mark.parametrize("case", _host_cases())
def test_the_row_part_is_batchable_and_the_rest_is_not(case):
    before = support.apply("dycl-mark-batchable", CASES[case])
    after = support.apply("dycl-split-batchable,dycl-mark-batchable", CASES[case])
    assert not any(is_batchable(f) for f in subdnn_functions(before))
    marked = {f.sym_name.data: is_batchable(f) for f in subdnn_functions(after)}
    assert len(marked) == 2 * len(subdnn_functions(before))
    assert all(marked[name] is not name.endswith(PER_REQUEST_SUFFIX) for name in marked), marked


def test_an_exit_test_after_a_whole_network_splits_from_it():
    """The frontend's early exit: `if softmax(head(h)).max() > t: return ...` after a conv
    and a linear layer, with the pipeline's keep-branches off (the gate in the host)."""
    import torch
    from torch import nn

    from dycl.frontend import import_module

    class Exit(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3, padding=1)
            self.head = nn.Linear(8 * 4 * 4, 5)
            self.tail = nn.Linear(8 * 4 * 4, 5)

        def forward(self, x):
            h = torch.flatten(torch.relu(self.conv(x)), 1)
            conf = torch.softmax(self.head(h), dim=1)
            if conf.max() > 0.3:
                return conf
            return self.tail(h)

    torch.manual_seed(0)
    program = import_module(Exit().eval(), (torch.randn(1, 3, 4, 4),))
    text = print_module(program.module)
    hcfg = support.apply("dycl-pipeline{keep-branches=false}", text)
    split = support.apply("dycl-split-batchable,dycl-mark-batchable", hcfg)
    support.check_hcfg(split)
    names = {f.sym_name.data: is_batchable(f) for f in subdnn_functions(split)}
    assert any(n.endswith(PER_REQUEST_SUFFIX) for n in names)
    assert names[next(n for n in names if n + PER_REQUEST_SUFFIX in names)]  # the block batches
    weights = {k: torch.as_tensor(v) for k, v in program.weights.items()}
    xs = [[torch.randn(1, 3, 4, 4) * s] for s in (0.01, 0.1, 1.0, 3.0, 10.0)]
    model = Exit().eval()
    support.assert_equivalent(hcfg, split, "forward", xs, weights)
