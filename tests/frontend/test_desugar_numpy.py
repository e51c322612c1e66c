"""numpy on runtime tensors (issue 13.5): `np.argmax(confs)` over a list of 0-d tensors,
`np.max(probs)` of `t.detach().cpu().numpy()`, `float(np.mean(confs))`, ... lowered to torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import dycl
from tests.frontend.helpers import max_abs_error
from tests.frontend.test_desugar_support import check_paths, marked_line, refused, scaled_inputs, seeded  # noqa: F401 (autouse fixture)


def heads(n=3, width=8, classes=4):
    return nn.ModuleList(nn.Linear(width, classes) for _ in range(n))


class SDNNumpyArgmax(nn.Module):
    """Every internal classifier runs; the most confident one is chosen in numpy."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))
        self.heads = heads()

    def forward(self, x):
        outs, confs = [], []
        for block, head in zip(self.blocks, self.heads):
            x = torch.tanh(block(x))
            y = head(x)
            outs.append(y)
            confs.append(torch.max(F.softmax(y, 1)).data)
        k = np.argmax(confs)
        return outs[k], int(k)


class NumpyConfidence(nn.Module):
    """Confidences as numpy values: `np.max(probs)` to exit, `float(np.mean(confs))` reported."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))
        self.heads = heads()
        self.thresholds = [0.44, 0.37, 0.296]

    def forward(self, x):
        confs = []
        for i, (block, head) in enumerate(zip(self.blocks, self.heads)):
            x = torch.tanh(block(x))
            logits = head(x)
            probs = F.softmax(logits, dim=1).detach().cpu().numpy()
            confs.append(np.max(probs))
            if np.max(probs) > self.thresholds[i]:
                return logits, i, float(np.mean(confs))
        return logits, -1, float(np.mean(confs))


class BranchyEntropy(nn.Module):
    """BranchyNet: the entropy compared with a threshold in numpy (`.data.cpu().numpy()`)."""

    def __init__(self):
        super().__init__()
        self.stages = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))
        self.exits = heads()
        self.thresholds = [1.3, 1.34]

    def forward(self, x):
        for i in range(len(self.stages)):
            x = torch.tanh(self.stages[i](x))
            y = self.exits[i](x)
            if i == len(self.stages) - 1:
                return y, i
            p = F.softmax(y, dim=1)
            e = (-torch.sum(p * torch.log(p + 1e-12), dim=1)).data.cpu().numpy()
            if e < self.thresholds[i]:
                return y, i


class NumpyForms(nn.Module):
    """The numpy calls and numpy-value operations the frontend lowers."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 6)

    def forward(self, x):
        logits = self.fc(x)
        scores = logits.detach().cpu().numpy()
        best = np.argmax(scores)
        worst = np.argmin(logits.cpu().numpy())
        rows = np.argmax(scores, axis=1)
        top = np.max(scores, axis=1, keepdims=True)
        positive = np.sum(scores > 0)
        frac = np.mean(scores > 0)
        arr = np.array([logits[0, 0], logits[0, 1]])
        view = np.asarray(logits.detach())
        stacked = np.stack([logits, logits * 2], axis=0)
        halves = np.where(scores > 0, scores, 0.0)
        scaled = (scores * 0.5 + 1) / 2
        first = scores[0, 0]
        hosts = [logits[0, i].item() for i in range(3)]
        pick = np.argmax(hosts)
        out = torch.from_numpy(halves) + torch.as_tensor(scaled)
        if scores.max() > 0.2 and float(first) < scores.mean() + 5:
            return out, best, worst, int(positive), float(frac), float(np.sum(arr)), float(view.sum()), float(stacked.max()), pick, float(top.max()), int(rows[0])
        return -out, best, worst, int(positive), float(frac), float(np.sum(arr)), float(view.sum()), float(stacked.min()), pick, float(top.min()), int(rows[0])


def test_numpy_argmax_over_a_list_of_0d_tensors():
    check_paths(SDNNumpyArgmax(), scaled_inputs(1, 8, scales=(-10.0, -3.0, -1.0, 0.0, 1.0, 3.0, 10.0), seeds=(0, 1, 2, 3)), all_branches=False)


def test_numpy_max_to_exit_and_mean_reported():
    check_paths(NumpyConfidence(), scaled_inputs(1, 8, scales=(-10.0, -3.0, -1.0, -0.3, 0.0, 0.3, 1.0, 3.0, 10.0), seeds=(0, 1, 2)))


def test_numpy_entropy_compared_with_thresholds():
    check_paths(BranchyEntropy(), scaled_inputs(1, 8, scales=(-10.0, -3.0, -1.0, -0.3, 0.0, 0.3, 1.0, 3.0, 10.0), seeds=(0, 1, 2)))


def test_numpy_forms():
    check_paths(NumpyForms(), scaled_inputs(1, 8), all_branches=False)


def test_argmax_result_is_a_python_int():
    from dycl.frontend import import_module

    program = import_module(SDNNumpyArgmax().eval(), (torch.randn(1, 8),))
    assert str(program.function.function_type.outputs.data[1]) == "!torch.int"


def test_end_to_end_on_onnxruntime():
    model = SDNNumpyArgmax().eval()
    inputs = scaled_inputs(1, 8, scales=(-10.0, -1.0, 0.0, 1.0, 10.0))
    compiled = dycl.compile(model, inputs[0], backend="onnxruntime", progress=False)
    for args in inputs:
        with torch.no_grad():
            expected = model(*args)
        actual = compiled(*args)
        assert max_abs_error((expected[0], int(expected[1])), actual) <= 1e-4


class WhereIndices(nn.Module):
    def forward(self, x):
        confs = [x[0, 0], x[0, 1]]
        return x, len(np.where(np.array(confs) > 0.5)[0])  # REFUSED


class NumpyExp(nn.Module):
    def forward(self, x):
        e = np.exp(x.numpy())  # REFUSED
        return x, float(e.sum())


class ReturnsNumpy(nn.Module):
    def forward(self, x):
        probs = F.softmax(x, 1).numpy()
        return np.max(probs)  # REFUSED


class IntDivision(nn.Module):
    def forward(self, x):
        counts = (x > 0).sum(1).numpy()
        half = counts / 2  # REFUSED
        return x, float(half[0])


class NumpyIntoTorch(nn.Module):
    def forward(self, x):
        probs = F.softmax(x, 1).numpy()
        return F.relu(probs)  # REFUSED


class AsType(nn.Module):
    def forward(self, x):
        probs = x.numpy()
        return x, float(probs.astype(np.float64).sum())  # REFUSED


@pytest.mark.parametrize(
    "cls, construct, hint",
    [
        (WhereIndices, "`np.where(cond)` gives index arrays whose length depends on the data", "hits = np.where(cond)[0]"),
        (NumpyExp, "numpy `exp` on a runtime value", "torch"),
        (ReturnsNumpy, "forward returns a numpy value", "float(v)"),
        (IntDivision, "numpy and torch give this arithmetic different dtypes", "before `.numpy()`"),
        (NumpyIntoTorch, "takes a numpy value computed at runtime", "torch.from_numpy"),
        (AsType, "numpy method `.astype()`", "before `.numpy()`"),
    ],
)
def test_numpy_that_cannot_be_lowered_exactly_is_refused(cls, construct, hint):
    refused(cls(), (torch.randn(1, 8),), construct, marked_line(cls), hint)
