"""Tensor mutation the way published code writes it: masked stores, in-place methods in
branches, stores through views and aliases, `out=`, in-place modules. Each model comes with
inputs that take every path; `REFUSED` lists mutations DyCL must refuse at their line."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class BinarizePolicy(nn.Module):
    """BlockDrop's test-time policy: sigmoid probabilities thresholded in place."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        probs = torch.sigmoid(self.fc(x))
        policy = probs.data.clone()
        policy[policy < 0.5] = 0.0
        policy[policy >= 0.5] = 1.0
        return policy, probs


class ReluInBranch(nn.Module):
    def forward(self, x):
        y = x * 2
        if y.sum() > 0:
            y.relu_()
        return y


class InPlaceChain(nn.Module):
    """add_/mul_/clamp_/sigmoid_ in straight-line code, then a branch on the result."""

    def forward(self, x):
        h = x.clone()
        h.add_(1.0)
        h.mul_(0.5).clamp_(-1.0, 1.0)
        if h.mean() > 0.2:
            h.sigmoid_()
        else:
            h.tanh_()
            h.sub_(0.1)
        return h


class StoreThroughView(nn.Module):
    def forward(self, x):
        y = x * 3
        v = y.view(-1)
        v[0] = 1.0
        if y.sum() > 0:
            row = y[0]
            row.mul_(2)
        return y


class AliasAugAssign(nn.Module):
    """`z = y; z += 1` changes y too; a tensor `+=` is in place, an int `+=` is not."""

    def forward(self, x):
        y = x + 0
        z = y
        z += 1
        n = 0
        n += 1
        if z.max() > 1.5:
            z *= 2
            n += 1
        return y, z, n


class OutArgument(nn.Module):
    def forward(self, x):
        acc = torch.zeros_like(x)
        torch.add(x, 1.0, out=acc)
        if acc.sum() > acc.numel():
            torch.mul(acc, acc, out=acc)
        return acc


class StepwiseStore(nn.Module):
    """A caption-decoder style output buffer filled one step at a time, with early stop."""

    def __init__(self, steps: int = 4):
        super().__init__()
        self.steps = steps
        self.cell = nn.GRUCell(5, 5)
        self.out = nn.Linear(5, 3)

    def forward(self, x):
        predictions = torch.zeros(1, self.steps, 3)
        h = torch.tanh(x)
        for t in range(self.steps):
            h = self.cell(x, h)
            preds = self.out(h)
            predictions[:, t, :] = preds
            if x.mean() < t - 3:
                break
        return predictions


class MaskedFillGate(nn.Module):
    """masked_fill_ / fill_ / zero_ / copy_ / index_put_ under gates."""

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(4, 4)

    def forward(self, x):
        scores = self.gate(x)
        mask = scores < 0
        scores.masked_fill_(mask, -1e4)
        out = torch.empty_like(scores)
        out.copy_(scores)
        if x.max() > 0.5:
            out.index_put_((torch.tensor([0]), torch.tensor([1])), torch.tensor(7.0))
        else:
            out.zero_()
            out[..., 2].fill_(3.0)
        return out, scores


