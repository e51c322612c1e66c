"""Comprehensions, generator expressions and the builtins that consume them over host lists
and module lists (issue 13.4): `[head(h) for head in self.heads]`, `sum([l > t for l in
lengths])`, `any(...)`, `all(...)`, `max(range(n), key=lambda i: scores[i])`."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import dycl
from tests.frontend.helpers import max_abs_error
from tests.frontend.test_desugar_support import check_paths, marked_line, refused, scaled_inputs, seeded  # noqa: F401 (autouse fixture)


def gated(*gates, width=8):
    inputs = []
    for k, row in enumerate(gates):
        x = torch.randn(1, width, generator=torch.Generator().manual_seed(k))
        x[0, : len(row)] = torch.tensor(row, dtype=torch.float32)
        inputs.append((x,))
    return inputs


class MultiHead(nn.Module):
    """Heads over one trunk, `any` over a generator, `max(range(n), key=...)` on tensor scores."""

    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(8, 8)
        self.heads = nn.ModuleList(nn.Linear(8, 4) for _ in range(3))
        self.threshold = 0.35

    def forward(self, x):
        h = torch.tanh(self.trunk(x))
        logits = [head(h) for head in self.heads]
        scores = torch.stack([F.softmax(l, 1).max() for l in logits])
        if any(scores[i] > self.threshold for i in range(len(self.heads))):
            k = max(range(len(self.heads)), key=lambda j: scores[j])
            return logits[k], k
        return torch.stack(logits).mean(0), -1


class HostScalars(nn.Module):
    """Lengths as Python ints from `.tolist()`/`.item()`: counting, sums, all(), min/max."""

    def forward(self, x):
        lengths = [int((x[0, i] * 4).round().item()) for i in range(4)]
        t = int(x[0, 4].round().item())
        batch = sum([l > t for l in lengths])
        total = sum(l for l in lengths if True)
        longest = max(lengths)
        shortest = min(lengths[0], lengths[1], 3)
        if all(l >= 0 for l in lengths):
            return x * batch + total, longest, shortest
        return x - batch, longest, shortest


class ItemKeys(nn.Module):
    """A decoder's argmax in plain Python over `.item()` keys (floats on the host)."""

    def __init__(self):
        super().__init__()
        self.out = nn.Linear(8, 5)

    def forward(self, x):
        logits = self.out(x)
        best = max(range(5), key=lambda k: logits[0, k].item())
        worst = min(range(5), key=lambda k: logits[0, k].item())
        if best == 2:
            return logits * 2, best, worst
        return logits, best, worst


