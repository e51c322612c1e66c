"""Every tensor predicate in an `if` compiles exactly (issue 28), audited as the backends' op
tables were: one table, each predicate put in the condition of a small model, compiled for the
reference interpreter and ONNX Runtime, run on inputs that take both sides and compared with
eager. A predicate of metadata (shapes, dtypes, devices) is known at import: the `if` folds,
and each side is a compile of its own. A predicate of values decides at run time, on the host
(`torch.equal`, `torch.allclose`) or from a sub-DNN's 0-d bool result (`torch.any`)."""

from __future__ import annotations

import importlib.util
import textwrap

import pytest
import torch

import dycl
from dycl.frontend import FrontendError, import_module
from tests.frontend.helpers import BranchCoverage, eager, if_ops, max_abs_error, run

MODEL = '''
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable


class Gate(nn.Module):
    """An early exit whose test is a tensor predicate; the exits read `z` only."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.exit = nn.Linear(3, 2)

    def features(self, z):
        return F.relu(self.fc(Variable(z.data)))

    def forward(self, x, y, z):
        h = self.features(z)
        if {predicate}:
            return self.exit(h) * 2
        h = torch.tanh(h + [w.sum() for w in self.exit.parameters()][0])
        return self.exit(h).softmax(-1)
'''


def xy(x, y=None):
    z = torch.linspace(-1, 1, 6).reshape(2, 3)
    return (x, x.clone() if y is None else y, z)


BASE = torch.tensor([[0.5, -0.25, 1.0], [2.0, -1.5, 0.75]])
NAN = torch.tensor([[0.5, float("nan"), 1.0], [2.0, -1.5, 0.75]])
INF = torch.tensor([[0.5, float("inf"), 1.0], [2.0, -1.5, 0.75]])

