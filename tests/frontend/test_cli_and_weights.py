"""dycl-import on the command line, and the weight store round trip."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn

from dycl.frontend import import_module
from dycl.frontend.cli import main
from dycl.ir import parse_module
from dycl.weights import WeightStore

MODEL_SOURCE = '''
import torch, torch.nn as nn

class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:
            return self.fc(x)
        return x

class Unbounded(nn.Module):
    def forward(self, x):
        try:
            x = x - 1
        except ValueError:
            pass
        return x
'''


def _write_model(tmp_path, monkeypatch, name):
    (tmp_path / f"{name}.py").write_text(MODEL_SOURCE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_dycl_import_writes_parsable_ir_and_weights(tmp_path, monkeypatch):
    _write_model(tmp_path, monkeypatch, "cli_gate_model")
    assert main(["cli_gate_model:Gate", "--example", "randn(1,4)", "-o", "gate.mlir", "--weights", "gate.npz"]) == 0
    module = parse_module((tmp_path / "gate.mlir").read_text())
    ops = {op.name for op in module.walk()}
    assert {"scf.if", "dycl.param"} <= ops
    assert sorted(WeightStore.load(tmp_path / "gate.npz")) == ["fc.bias", "fc.weight"]


def test_dycl_import_reports_rejected_construct_with_location(tmp_path, monkeypatch, capsys):
    _write_model(tmp_path, monkeypatch, "cli_unbounded_model")
    assert main(["cli_unbounded_model:Unbounded", "--example", "randn(1,4)"]) == 1
    error = capsys.readouterr().err
    line = MODEL_SOURCE.splitlines().index("        except ValueError:") + 1
    assert f"{tmp_path}/cli_unbounded_model.py:{line}: `except ValueError` catches ValueError" in error


def test_weight_store_holds_exactly_the_referenced_weights(tmp_path):
    class Partial(nn.Module):
        def __init__(self):
            super().__init__()
            self.used = nn.Linear(4, 4)
            self.unused = nn.Linear(4, 4)
            self.register_buffer("scale", torch.full((4,), 2.0))

        def forward(self, x):
            return self.used(x) * self.scale

    model = Partial()
    program = import_module(model, (torch.randn(1, 4),))
    assert sorted(program.weights) == ["scale", "used.bias", "used.weight"]
    path = tmp_path / "weights.npz"
    program.weights.save(path)
    loaded = WeightStore.load(path)
    np.testing.assert_array_equal(loaded["used.weight"], model.used.weight.detach().numpy())
    assert "dense_resource" not in str(program.module)


def test_small_constant_tensors_stay_inline_literals():
    class AddsConstant(nn.Module):
        def forward(self, x):
            return x + torch.tensor([1.0, 2.0, 3.0, 4.0])

    program = import_module(AddsConstant(), (torch.randn(1, 4),))
    literals = [op for op in program.module.walk() if op.name == "torch.vtensor.literal"]
    assert len(literals) == 1 and "dense<" in str(literals[0])
