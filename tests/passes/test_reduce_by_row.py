"""dycl-reduce-by-row on an SDN written as the SDN paper's code writes it: internal
classifiers after blocks, `F.softmax(...).max()` against a threshold per exit. After the
run-many form's passes no sub-DNN returns a 0-d value (each exit test comes out of its
block's call as one value per row), nothing runs per request, and the interpreter computes
what it computed before on inputs that take every exit."""

import torch
import torch.nn.functional as F
from torch import nn

from dycl.frontend import import_module
from tests.passes import support


class ShallowDeep(nn.Module):
    def __init__(self, threshold=0.999):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()),
                                     nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU()),
                                     nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())])
        self.heads = nn.ModuleList([nn.Linear(8 * 4 * 4, 5) for _ in range(3)])
        self.threshold = threshold

    def forward(self, x):
        for i, (block, head) in enumerate(zip(self.blocks, self.heads)):
            x = block(x)
            logits = head(x.flatten(1))
            confidence = F.softmax(logits, dim=1).max()
            if confidence >= self.threshold:
                return logits, i
        return logits, len(self.blocks) - 1


def _run_many_form(model, example):
    """The pipeline with its gates in the host, then run_many's passes: (program, before, after)."""
    torch.manual_seed(0)
    program = import_module(model.eval(), (example,))
    split = support.apply("dycl-pipeline{keep-branches=false}", program.module)
    rows = support.apply("dycl-reduce-by-row,dycl-hoist-free,dycl-split-batchable,dycl-mark-batchable", split)
    support.check_hcfg(rows)
    return program, split, rows


def test_exit_tests_leave_no_call_per_request_and_compute_the_same():
    program, split, rows = _run_many_form(ShallowDeep(), torch.randn(1, 3, 4, 4))
    subdnns = support.subdnn_functions(rows)
    assert subdnns and not [f.sym_name.data for f in subdnns if f.sym_name.data.endswith("_per_request")]
    assert all(r.shape != () for f in subdnns for r in f.function_type.outputs)
    assert all("dycl.batchable" in f.attributes for f in subdnns)
    old = support.apply("dycl-split-batchable", split)
    assert [f.sym_name.data for f in support.subdnn_functions(old) if f.sym_name.data.endswith("_per_request")]
    weights = support.random_weights(program.module)
    args = support.random_args(program.module.ops.first, n=15)
    exits = [out[1] for out in support.assert_equivalent(split, rows, "forward", args, weights)]
    assert set(exits) == {0, 1, 2}, exits


class GatedBlocks(nn.Module):
    """SkipNet's gates: a block runs when `softmax(gate(x))[0, 0] > 0.5`."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Conv2d(4, 4, 3, padding=1) for _ in range(3))
        self.gates = nn.ModuleList(nn.Linear(4, 2) for _ in range(3))

    def forward(self, x):
        for block, gate in zip(self.blocks, self.gates):
            prob = F.softmax(gate(x.mean(dim=(2, 3))), dim=1)
            if prob[0, 0] > 0.5:
                x = x + torch.relu(block(x))
        return x


def test_a_gate_read_at_row_zero_leaves_no_call_per_request_and_computes_the_same():
    program, split, rows = _run_many_form(GatedBlocks(), torch.randn(1, 4, 4, 4))
    subdnns = support.subdnn_functions(rows)
    assert all("dycl.batchable" in f.attributes for f in subdnns), [f.sym_name.data for f in subdnns]
    assert not [f for f in subdnns if f.sym_name.data.endswith("_per_request")]
    weights = support.random_weights(program.module)
    support.assert_equivalent(split, rows, "forward", support.random_args(program.module.ops.first, n=15), weights)