class ComprehensionForms(nn.Module):
    """Indexing in a comprehension, nested generators, constant filters, tuple targets,
    a comprehension over a list of tensors built in an unrolled loop and over tensor rows,
    a dict comprehension inside a run."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(3))

    def forward(self, x):
        feats = []
        for block in self.blocks:
            x = torch.tanh(block(x))
            feats.append(x)
        picked = torch.stack([x[0, i] for i in range(3)])
        scale = x.sum().item()
        scaled = [f * scale for f in feats]
        pairs = [a * b for a, b in zip(feats, scaled) if a is not None]
        grid = [f[0, j] * scale for f in feats for j in range(2) if j != 1]
        rows = [r.sum() * scale for r in torch.stack(feats)]
        named = {k: f * 2 for k, f in enumerate([x, x * 2, x * 3])}[1]  # all tensors: inside a run
        n = len([f for f in feats])
        if scale > 0:
            return picked, torch.stack(pairs), torch.stack(grid), torch.stack(rows), named, n
        return picked * 2, torch.stack(pairs), torch.stack(grid), torch.stack(rows), named * 2, n


class TruthOfMixedValues(nn.Module):
    def forward(self, x):
        flags = [x.sum().item() > 0, x.max().item() > 1.0]
        checks = [x[0, 0] > 0, x[0, 1] > 0]
        if all(flags) or any(checks):
            return x * 2
        if any([]) or not all([]):
            return x * 3
        return x


def test_module_list_heads_any_and_max_key():
    check_paths(MultiHead(), scaled_inputs(1, 8, scales=(-10.0, -3.0, -1.0, -0.3, 0.0, 0.3, 1.0, 3.0, 10.0), seeds=(0, 1, 2)))


def test_host_scalar_lengths():
    inputs = [(torch.tensor([[0.5, 0.25, 0.75, 0.0, 0.2, 0, 0, 0]]),), (torch.tensor([[1.0, 0.5, -0.5, 0.25, 0.6, 0, 0, 0]]),),
              (torch.tensor([[-1.0, 0.5, 0.5, 0.25, -0.4, 0, 0, 0]]),)]
    check_paths(HostScalars(), inputs)


def test_max_with_item_keys_is_the_first_best_index():
    inputs = scaled_inputs(1, 8) + [(torch.tensor([[1.0, 3.0, 3.0, -1.0, 0, 0, 0, 0]]),)]
    check_paths(ItemKeys(), inputs, all_branches=False)


def test_comprehension_forms():
    check_paths(ComprehensionForms(), scaled_inputs(1, 8))


def test_truth_values_of_mixed_items():
    check_paths(TruthOfMixedValues(), gated([1, 1], [-1, 1], [1, -1], [-1, -1], [2, -1]), all_branches=False)


class KeyedChoice(nn.Module):
    def forward(self, x):
        best = max(range(5), key=lambda k: x[0, k].item())
        worst = min(range(5), key=lambda k: x[0, k])
        return best, worst


def test_max_key_ties_and_nan_follow_python():
    inputs = [
        (torch.tensor([[0.0, 1.0, 1.0, float("nan"), -1.0]]),),
        (torch.tensor([[float("nan"), 1.0, 1.0, 2.0, -1.0]]),),
        (torch.tensor([[3.0, 3.0, -1.0, -1.0, 0.0]]),),
    ]
    check_paths(KeyedChoice(), inputs, all_branches=False)


class Copies(nn.Module):
    """`list(a)` is a new list: a change to `a` does not reach it (nor `tuple(a)`)."""

    def forward(self, x):
        y = x + 1
        a = [x, y]
        b = a
        c = list(a)
        t = tuple(a)
        a.pop()
        a.append(x * 5)
        return b, c, t, list(t), [v * 2 for v in c]


def test_list_and_tuple_copy():
    check_paths(Copies(), scaled_inputs(1, 8), all_branches=False)


class RenamedLambdaInHelper(nn.Module):
    """A helper with control flow, inlined with its locals renamed: a lambda's parameter
    that shares a local's name stays the lambda's (this raised NameError)."""

    def helper(self, x):
        if x.sum() > 0:
            x = x * 2
        for k in range(2):
            x = x + k
        order = sorted(range(3), key=lambda k: float(k))
        return x * order[-1]

    def forward(self, x):
        y = self.helper(x)
        return y


def test_lambda_parameters_keep_their_names_when_a_helper_is_inlined():
    check_paths(RenamedLambdaInHelper(), scaled_inputs(1, 8))


def test_end_to_end_on_onnxruntime():
    model = MultiHead().eval()
    inputs = scaled_inputs(1, 8, scales=(-10.0, -1.0, 0.0, 1.0, 10.0))
    compiled = dycl.compile(model, inputs[0], backend="onnxruntime", progress=False)
    for args in inputs:
        with torch.no_grad():
            assert max_abs_error(model(*args), compiled(*args)) <= 1e-4


class RuntimeFilter(nn.Module):
    def forward(self, x):
        scores = [x[0, 0], x[0, 1]]
        scale = x.sum().item()
        kept = [s * scale for s in scores if s > 0]  # REFUSED
        return kept


class GeneratorAsValue(nn.Module):
    def forward(self, x):
        scale = x.sum().item()
        gen = (x * k * scale for k in range(3))  # REFUSED
        return torch.stack(list(gen))


class OverRuntimeList(nn.Module):
    def forward(self, x):
        outs = []
        for i in range(3):
            if x[0, i] > 0:
                outs.append(x * i)
        total = sum(o.sum() for o in outs)  # REFUSED
        return total


class SetOfRuntimeValues(nn.Module):
    def forward(self, x):
        values = {int(v) for v in x[0].tolist()}  # REFUSED
        return x * len(values)


class MaxOfModules(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleList(nn.Linear(8, 2) for _ in range(2))

    def forward(self, x):
        best = max(self.heads, key=lambda h: h(x).sum())  # REFUSED
        return best(x)


@pytest.mark.parametrize(
    "cls, construct, hint",
    [
        (RuntimeFilter, "comprehension filter `if s > 0` on a runtime value", "out.append"),
        (GeneratorAsValue, "generator expression", "list comprehension"),
        # (compiled once per length of `outs`: no item makes `total` the int 0)
        (OverRuntimeList, "a Python int on one path and a float32 tensor", "same kind"),
        (SetOfRuntimeValues, "set comprehension over values computed at runtime", "list comprehension"),
        (MaxOfModules, "chooses among values that are not numbers or tensors", "max(range(n), key=...)"),
    ],
)
def test_comprehensions_that_cannot_keep_their_meaning_are_refused(cls, construct, hint):
    refused(cls(), (torch.randn(1, 8),), construct, marked_line(cls), hint)