class InplaceReluBlock(nn.Module):
    """ResNet-style block with nn.ReLU(inplace=True) and `out += identity`, gated."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(4, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        identity = x
        out = self.relu(self.conv1(x))
        if x.mean() > 0:
            out = self.conv2(out)
            out += identity
            out = self.relu(out)
        return out


class HelperMutates(nn.Module):
    """A helper method that mutates its argument and returns nothing."""

    def normalize_(self, t):
        t.sub_(t.mean())
        if t.std() > 1.0:
            t.div_(t.std())

    def forward(self, x):
        h = x * 4
        self.normalize_(h)
        return h


class IndexedStores(nn.Module):
    """Stores with an int, a slice, `None`, `...`, a tensor index and `t[i] += v`."""

    def forward(self, x):
        y = x.clone()
        y[0] = 0.5
        y[:, :2] = -1.0
        y[None, 0, 3] = 2.0
        y[..., -1] = y[..., 0]
        idx = torch.tensor([1])
        y[idx, 1] = 9.0
        y[1] += 3.0
        if y.sum() > 10:
            y[:, 2] *= 0.5
        return y


class ViewStoreAcrossBlocks(nn.Module):
    """An exit history written through a view taken before the loop (`v = hist.view(-1)`,
    later `v[i] = c` after each exit test), both names returned."""

    def forward(self, x):
        hist = torch.zeros(1, 3)
        v = hist.view(-1)
        h = x
        for i in range(3):
            h = torch.tanh(h * 2 + i)
            c = h.mean()
            v[i] = c
            if c > 0.5:
                return h, hist, v
        return h, hist, v


class BaseChangedViewRead(nn.Module):
    """The base changes in a branch after the view was taken: the view sees the change."""

    def forward(self, x):
        y = x * 2
        row = y[0, 1:3]
        if y.sum() > 0:
            y[0, 2] = 7.0
            y.mul_(0.5)
        return row, y


class DisjointChunks(nn.Module):
    """`a, b = t.chunk(2, 1)`; an in-place change of `a` in a branch leaves `b` as it was
    and changes `t`."""

    def forward(self, x):
        t = x + 1
        a, b = t.chunk(2, 1)
        if a.sum() > 0:
            a.relu_()
            a.mul_(3)
        return t, a, b


class TransposedViewStore(nn.Module):
    def forward(self, x):
        t = x.reshape(2, 3) * 1.0
        tt = t.t()
        if t.mean() > 0:
            tt[0] = -1.0
        else:
            tt[:, 1] += 5.0
        return t, tt


class ListHeldChangedInPlace(nn.Module):
    """A tensor appended (twice) to a list, then changed in place (`index_put_`, an in-place
    ReLU): the list's items see the change, through every name of the list."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        outs = []
        x = self.fc(x)
        outs.append(x)
        outs.append(x)
        x.index_put_((torch.tensor([0]), torch.tensor([1])), torch.tensor(0.5))
        same = outs
        outs.append(x * 2)
        F.relu(x, inplace=True)
        if x.sum() > 1.0:
            same.append(x)
        return torch.stack(outs[:3]), len(same)


def _vec(*values):
    return torch.tensor([values], dtype=torch.float32)


CASES = {
    "binarize_policy": (BinarizePolicy, [(torch.randn(1, 6),), (torch.randn(1, 6) * 3,)]),
    "relu_in_branch": (ReluInBranch, [(_vec(1.0, -2.0, 3.0),), (_vec(-1.0, 0.5, -3.0),)]),
    "inplace_chain": (InPlaceChain, [(_vec(1.0, 0.5, 0.2),), (_vec(-2.0, -1.0, 0.1),)]),
    "store_through_view": (StoreThroughView, [(_vec(1.0, 2.0, 3.0, 4.0).view(2, 2),), (_vec(-1.0, -2.0, -3.0, -4.0).view(2, 2),)]),
    "alias_aug_assign": (AliasAugAssign, [(_vec(0.1, 0.2),), (_vec(1.0, 0.2),)]),
    "out_argument": (OutArgument, [(_vec(0.5, 1.0),), (_vec(-2.0, 0.5),)]),
    "stepwise_store": (StepwiseStore, [(torch.full((1, 5), v),) for v in (0.5, -0.5, -1.5, -2.5, -3.5)]),
    "masked_fill_gate": (MaskedFillGate, [(_vec(1.0, -1.0, 2.0, 0.5),), (_vec(-0.1, 0.1, 0.0, 0.05),)]),
    "inplace_relu_block": (InplaceReluBlock, [(torch.randn(1, 4, 5, 5) + 1,), (torch.randn(1, 4, 5, 5) - 1,)]),
    "helper_mutates": (HelperMutates, [(_vec(1.0, 2.0, 3.0),), (_vec(0.01, 0.02, 0.0),)]),
    "indexed_stores": (IndexedStores, [(torch.arange(12.0).view(3, 4),), (-torch.arange(12.0).view(3, 4),)]),
    "view_store_across_blocks": (ViewStoreAcrossBlocks, [(torch.full((1, 4), v),) for v in (2.0, 0.1, -0.4, -3.0)]),
    "base_changed_view_read": (BaseChangedViewRead, [(_vec(1.0, 2.0, 3.0, 4.0),), (_vec(-1.0, -2.0, -3.0, -4.0),)]),
    "disjoint_chunks": (DisjointChunks, [(_vec(1.0, 2.0, 3.0, 4.0),), (_vec(-3.0, -2.0, 3.0, 4.0),)]),
    "transposed_view_store": (TransposedViewStore, [(_vec(1.0, 2.0, 3.0, 4.0, 5.0, 6.0),), (-_vec(1.0, 2.0, 3.0, 4.0, 5.0, 6.0),)]),
    "list_held_changed_in_place": (ListHeldChangedInPlace, [(_vec(1.0, 2.0, 3.0, 4.0),), (-_vec(1.0, 2.0, 3.0, 4.0),)]),
}


