"""The pipeline on real torch-mlir IR: frontend output of small dynamic models, and static
imports (sub-DNN contents exactly as FxImporter writes them). Checked against eager."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from dycl.hcfg import HCFG
from dycl.interpreter import run_function, unflatten, output_tree
from tests.passes import support


class EarlyExit(nn.Module):
    """Two exits of different widths; the exit index is returned."""

    def __init__(self):
        super().__init__()
        self.a, self.e1 = nn.Linear(8, 8), nn.Linear(8, 3)
        self.b, self.e2 = nn.Linear(8, 8), nn.Linear(8, 7)

    def forward(self, x):
        h = torch.relu(self.a(x))
        y = self.e1(h)
        if F.softmax(y, 1).max() > 0.6:
            return y, 0
        h = torch.relu(self.b(h)).flatten(1)
        return self.e2(h), 1


class SkipGate(nn.Module):
    """A ModuleList of gated residual blocks (SkipNet-style)."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))
        self.gates = nn.ModuleList(nn.Linear(8, 1) for _ in range(3))

    def forward(self, x):
        for block, gate in zip(self.blocks, self.gates):
            if gate(x).sum() > 0:
                x = x + torch.relu(block(x))
        return x


class Decode(nn.Module):
    """A greedy decode loop with `break` on a data-dependent token."""

    def __init__(self):
        super().__init__()
        self.emb, self.cell, self.out = nn.Embedding(10, 8), nn.GRUCell(8, 8), nn.Linear(8, 10)

    def forward(self, h):
        tok = torch.zeros(1, dtype=torch.long)
        for _ in range(6):
            h = self.cell(self.emb(tok), h)
            tok = self.out(h).argmax(1)
            if tok.item() == 3:
                break
        return h


def _inputs(n, shape, seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(*shape, generator=gen) * s for s in (0.1, 1.0, 3.0, 10.0) for _ in range(n)]


def _import(model, example):
    from dycl.frontend import FrontendError, import_module

    torch.manual_seed(0)
    try:
        return import_module(model.eval(), (example,))
    except FrontendError as err:  # the frontend does not take this construct (yet)
        pytest.skip(f"frontend: {err}")


SPLIT = "dycl-pipeline{keep-branches=false}"


@pytest.mark.parametrize(
    "model_cls, n_subdnns, n_controls, spec",
    [(EarlyExit, 2, 1, "dycl-pipeline"), (SkipGate, 6, 3, SPLIT), (SkipGate, 1, 0, "dycl-pipeline"),
     (Decode, 2, 2, "dycl-pipeline")],
    ids=["early_exit", "skip_gate_split", "skip_gate_kept", "decode"],
)
def test_frontend_model_through_pipeline(model_cls, n_subdnns, n_controls, spec):
    torch.manual_seed(0)
    model = model_cls().eval()
    program = _import(model, torch.randn(1, 8))
    after = support.apply(spec, program.module)
    support.check_hcfg(after)
    summary = HCFG.from_module(after).summary()
    if n_subdnns is not None:
        assert summary.subdnn_count == n_subdnns
        assert summary.control_op_count == n_controls
    fn = program.function
    seen = set()
    for x in _inputs(3, (1, 8)):
        before_out = run_function(program.module, [x], program.weights)
        after_out = run_function(after, [x], program.weights)
        assert support.same(after_out, before_out)
        with torch.no_grad():
            want = model(x)
        got = unflatten(output_tree(fn), after_out)
        assert support.same(got, want)
        seen.add(repr(got[1]) if isinstance(got, tuple) else None)
    if model_cls is EarlyExit:
        assert seen == {"0", "1"}


def test_skip_gate_blocks_share_one_function_with_weights_as_args():
    torch.manual_seed(0)
    program = _import(SkipGate().eval(), torch.randn(1, 8))
    default = support.apply(SPLIT, program.module)
    shared = support.apply("dycl-pipeline{keep-branches=false weights-as-args=true}", program.module)
    assert len(support.subdnn_functions(default)) == 6
    assert len(support.subdnn_functions(shared)) == 2  # one gate, one block
    for x in _inputs(2, (1, 8)):
        assert support.same(run_function(shared, [x], program.weights),
                            run_function(default, [x], program.weights))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        y = F.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.fc(y.flatten(1)).unsqueeze(0)


def test_static_import_is_one_subdnn_and_views_leave_it():
    from tests.support.static_import import import_static

    model = SmallCNN().eval()
    module, weights = import_static(model, torch.randn(1, 3, 8, 8))
    after = support.apply("dycl-pipeline", module)
    support.check_hcfg(after)
    (subdnn,) = support.subdnn_functions(after)
    names = [op.op_name.data for op in subdnn.body.block.ops if hasattr(op, "op_name")]
    assert "torch.aten.conv2d" in names and "torch.aten.linear" in names
    assert "torch.aten.unsqueeze" not in names  # the trailing view went to the host
    for x in _inputs(2, (1, 3, 8, 8)):
        (got,) = run_function(after, [x], weights)
        with torch.no_grad():
            assert torch.equal(got, model(x))
