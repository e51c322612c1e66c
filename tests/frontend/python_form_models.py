"""Models for test_python_forms.py: the small Python forms of issue 34 (items 5 and 9) on
runtime values, written as published code writes them."""

from __future__ import annotations

import torch
from torch import nn


class ConfidenceGate(nn.Module):
    """An early-exit classifier reading its per-row confidences as Python floats
    (`.tolist()` of a float tensor), then gating on the first."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(6, 4)

    def forward(self, x):
        confidences = self.head(x).softmax(-1).max(-1).values.tolist()
        if confidences[0] > 0.4:
            return x * confidences[1]
        return x - sum(confidences)


def gate_inputs():
    torch.manual_seed(3)
    return [(torch.randn(3, 6) * scale,) for scale in (0.1, 5.0, 1.0, 8.0)]


class BeamPick(nn.Module):
    """A beam search step keeping the best beam: `scores.index(max(scores))` of the beams'
    float scores (`.tolist()`), then the beam at that index."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(5, 5)

    def forward(self, beams):
        scores = self.proj(beams).log_softmax(-1).max(-1).values.tolist()
        best = scores.index(max(scores))
        return beams[best] * scores[best]


def beam_inputs():
    torch.manual_seed(4)
    return [(torch.randn(4, 5) * 3,) for _ in range(6)] + [(torch.zeros(4, 5),)]


class EosPosition(nn.Module):
    """A decoder's output cut at its end token: `ids.index(eos)` of the greedy token ids
    (`.tolist()` of an int tensor); eager's ValueError where no token is the end token."""

    eos = 2

    def forward(self, logits):
        ids = logits.argmax(-1).tolist()
        end = ids.index(self.eos)
        return logits[end]


def eos_inputs():
    def row(token):
        return torch.nn.functional.one_hot(torch.tensor(token), 4).float()
    return [(torch.stack([row(t) for t in tokens]),) for tokens in ([1, 2, 3], [2, 0, 2], [3, 3, 2], [0, 2, 1])]


class KeptDetections(nn.Module):
    """Detections kept by their score (`[d for d in dets if d[-1] > threshold]`), averaged,
    or zeros when none is kept (`if len(kept) == 0`)."""

    threshold = 0.5

    def forward(self, dets):
        kept = [d for d in dets if d[-1] > self.threshold]
        if len(kept) == 0:
            return dets.new_zeros(dets.size(1))
        return torch.stack(kept).mean(0) * len(kept)


def detection_inputs():
    torch.manual_seed(5)
    dets = [torch.rand(5, 4) for _ in range(3)]
    dets[1][:, -1] = torch.tensor([0.9, 0.1, 0.8, 0.7, 0.2])
    dets[2][:, -1] = torch.tensor([0.1, 0.2, 0.9, 0.3, 0.4])
    return [(d,) for d in dets] + [(torch.zeros(5, 4),), (torch.ones(5, 4),)]


class GreedyTokensScaled(nn.Module):
    """Greedy decoding until a score drops (a list of runtime length), then a comprehension
    over the collected scores (`[s * self.scale for s in scores]`)."""

    scale = 0.5

    def forward(self, x):
        scores = []
        step = 0
        while step < x.size(0) and x[step].sum() > 0:
            scores.append(x[step].max().item())
            step += 1
        scaled = [s * self.scale + 1 for s in scores]
        return torch.tensor(scaled + [0.0])


def greedy_inputs():
    torch.manual_seed(6)
    ones = torch.ones(4, 3)
    return [(torch.cat([ones[:k], -ones[k:]]) * torch.rand(4, 3),) for k in (2, 0, 4, 1)]


class ExpertCounts(nn.Module):
    """An MoE dispatcher's bookkeeping: the experts whose gate fires
    (`.nonzero().flatten().tolist()`, a list of runtime length), their slots
    (`[i + 1 for i in chosen]`) as a tensor, and the total load."""

    def forward(self, gates):
        chosen = (gates > 0).nonzero().flatten().tolist()
        slots = [i + 1 for i in chosen]
        load = torch.tensor(slots, dtype=torch.long)
        return load, load.sum() + len(chosen)


def expert_inputs():
    return [(torch.tensor(g),) for g in ([1.0, -1.0, 2.0, 3.0, -2.0, 1.0], [-1.0] * 6, [0.5, -1, -1, -1, -1, -1], [1.0] * 6)]


class ReversedScan(nn.Module):
    """A right-to-left scan over a numpy copy of the scores, as Python floats
    (`for v in reversed(x.numpy())`), back into a tensor (`torch.tensor(out)`)."""

    def forward(self, x):
        out = []
        running = 0.0
        for v in reversed(x.detach().cpu().numpy()):
            running = max(running, float(v))
            out.append(running)
        return torch.tensor(out)


def reversed_inputs():
    torch.manual_seed(7)
    return [(torch.randn(5),) for _ in range(3)] + [(-torch.ones(5),)]