# ----- refused: mutations whose effect reaches beyond what a compiled model can return ------


class MutatesInput(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x.relu_()  # line marker: mutates-input
        return x * 2


class MutatesWeight(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(3))

    def forward(self, x):
        self.scale.data.mul_(0.9)  # line marker: mutates-weight
        return x * self.scale


class MutatesListedTensor(nn.Module):
    def forward(self, x):
        h = x * 2
        outs = []
        for _ in range(2):
            outs.append(h)
            if h.sum() > 0:
                h.mul_(2)  # line marker: listed
        return torch.stack(outs)


class OverlappingViews(nn.Module):
    """Two overlapping column slices, neither of them contiguous, the base no longer named:
    a change through one reaches the other in a way DyCL does not rewrite."""

    def forward(self, x):
        t = x.reshape(2, 3) + 1
        left, right = t[:, :2], t[:, 1:]
        if left.sum() > 0:
            left.mul_(2)  # line marker: overlapping
        return left, right


REFUSED = {
    "mutates_input": (MutatesInput, (torch.ones(1, 3),), "mutates-input", "forward input `x`"),
    "mutates_weight": (MutatesWeight, (torch.ones(1, 3),), "mutates-weight", "`self.scale`"),
    "mutates_listed_tensor": (MutatesListedTensor, (torch.ones(1, 3),), "listed", "the list `outs`"),
    "overlapping_views": (OverlappingViews, (torch.ones(1, 6),), "overlapping", "a different view of the same tensor"),
}


class PathDependentAlias(nn.Module):
    """`z` is `y` on one path and a copy on the other, then changed in place in the same
    block: the `if` compiles `z.add_(1.0)` in each arm, where it changes `y` too or not, as
    in eager (joins.compile_if)."""

    def forward(self, x):
        y = x * 2
        if y.sum() > 0:
            z = y
        else:
            z = y.clone()
        z.add_(1.0)
        return y, z


CASES["path_dependent_alias"] = (PathDependentAlias, [(_vec(1.0, 0.5, -0.2),), (_vec(-1.0, 0.5, -0.2),)])


class LoopMutatesAlias(nn.Module):
    """A tensor and its alias, mutated in place inside a runtime loop."""

    def forward(self, x, n: int):
        acc = x * 0
        total = acc
        step = 0
        while step < 6 and step < n:
            acc.add_(x)
            step += 1
        return total, acc


CASES["loop_mutates_alias"] = (
    LoopMutatesAlias,
    [(torch.ones(1, 3), 3), (torch.ones(1, 3), 0), (torch.ones(1, 3), 9)],
)


class LoopRebindsAlias(nn.Module):
    def forward(self, x, n: int):
        h = x * 1
        start = h
        step = 0
        while step < 6 and step < n:
            h.mul_(2)  # line marker: loop-alias
            h = h + 1
            step += 1
        return start, h


REFUSED["loop_rebinds_alias"] = (LoopRebindsAlias, (torch.ones(1, 3), 2), "loop-alias", "on some paths only")


class LoopMutatesDeadAlias(nn.Module):
    """As LoopRebindsAlias, but nothing reads `start` again (an inlined helper's result
    variable is such an alias): the loop need not follow it, and compiles."""

    def forward(self, x, n: int):
        h = x * 1
        start = h
        h = start
        step = 0
        while step < 6 and step < n:
            h.mul_(2)
            h = h + 1
            step += 1
        return h


CASES["loop_mutates_dead_alias"] = (
    LoopMutatesDeadAlias,
    [(torch.ones(1, 3), 2), (torch.ones(1, 3), 0), (torch.ones(1, 3), 9)],
)


class HostOperandAlias(nn.Module):
    """`z += k` with a runtime Python float: still in place, so the alias `y` changes too."""

    def forward(self, x):
        y = x * 2
        z = y
        k = float(x.sum())
        z += k
        return y, z


CASES["host_operand_alias"] = (HostOperandAlias, [(_vec(0.5, -1.0, 2.0),), (_vec(-3.0, 0.5, 0.25),)])


class StoreAtRuntimeIndex(nn.Module):
    """Stores at an int read off a tensor (export would freeze an example index of 0 or 1
    if the store went through `__setitem__`); `h * k` with the same int is plain arithmetic."""

    def forward(self, x):
        y = x.clone()
        k = int(x.argmax())
        y = y * k
        y[0, k] = 5.0
        y[:, k] += x[:, k]
        y[0, k].mul_(0.5)
        return y


CASES["store_at_runtime_index"] = (
    StoreAtRuntimeIndex,
    [(torch.tensor([[0.9, 0.1, 0.3]]),), (torch.tensor([[0.1, 0.9, 0.3]]),), (torch.tensor([[0.1, 0.2, 0.3]]),)],
)


class SavesActions(nn.Module):
    """REINFORCE-style bookkeeping: the module's list grows on every call (state that
    outlives the call: compiled, tests/frontend/test_state.py)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.saved_actions = []

    def forward(self, x):
        probs = torch.softmax(self.fc(x), -1)
        action = probs.argmax(-1)
        self.saved_actions.append(action)  # line marker: saves-actions
        return action


class HelperSetsState(nn.Module):
    """A straight-line helper that rebinds a module attribute: a variable of the call
    (tests/frontend/test_module_attributes.py), so DyCL inlines the helper."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.hidden = None

    def remember(self, h):
        self.hidden = h
        return h * 2

    def forward(self, x):
        h = self.fc(x)
        y = self.remember(h)
        return y


CASES["helper_sets_state"] = (HelperSetsState, [(torch.ones(1, 3),), (-torch.ones(1, 3),)])


class MaskedInPlaceUpdate(nn.Module):
    """Masked read-modify-write (`p[p < 0.5] *= 0.1`, `p[m] = p[m] - 0.05`) through an alias:
    compiled without the data-dependent `p[mask]`, in place, so `q` sees it."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        p = torch.sigmoid(self.fc(x))
        q = p
        p[p < 0.5] *= 0.1
        if p.sum() > 1.5:
            p[p > 0.6] = p[p > 0.6] - 0.05
        counts = torch.zeros(4, dtype=torch.long)
        counts[counts == 0] += 2
        return q, counts


CASES["masked_in_place_update"] = (
    MaskedInPlaceUpdate, [(torch.full((1, 4), v),) for v in (-4.0, 4.0)] + [(torch.randn(1, 4),)],
)


class HelperMaskedUpdate(nn.Module):
    """Stores in straight-line helpers: a masked read-modify-write called as a statement
    (DyCL compiles the helper: inside export `x[m]` has a data-dependent size), and a masked
    store inside an expression (the helper runs in the captured block, as `index_put`)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def squash(self, x):
        x = F.gelu(self.fc(x))
        x[x.abs() > 0.5] = x[x.abs() > 0.5] * 0.5
        return x

    def binarize(self, p):
        p = p.clone()
        p[p >= 0.5] = 1.0
        return p

    def forward(self, x):
        h = self.squash(x)
        y = torch.tanh(self.binarize(torch.sigmoid(h)))
        if y.sum() > 2.0:
            h = h * 2
        return h, y


CASES["helper_masked_update"] = (HelperMaskedUpdate, [(_vec(0.5, -1.0, 2.0),), (_vec(-3.0, 0.5, 0.25),), (_vec(3.0, 3.0, 3.0),)])