# (id, predicate, inputs where it is true, inputs where it is false); None: that side cannot
# be made on this machine (no CUDA, no complex inputs, inputs that never require grad).
VALUES = [
    ("equal", "torch.equal(x, y)", xy(BASE), xy(BASE, BASE + 1)),
    ("equal_method", "x.equal(y)", xy(BASE), xy(BASE, BASE * 2)),
    ("equal_of_rows", "torch.equal(x[0], y[1])", xy(BASE[:1].repeat(2, 1)), xy(BASE)),
    ("equal_of_other_shapes", "torch.equal(x, y) or torch.equal(x[:1], y)", xy(BASE), xy(BASE, BASE + 1)),
    ("allclose", "torch.allclose(x, y)", xy(BASE, BASE + 1e-9), xy(BASE, BASE + 1e-3)),
    ("allclose_method", "x.allclose(y, atol=0.01)", xy(BASE, BASE + 1e-3), xy(BASE, BASE + 0.1)),
    ("allclose_options", "torch.allclose(x, y, 0.1, 0.0, equal_nan=True)", xy(NAN, NAN * 1.05), xy(NAN, NAN * 1.2)),
    ("isclose_all", "torch.isclose(x, y, rtol=0.1).all()", xy(BASE, BASE * 1.05), xy(BASE, BASE * 1.2)),
    ("is_nonzero", "(x.sum() > 0).is_nonzero()", xy(BASE), xy(-BASE)),
    ("torch_is_nonzero", "torch.is_nonzero(x[0, 0])", xy(BASE), xy(BASE * 0)),
    ("torch_any", "torch.any(x > 1.5)", xy(BASE), xy(BASE - 1)),
    ("torch_all", "torch.all(x > -2)", xy(BASE), xy(BASE - 1)),
    ("any_item", "(x > 1.5).any().item()", xy(BASE), xy(BASE - 1)),
    ("all_method", "(x < y + 0.5).all()", xy(BASE), xy(BASE, BASE - 1)),
    ("bool", "bool(x.sum() > 0)", xy(BASE), xy(-BASE)),
    ("eq_all", "x.eq(y).all()", xy(BASE), xy(BASE, BASE.flip(0))),
    ("ne_any", "x.ne(y).any()", xy(BASE, BASE.flip(0)), xy(BASE)),
    ("count_nonzero", "torch.count_nonzero(x > 0) > 3", xy(BASE), xy(-BASE)),
    ("isnan_any", "torch.isnan(x).any()", xy(NAN), xy(BASE)),
    ("isfinite_all", "torch.isfinite(x).all()", xy(BASE), xy(INF)),
    ("isinf_any", "torch.isinf(x).any()", xy(INF), xy(NAN)),
    ("item_compare", "x.max().item() > 1.5", xy(BASE), xy(BASE - 1)),
]
METADATA = [
    ("numel", "x.numel() > 3", xy(BASE), xy(BASE[:1])),
    ("torch_numel", "torch.numel(x) == 6", xy(BASE), xy(BASE[:1])),
    ("nelement", "x.nelement() > 3", xy(BASE), xy(BASE[:1])),
    ("dim", "x.dim() == 2", xy(BASE), xy(BASE[None])),
    ("ndim", "x.ndim == 2", xy(BASE), xy(BASE[None])),
    ("len", "len(x) > 1", xy(BASE), xy(BASE[:1])),
    ("size", "x.size(0) > 1", xy(BASE), xy(BASE[:1])),
    ("shape", "x.shape == (2, 3)", xy(BASE), xy(BASE[:1])),
    ("sizes_equal", "x.size() == y.size()", xy(BASE), xy(BASE, BASE[:1])),
    ("is_same_size", "x.is_same_size(y)", xy(BASE), xy(BASE, BASE[:1])),
    ("torch_is_same_size", "torch.is_same_size(x, y)", xy(BASE), xy(BASE, BASE[:1])),
    ("dtype", "x.dtype == torch.float32", xy(BASE), xy(BASE.double())),
    ("dtype_is_floating_point", "x.dtype.is_floating_point", xy(BASE), xy(BASE.long())),
    ("is_floating_point", "x.is_floating_point()", xy(BASE), xy(BASE.long())),
    ("torch_is_floating_point", "torch.is_floating_point(x)", xy(BASE), xy(BASE.long())),
    ("is_signed", "x.is_signed()", xy(BASE), xy(BASE.abs().to(torch.uint8))),
    ("element_size", "x.element_size() == 4", xy(BASE), xy(BASE.double())),
    ("is_tensor", "torch.is_tensor(y)", xy(BASE), (BASE, 0.5, xy(BASE)[2])),
    ("isinstance", "isinstance(y, torch.Tensor)", xy(BASE), (BASE, 3, xy(BASE)[2])),
    ("isinstance_of_a_float", "isinstance(y, float)", (BASE, 0.5, xy(BASE)[2]), xy(BASE)),
    ("is_complex", "x.is_complex()", None, xy(BASE)),
    ("requires_grad", "x.requires_grad", None, xy(BASE)),
    ("is_contiguous", "x.is_contiguous()", xy(BASE), None),
    ("is_cuda", "x.is_cuda", None, xy(BASE)),
    ("device_type", "x.device.type == 'cpu'", xy(BASE), None),
    ("layout", "x.layout == torch.strided", xy(BASE), None),
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One compile cache for the table: the exits' sub-DNNs are the same in every model."""
    return tmp_path_factory.mktemp("predicate-cache")


def gate(tmp_path, name: str, predicate: str):
    """The model class with `predicate` as its test, from a file of its own (the frontend
    reads forward's source)."""
    path = tmp_path / f"gate_{name}.py"
    path.write_text(textwrap.dedent(MODEL).replace("{predicate}", predicate))
    spec = importlib.util.spec_from_file_location(f"gate_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    return module.Gate().eval()


def assert_exact(model, example, inputs, backend, cache_dir):
    """Imported (and compiled for `backend`, unless None) on `example`: exact against eager on
    `inputs`."""
    program = import_module(model, example)
    errors = [max_abs_error(eager(model, args), run(program, args)) for args in inputs]
    if backend is not None:
        compiled = dycl.compile(model, example, backend=backend, progress=False, cache_dir=cache_dir)
        errors += [max_abs_error(eager(model, args), compiled(*args)) for args in inputs]
    assert max(errors) <= 1e-5, errors
    return program


@pytest.mark.parametrize("name, predicate, true_inputs, false_inputs", VALUES, ids=[v[0] for v in VALUES])
def test_a_predicate_of_values_decides_at_run_time(tmp_path, cache, name, predicate, true_inputs, false_inputs):
    model = gate(tmp_path, name, predicate)
    program = import_module(model, true_inputs)
    coverage = BranchCoverage()
    for args in (true_inputs, false_inputs):
        assert max_abs_error(eager(model, args), run(program, args, coverage)) <= 1e-5
    tests = if_ops(program)
    assert tests and all(coverage.taken[id(op)] == {True, False} for op in tests), "a side never ran"
    compiled = dycl.compile(model, true_inputs, backend="onnxruntime", progress=False, cache_dir=cache)
    for args in (true_inputs, false_inputs):
        assert max_abs_error(eager(model, args), compiled(*args)) <= 1e-5


# Folded at import, a metadata predicate leaves no `if` for a backend to differ on: the
# interpreter checks every one in the default tier, ONNX Runtime in the slow tier.
@pytest.mark.parametrize("backend", [None, pytest.param("onnxruntime", marks=pytest.mark.slow)], ids=["interpreter", "onnxruntime"])
@pytest.mark.parametrize("name, predicate, true_inputs, false_inputs", METADATA, ids=[m[0] for m in METADATA])
def test_a_predicate_of_metadata_folds_at_import(tmp_path, cache, name, predicate, true_inputs, false_inputs, backend):
    model = gate(tmp_path, name, predicate)
    for args in (true_inputs, false_inputs):
        if args is None:
            continue
        program = assert_exact(model, args, [args], backend, cache)
        assert not if_ops(program), "a predicate known at import left an `if`"


class SameSizeHelper:
    """A plain function that returns a Python bool computed by an op DyCL's host program has
    no translation of, called in an `if` test."""

    source = '''
import torch
import torch.nn as nn


def same_size(a, b):
    return a.is_same_size(b)


class Model(nn.Module):
    def forward(self, x, y):
        if same_size(x, y):
            return x * 2
        return y - 1
'''


def test_an_op_the_host_cannot_run_is_refused_at_the_users_line(tmp_path):
    path = tmp_path / "same_size_helper.py"
    path.write_text(SameSizeHelper.source)
    spec = importlib.util.spec_from_file_location("same_size_helper", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with pytest.raises(FrontendError) as caught:
        import_module(module.Model().eval(), (torch.ones(2, 2), torch.ones(2, 2)))
    line = SameSizeHelper.source.splitlines().index("        if same_size(x, y):") + 1
    assert (caught.value.file, caught.value.line) == (str(path), line), caught.value
    assert "`same_size(x, y)` makes a Python value with `torch.ops.aten.is_same_size`" in str(caught.value)
    assert "no host translation" in str(caught.value)
