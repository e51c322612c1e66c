"""`a if cond else b` on a runtime condition (an `scf.if` that computes only the chosen
branch), and Python lists of gate decisions built with append/extend/insert (SkipNet-style
per-group masks, the corpus's SkipExtendGroups)."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from tests.frontend.test_desugar_support import check_paths, marked_line, refused, seeded  # noqa: F401 (autouse fixture)


def gated(*gates, width=8):
    inputs = []
    for k, row in enumerate(gates):
        x = torch.randn(1, width, generator=torch.Generator().manual_seed(k))
        x[0, : len(row)] = torch.tensor(row, dtype=torch.float32)
        inputs.append((x,))
    return inputs


class GateDecisions(nn.Module):
    """`m = 1 if p.item() > 0.5 else 0`, the decisions kept in Python lists."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))

    def forward(self, x):
        gates = x[0, :3].clone()
        all_masks = []
        group = []
        for i, block in enumerate(self.blocks):
            m = 1 if torch.sigmoid(gates[i]).item() > 0.5 else 0
            if m:
                x = torch.tanh(block(x)) + x
            group.append(m)
        all_masks.extend(group)
        all_masks.insert(0, 1)
        scale = 2.0 if sum(group) > 1 else 0.5
        return x * scale, all_masks


class TensorBranches(nn.Module):
    """Tensor-valued and tuple-valued conditional expressions, nested."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = self.fc(x) if x[0, 0] > 0 else x * 2
        pair = (y, 1) if x[0, 1] > 0 else (y - 1, 2)
        z = y if x[0, 2] > 0 else (y + 1 if x[0, 3] > 0 else y * 3)
        return pair, z


class UnpackedEmptyLists(nn.Module):
    """`ys, ps = [], []` grown in a runtime loop: each `[]` is a list like `ys = []`."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(8, 8)

    def forward(self, x):
        gates = x[0, :4].clone()
        h = torch.zeros(1, 8)
        ys, ps = [], []
        for n in range(4):
            h = self.cell(x, h)
            ys.append(h)
            ps.append(h.sum().reshape(1))
            if gates[n] > 0:
                break
        return torch.cat(ys), torch.cat(ps), len(ys)


def test_gate_decisions_in_python_lists():
    check_paths(GateDecisions(), gated([1, 1, 1], [1, -1, 1], [-1, -1, 1], [-1, -1, -1], [1, 1, -1]))


def test_tensor_and_tuple_conditional_expressions():
    check_paths(TensorBranches(), gated([1, 1, 1, 1], [-1, -1, -1, 1], [1, -1, -1, -1], [-1, 1, 1, -1]))


def test_tuple_unpacked_empty_lists_grow_at_runtime():
    check_paths(UnpackedEmptyLists(), gated([-1, -1, 1, 0], [1, 0, 0, 0], [-1, 1, 0, 0], [-1, -1, -1, 1], [-1, -1, -1, -1]), all_branches=False)


class ShortCircuit(nn.Module):
    """`and`/`or` compute an operand only when the ones before it do not decide: `q[0]` of a
    list that may be empty is never read then; `k or 3` is k's value or 3."""

    def forward(self, x):
        q = []
        for i in range(3):
            if x[0, i] > 0:
                q.append(x * i)
        k = int(x[0, 3].item() > 0) * 2
        fallback = k or 3
        if len(q) > 0 and q[0].sum() > 0:
            return x * fallback, len(q)
        if len(q) == 0 or q[-1].mean() < -1:
            return -x, fallback
        return x, len(q) + fallback


def test_and_or_compute_operands_as_python_does():
    check_paths(ShortCircuit(), gated([-1, -1, -1, 1], [-1, -1, -1, -1], [1, 1, -1, 1], [-1, 5, 0, -1], [-1, -1, 3, 1]), all_branches=False)


class MixedTruthAsValue(nn.Module):
    def forward(self, x):
        n = int(x.sum().item() > 0)
        y = n > 0 and x.sum() > 1  # REFUSED
        return y


class NoneOnOnePath(nn.Module):
    """None on one path: returned as None there (values.Maybe)."""

    def forward(self, x):
        y = x * 2 if x.sum() > 0 else None
        return x, y


class NoneOnOnePathComputedWith(nn.Module):
    def forward(self, x):
        y = x * 2 if x.sum() > 0 else None
        return x + y  # REFUSED


class ChangesInBranch(nn.Module):
    def forward(self, x):
        outs = [x]
        y = outs.pop() if x.sum() > 0 else x  # REFUSED
        return y


@pytest.mark.parametrize(
    "cls, construct",
    [
        (NoneOnOnePathComputedWith, "is None on some paths"),
        (ChangesInBranch, "inside a conditional expression"),
        (MixedTruthAsValue, "one of its operands, a bool or a tensor depending on the path"),
    ],
)
def test_conditional_expressions_that_cannot_be_joined_are_refused(cls, construct):
    refused(cls(), (torch.randn(1, 8),), construct, marked_line(cls))


def test_none_on_one_path_is_returned_as_none_there():
    check_paths(NoneOnOnePath(), [(torch.ones(1, 8),), (-torch.ones(1, 8),)])
