"""Every kind of value that crosses the boundary between the host program and a sub-DNN.

Each model branches on its own tensors, so the host calls several sub-DNNs, and one value
of the kind in question flows from one sub-DNN to the host (an output) and from the host
into another (an input). `BOUNDARY` names, per model, the sub-DNN port that must carry it:
a test fails if the pipeline stops producing that port rather than passing vacuously.
"""

import torch
import torch.nn as nn


class ZeroDimTensor(nn.Module):
    """A 0-d float tensor: out of the first sub-DNN, into both arms."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        s = self.fc(x).sum()
        if s > 0:
            y = x * s
        else:
            y = x - s
        return y, s


class OneElementTensor(nn.Module):
    """A [1, 1] tensor read as a condition and used as a tensor."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 1)

    def forward(self, x):
        m = self.fc(x)
        if m > 0:
            return torch.relu(x) * m, m
        return x + m, m


class PythonInt(nn.Module):
    """`int(t.argmax())`: an int64 0-d output becomes a host int, then a sub-DNN input."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        k = int(h.argmax())
        if k > 1:
            h = h * k
        return h + k, k


class PythonFloat(nn.Module):
    """`float(t.max())`: a host float enters the next sub-DNN as a 0-d float64."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        f = float(h.max())
        if f > 0.5:
            h = h / f
        return h + f, f


class PythonBool(nn.Module):
    """`bool(t.sum() > 0)`: a bool 0-d output, returned to the user as a Python bool, and
    a 0-d bool input of the next sub-DNN (`h * b`)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        b = bool(h.sum() > 0)
        if b:
            h = torch.tanh(h)
        return h * b + int(b), b


class BoolTensor(nn.Module):
    """A bool mask computed in one sub-DNN and applied in another."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        mask = h > 0
        if h.mean() > 0:
            h = torch.where(mask, h * 2, h)
        else:
            h = torch.where(mask, h, -h)
        return h, mask


class ZeroSizeTensor(nn.Module):
    """An empty slice, as an output of one sub-DNN and an input of another."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        if h.sum() > 0:
            e = h[:, 2:2] * 2
        else:
            e = h[:, 1:1] - 1
        return h, e


class NestedSkipGates(nn.Module):
    """Skip gates inside skip gates (a 0-d gate per block): on TVM this once failed at the
    first call with `expect Tensor with ndim 0 but get 1`."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.gates = nn.ModuleList([nn.Linear(4, 1) for _ in range(3)])
        self.inner = nn.Linear(4, 4)

    def forward(self, x):
        for i in range(3):
            g = torch.sigmoid(self.gates[i](x)).mean()
            if g > 0.5:
                x = torch.relu(self.blocks[i](x))
                if x.mean() > 0.2:
                    x = self.inner(x)
        return x


# model -> ("in" or "out", shape, dtype) of a sub-DNN port the model must produce
BOUNDARY = {
    ZeroDimTensor: [("out", [], "float32"), ("in", [], "float32")],
    OneElementTensor: [("out", [1, 1], "float32"), ("in", [1, 1], "float32")],
    PythonInt: [("out", [], "int64"), ("in", [], "int64")],
    PythonFloat: [("out", [], "float32"), ("in", [], "float64")],
    PythonBool: [("out", [], "bool"), ("in", [], "bool")],
    BoolTensor: [("out", [1, 4], "bool"), ("in", [1, 4], "bool")],
    ZeroSizeTensor: [("out", [1, 0], "float32"), ("in", [1, 0], "float32")],
    NestedSkipGates: [("out", [], "bool")],
}
