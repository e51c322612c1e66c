"""Loops whose carried values change kind, and aliases made on one path, written the way the
batch-ACT ports of 2017-2019 write them (Graves' Adaptive Computation Time): `ByteTensor`
masks that come back `bool` (`selector = x.data.new(b).byte()`, then `selector = (accum <
1 - eps).data`), `Variable(x.data.new(b, h).zero_())`, `cx = hx` when no LSTM state is given
and `hx[idx], cx[idx] = cell(...)` on the rows still running."""

from __future__ import annotations

import torch
from torch import nn
from torch.autograd import Variable


def _halting_on_first_feature(linear: nn.Linear) -> None:
    """The halting unit reads the input's first feature only (sigmoid(4 x0)): x0 = 2 halts
    at once, x0 = 0 after two steps, x0 = -2 runs to the step limit."""
    with torch.no_grad():
        linear.weight.zero_()
        linear.weight[0, 0] = 4.0
        linear.bias.zero_()


class ByteMaskWhile(nn.Module):
    """A `while` over halting steps whose mask enters as uint8 (rows that are not padding,
    `.byte()`) and comes back bool (`halting < 1 - eps`); `ever | running` stays uint8. A
    batch of padding rows never enters the loop: the mask is still uint8 after it, and
    `~running` is the bitwise not of a byte there."""

    def __init__(self, size=4, hidden=6, max_steps=5, eps=0.01):
        super().__init__()
        self.hidden = hidden
        self.cell = nn.GRUCell(size, hidden)
        self.halt = nn.Linear(size + hidden, 1)
        self.max_steps, self.eps = max_steps, eps
        _halting_on_first_feature(self.halt)

    def forward(self, x):
        batch_size = x.size(0)
        hx = Variable(x.data.new(batch_size, self.hidden).zero_())
        running = (x.abs().sum(1) > 0).byte()  # (padding rows never run)
        halting = 1 - Variable(running.data.float())
        steps = x.new_zeros(batch_size)
        ever = x.data.new(batch_size).zero_().byte()
        n = 0
        while running.any() and n < self.max_steps:
            idx = running.nonzero().squeeze(1)
            hx[idx] = self.cell(x[idx], hx[idx])
            p = torch.sigmoid(self.halt(torch.cat([x[idx], hx[idx]], 1))).squeeze(1)
            halting[idx] += p
            steps[idx] += 1
            ever = ever | running
            running = (halting < 1 - self.eps).data
            n += 1
        return hx, steps, running.sum(), (~running).sum(), ever.float() * 2


class ByteMaskFor(nn.Module):
    """A `for _ in range(n)` with no `break` (an `scf.for`) whose mask enters as uint8 and
    comes back bool; the rows still running are updated through the mask as a float."""

    def __init__(self, size=4, hidden=6, steps=4, eps=0.01):
        super().__init__()
        self.cell = nn.GRUCell(size, hidden)
        self.halt = nn.Linear(size + hidden, 1)
        self.steps, self.eps = steps, eps
        _halting_on_first_feature(self.halt)

    def forward(self, x):
        batch_size = x.size(0)
        hx = x.new_zeros(batch_size, self.cell.hidden_size)
        halting = x.new_zeros(batch_size)
        mask = torch.ones(batch_size).byte()
        for _ in range(self.steps):
            live = mask.float().unsqueeze(1)
            hx = live * self.cell(x, hx) + (1 - live) * hx
            halting = halting + mask.float() * torch.sigmoid(self.halt(torch.cat([x, hx], 1))).squeeze(1)
            mask = halting < 1 - self.eps
        return hx, halting, mask.sum()


class OnePathAlias(nn.Module):
    """`cx = hx` when no state is given, two tensors when it is; then `hx[idx], cx[idx] =
    self.cell(...)` on the rows with a positive first feature writes one tensor twice on the
    first path (both hold the cell state there, as in eager) and two on the other."""

    def __init__(self, size=4, hidden=6):
        super().__init__()
        self.cell = nn.LSTMCell(size, hidden)

    def forward(self, x, state=None):
        if state is None:
            hx = Variable(x.data.new(x.size(0), self.cell.hidden_size).zero_())
            cx = hx
        else:
            hx, cx = state
            hx, cx = hx.clone(), cx.clone()
        idx = (x[:, 0] > 0).nonzero().squeeze(1)
        hx[idx], cx[idx] = self.cell(x[idx], (hx[idx], cx[idx]))
        hx += 1
        return hx, cx


class OnePathAliasSteps(nn.Module):
    """`cx = hx` on one path, then a `while` over halting steps that writes both through the
    live rows (`hx[idx], cx[idx] = ...`), and the published ACT's mask that enters as uint8."""

    def __init__(self, size=4, hidden=6, max_steps=4, eps=0.01):
        super().__init__()
        self.cell = nn.LSTMCell(size, hidden)
        self.halt = nn.Linear(size + hidden, 1)
        self.max_steps, self.eps = max_steps, eps
        _halting_on_first_feature(self.halt)

    def forward(self, x, hx=None):
        batch_size = x.size(0)
        if hx is None:
            hx = Variable(x.data.new(batch_size, self.cell.hidden_size).zero_())
            cx = hx
        else:
            hx, cx = hx
            hx, cx = Variable(hx.data.clone()), Variable(cx.data.clone())
        accum_h = Variable(x.data.new(batch_size).zero_())
        step_count = Variable(x.data.new(batch_size).zero_())
        selector = x.data.new(batch_size).fill_(1).byte()
        step = 0
        while step < self.max_steps:
            idx = selector.nonzero().squeeze(1)
            hx[idx], cx[idx] = self.cell(x[idx], (hx[idx], cx[idx]))
            accum_h[idx] += torch.sigmoid(self.halt(torch.cat([x[idx], hx[idx]], 1))).squeeze(1)
            step_count[idx] += 1
            selector = (accum_h < 1 - self.eps).data
            if not selector.any():
                break
            step += 1
        return hx, cx, step_count