class ZeroDropped(nn.Module):
    """Rows whose score is not positive zeroed, one by one, in order: the indices from a
    mask (`(~kept).nonzero().flatten().tolist()`), the mask form of
    `sorted(set(range(n)) - set(keep))` (`UnfinishedRows`)."""

    def forward(self, x):
        kept = x.sum(1) > 0
        out = x.clone()
        dropped = (~kept).nonzero().flatten().tolist()
        for i in dropped:
            out[i] = 0
        return out


def dropped_inputs():
    torch.manual_seed(8)
    return [(torch.randn(5, 3),) for _ in range(3)] + [(torch.ones(5, 3),), (-torch.ones(5, 3),)]


class UnfinishedRows(nn.Module):
    """A batch decoder's bookkeeping with Python sets (issue 34, item 9.2): the rows not
    finished yet, `set(range(b)) - set(finished)`, visited in order (`for i in
    sorted(todo)`), and how many are left."""

    def forward(self, x):
        finished = (x.sum(1) > 0).nonzero().flatten().tolist()
        todo = set(range(x.size(0))) - set(finished)
        out = x.clone()
        for i in sorted(todo):
            out[i] = out[i] * 0.5 + i
        return out, len(todo)


def unfinished_inputs():
    torch.manual_seed(9)
    return [(torch.randn(5, 3),) for _ in range(3)] + [(torch.ones(5, 3),), (-torch.ones(5, 3),)]


class ExpertSets(nn.Module):
    """Routing bookkeeping: the experts two gates pick (runtime lists of indices), as sets
    combined by `&`, `|`, `^` and `-`, tested with `in`, and back to tensors through
    `sorted(...)`."""

    def forward(self, g1, g2):
        first = set((g1 > 0).nonzero().flatten().tolist())
        second = set((g2 > 0).nonzero().flatten().tolist())
        both, either, one = first & second, first | second, first ^ second
        only_first = first - second
        shared = torch.tensor(sorted(both) + [-1], dtype=torch.long)
        bonus = 1.0 if 4 in either else 0.0
        return shared, len(either), len(one) * 10 + len(only_first), bonus


def expert_set_inputs():
    rows = ([1.0, -1.0, 2.0, 3.0, -2.0, 1.0], [-1.0] * 6, [1.0] * 6, [-1.0, 1.0, -1.0, 1.0, -1.0, 1.0])
    return [(torch.tensor(a), torch.tensor(b)) for a, b in zip(rows, rows[1:] + rows[:1])] + [(torch.tensor(rows[0]), torch.tensor(rows[0]))]


class SortedPositions(nn.Module):
    """`sorted()` of a runtime list of ints (a list of runtime length): the picked positions
    scrambled (`(7 * i) % 6`), sorted ascending and descending (`reverse=True`)."""

    def forward(self, x):
        picked = (x > 0).nonzero().flatten().tolist()
        scrambled = [(7 * i) % 6 - i // 2 for i in picked]
        ordered = sorted(scrambled)
        return torch.tensor(ordered + sorted(picked, reverse=True) + [9], dtype=torch.long)


def sorted_inputs():
    return [(torch.tensor(v),) for v in ([1.0, -1.0, 2.0, 3.0, -2.0, 1.0], [-1.0] * 6, [1.0] * 6, [0.5, -1, -1, -1, -1, 2])]


class SecondEndToken(nn.Module):
    """A decoder's output between its first two end tokens: `ids.index(eos, first + 1)`
    starts after the first (a runtime start), `ids.index(eos, 1)` after position 0."""

    eos = 2

    def forward(self, logits):
        ids = logits.argmax(-1).tolist()
        first = ids.index(self.eos)
        second = ids.index(self.eos, first + 1)
        from_one = ids.index(self.eos, 1, len(ids))
        return logits[second] * (second - first), from_one


def second_end_inputs():
    def row(token):
        return torch.nn.functional.one_hot(torch.tensor(token), 4).float()
    return [(torch.stack([row(t) for t in tokens]),) for tokens in ([2, 2, 3, 1], [0, 2, 1, 2], [2, 0, 3, 2], [1, 2, 2, 0])]


class ReversedNumpyScores(nn.Module):
    """Right-to-left over a numpy copy: `x.detach().numpy()[::-1]` iterated, and the
    reversed array back in torch (`torch.from_numpy(a[::-1].copy())`)."""

    def forward(self, x):
        scores = x.detach().cpu().numpy()
        best, out = -1e9, []
        for v in scores[::-1]:
            best = max(best, float(v.max()))
            out.append(best)
        flipped = torch.from_numpy(scores[::-1].copy())
        return torch.tensor(out), flipped * 2


def reversed_numpy_inputs():
    torch.manual_seed(10)
    return [(torch.randn(4, 3),) for _ in range(3)] + [(-torch.ones(4, 3),)]