class PonderOneTensor(nn.Module):
    """The published batch ACT's ponder loop, one time step: `cx = hx` when no state is
    given, `for act_step in range(...)` whose mask enters as uint8, writes both names
    through the live rows and `break`s when no row runs; after the loop both names are
    rebound (nothing reads them on the `break` path: they stay one tensor in the loop)."""

    def __init__(self, size=4, hidden=6, max_ponder=6, eps=0.01):
        super().__init__()
        self.cell = nn.LSTMCell(size, hidden)
        self.halt = nn.Linear(size + hidden, 1)
        self.max_ponder, self.eps = max_ponder, eps
        _halting_on_first_feature(self.halt)

    def forward(self, x, hx=None):
        batch_size = x.size(0)
        if hx is None:
            hx = Variable(x.data.new(batch_size, self.cell.hidden_size).zero_())
            cx = hx
        else:
            hx, cx = [Variable(h.data.clone()) for h in hx]
        accum_h = Variable(x.data.new(batch_size).zero_())
        accum_hx = Variable(x.data.new(batch_size, self.cell.hidden_size).zero_())
        step_count = Variable(x.data.new(batch_size).zero_())
        selector = x.data.new(batch_size).fill_(1).byte()
        for act_step in range(self.max_ponder):
            idx = selector.nonzero().squeeze(1)
            hx[idx], cx[idx] = self.cell(x[idx], (hx[idx], cx[idx]))
            accum_hx[idx] += hx[idx] + cx[idx]
            accum_h[idx] += torch.sigmoid(self.halt(torch.cat([x[idx], hx[idx]], 1))).squeeze(1)
            step_count[idx] += 1
            selector = (accum_h < 1 - self.eps).data
            if not selector.any():
                break
        hx = accum_hx / step_count.unsqueeze(1)
        cx = hx * 0.5
        return hx, cx, step_count


class PonderTimeSteps(PonderOneTensor):
    """The published batch ACT over time steps (`PonderOneTensor`'s ponder loop in each):
    `hx = accum_hx / step_count` is appended to `hx_list` at the end of a time step, and the
    next time step's ponder loop writes rows of that very tensor (`hx[idx], cx[idx] = ...`),
    so eager's `hx_list[0]` changes with them: the list's item follows `hx` through the
    runtime loop. Up to 40 ponder steps: too many to unroll."""

    def __init__(self, size=4, hidden=6, max_ponder=40, eps=0.01):
        super().__init__(size, hidden, max_ponder, eps)

    def forward(self, input_, hx=None):
        batch_size = input_.size(1)
        if hx is None:
            hx = Variable(input_.data.new(batch_size, self.cell.hidden_size).zero_())
            cx = hx
        else:
            hx, cx = [Variable(h.data.clone()) for h in hx]
        hx_list, ponder_steps = [], []
        for x in input_:
            accum_h = Variable(x.data.new(batch_size).zero_())
            accum_hx = Variable(x.data.new(batch_size, self.cell.hidden_size).zero_())
            step_count = Variable(x.data.new(batch_size).zero_())
            selector = x.data.new(batch_size).fill_(1).byte()
            for act_step in range(self.max_ponder):
                idx = selector.nonzero().squeeze(1)
                hx[idx], cx[idx] = self.cell(x[idx] + act_step * 0.01, (hx[idx], cx[idx]))
                accum_hx[idx] += hx[idx] + cx[idx]
                accum_h[idx] += torch.sigmoid(self.halt(torch.cat([x[idx], hx[idx]], 1))).squeeze(1)
                step_count[idx] += 1
                selector = (accum_h < 1 - self.eps).data
                if not selector.any():
                    break
            ponder_steps.append(step_count.clone())
            hx = accum_hx / step_count.unsqueeze(1)
            cx = hx * 0.5
            hx_list.append(hx)
        return torch.stack(hx_list), torch.stack(ponder_steps)


class KindReturned(nn.Module):
    """Refused: the mask itself leaves forward, a uint8 tensor where the loop never ran and a
    bool one where it did (one output has one dtype)."""

    def forward(self, x):
        running = (x.abs().sum(1) > 0).byte()
        total = x.new_zeros(x.size(0))
        while running.any():
            total = total + running.float()
            running = total < 2
        return total, running


class KindContinue(nn.Module):
    """Refused: a `continue` in a body whose mask changes kind (its first iteration cannot be
    taken apart behind a flag that the `continue` would skip)."""

    def forward(self, x):
        running = (x.abs().sum(1) > 0).byte()
        total = x.new_zeros(x.size(0))
        n = 0
        while n < 3:
            n += 1
            total = total + running.float()
            running = total < 2
            if total.sum() > 100:
                continue
        return total
