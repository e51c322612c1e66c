"""Adaptive computation (ACT, PonderNet, Universal Transformer halting) and mixture-of-experts
routing, written the way their reference implementations are written."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

from tests.frontend.moe_dispatch_models import SparseDispatcher  # davidmrau/mixture-of-experts' dispatcher, as published
from tests.frontend.research.common import images, randn


class ACTHalting(nn.Module):
    """Graves' ACT: cumulative halting probability updated in place (`halting_prob += p`),
    the remainder taken when it would pass 1 - eps, `break`."""

    N_PATHS = 4
    CONSTRUCTS = ('augassign',)
    WEIGHT_SEED = 7

    def __init__(self, hidden=8):
        super().__init__()
        self.hidden = hidden
        self.cell = nn.RNNCell(8 + 1, hidden)
        self.halt = nn.Linear(hidden, 1)
        self.max_ponder = 4
        self.eps = 0.2

    def forward(self, x):
        h = x.new_zeros(1, self.hidden)
        halting_prob = x.new_zeros(1)
        remainders = x.new_zeros(1)
        out = x.new_zeros(1, self.hidden)
        n_updates = 0
        for n in range(self.max_ponder):
            flag = x.new_ones(1, 1) if n == 0 else x.new_zeros(1, 1)
            h = self.cell(torch.cat([x, flag], 1), h)
            p = torch.sigmoid(self.halt(h)).squeeze(1)
            n_updates += 1
            if (halting_prob + p).item() > 1 - self.eps or n == self.max_ponder - 1:
                remainders = 1 - halting_prob
                out = out + remainders * h
                break
            halting_prob += p
            out = out + p * h
        return out, n_updates, remainders

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 10.0), (20, 10.0), (62, 30.0)], shape=(1, 8))


class ACTNoGradLSTM(nn.Module):
    """Pondering with an LSTMCell whose `state` starts as None; the halting decision computed
    `with torch.no_grad()` and accumulated in a Python float."""

    N_PATHS = 4
    CONSTRUCTS = ('no_grad', 'none-start', 'states-none-tuple')

    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(8, 8)
        self.proj = nn.Linear(8, 4)
        self.halter = nn.Linear(8 + 8, 1)
        self.max_steps = 4
        self.threshold = 0.9

    def forward(self, x):
        state = None
        cum = 0.0
        outputs = []
        for step in range(self.max_steps):
            state = self.cell(x, state)
            h, c = state
            outputs.append(self.proj(h))
            with torch.no_grad():
                halt = torch.sigmoid(self.halter(torch.cat([h, x], 1))).item()
            cum += halt
            if cum >= self.threshold:
                break
        return torch.stack(outputs).mean(0), step + 1, cum

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 10.0), (2, 1.0), (2, 10.0)], shape=(1, 8))


class PonderNetInference(nn.Module):
    """PonderNet at inference: halt when lambda_n passes a threshold; `ys`/`ps` lists, the
    probabilities before the last step reported as `ps[:-1]`."""

    N_PATHS = 4
    CONSTRUCTS = ('slice[:-1]',)

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(8, 8)
        self.output_layer = nn.Linear(8, 3)
        self.lambda_layer = nn.Linear(8, 1)
        self.max_steps = 4
        self.threshold = 0.5

    def forward(self, x):
        h = torch.zeros(x.size(0), 8)
        un_halted_prob = x.new_ones(1)
        ys, ps = [], []
        for n in range(self.max_steps):
            h = self.cell(x, h)
            lambda_n = torch.sigmoid(self.lambda_layer(h)).squeeze()
            ys.append(self.output_layer(h))
            ps.append(un_halted_prob * lambda_n)
            un_halted_prob = un_halted_prob * (1 - lambda_n)
            if lambda_n.item() > self.threshold:
                break
        return torch.cat(ys), torch.cat(ps[:-1]) if len(ps) > 1 else None, len(ys)

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (2, 3.0), (3, 3.0), (4, 3.0)], shape=(1, 8))


class MoETop1(nn.Module):
    """Dense mixture evaluated with a comprehension over the experts, the top-1 output picked
    with `int(gate.argmax())`."""

    N_PATHS = 3
    CONSTRUCTS = ('list-comp',)

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(8, 3)
        self.experts = nn.ModuleList([nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4)) for _ in range(3)])

    def forward(self, x):
        gate = F.softmax(self.gate(x), 1)
        expert_outputs = [e(x) for e in self.experts]
        k = int(gate.argmax())
        y = expert_outputs[k] * gate[0, k]
        return y, k

    @staticmethod
    def path_key(inputs, output, trace):
        return output[1]

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 0.3), (3, 10.0)], shape=(1, 8))


class MoEHardRouting(nn.Module):
    """Hard routing: `k = max(range(len(self.experts)), key=lambda i: gate[0, i].item())`, then
    only `self.experts[k]` runs."""

    N_PATHS = 3
    CONSTRUCTS = ('max-key',)

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(8, 3)
        self.experts = nn.ModuleList([nn.Linear(8, 4), nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 4)), nn.Linear(8, 4)])

    def forward(self, x):
        gate = F.softmax(self.gate(x), dim=1)
        k = max(range(len(self.experts)), key=lambda i: gate[0, i].item())
        return self.experts[k](x) * gate[0, k], k

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 0.3), (3, 10.0)], shape=(1, 8))


class MoETopKMask(nn.Module):
    """Top-2 gating: a boolean mask of the other experts, `gate.masked_fill_(mask, 0.0)`, the
    output a `sum(...)` of a generator over the experts."""

    N_PATHS = 6
    CONSTRUCTS = ('masked_fill_', 'genexp', 'index-assign')

    def __init__(self):
        super().__init__()
        self.k = 2
        self.gate = nn.Linear(8, 4)
        self.experts = nn.ModuleList([nn.Linear(8, 4) for _ in range(4)])

    def forward(self, x):
        gate = F.softmax(self.gate(x), dim=1)
        topk_idx = gate.topk(self.k, dim=1).indices
        mask = torch.ones_like(gate, dtype=torch.bool)
        mask[0, topk_idx[0]] = False
        gate.masked_fill_(mask, 0.0)
        gate = gate / gate.sum(1, keepdim=True)
        out = sum(gate[:, i : i + 1] * e(x) for i, e in enumerate(self.experts))
        return out, topk_idx

    @staticmethod
    def path_key(inputs, output, trace):
        return tuple(sorted(output[1][0].tolist()))

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (1, 1.0), (1, 0.3), (2, 1.0), (3, 10.0), (7, 1.0)], shape=(1, 8))


class RouterNumpyArgsort(nn.Module):
    """Experts run in order of their gate (`np.argsort(-scores)`) until the accumulated gate
    mass passes a threshold; the router's confidence reported as `np.max(scores)`."""

    N_PATHS = 3
    CONSTRUCTS = ('np-on-tensor', 'np.max', '.detach()', '.cpu()')

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(8, 3)
        self.experts = nn.ModuleList([nn.Linear(8, 4) for _ in range(3)])
        self.mass = 0.8

    def forward(self, x):
        gate = F.softmax(self.gate(x), dim=1)
        scores = gate.detach().cpu().numpy()[0]
        order = np.argsort(-scores)
        total = 0.0
        out = 0
        for k in order:
            out = out + self.experts[k](x) * gate[0, k]
            total += scores[k]
            if total > self.mass:
                break
        return out, float(total), float(np.max(scores))

    @staticmethod
    def path_key(inputs, output, trace):
        return len([name for name in trace if name.startswith("experts.")])

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 3.0), (0, 30.0)], shape=(1, 8))


class UniversalTransformerACT(nn.Module):
    """The Universal Transformer's ACT loop: `while ((halting_probability < threshold) &
    (n_updates < max_hop)).byte().any():` with the per-position state updated in place."""

    N_PATHS = 4
    CONSTRUCTS = ('augassign',)

    def __init__(self, hidden=8):
        super().__init__()
        self.p = nn.Linear(hidden, 1)
        self.fn = nn.Sequential(nn.Linear(hidden, hidden), nn.Tanh())
        self.threshold = 0.99
        self.max_hop = 4

    def forward(self, state):
        # state: [batch, length, hidden]
        halting_probability = torch.zeros(state.shape[0], state.shape[1])
        remainders = torch.zeros(state.shape[0], state.shape[1])
        n_updates = torch.zeros(state.shape[0], state.shape[1])
        previous_state = torch.zeros_like(state)
        step = 0
        while ((halting_probability < self.threshold) & (n_updates < self.max_hop)).byte().any():
            p = torch.sigmoid(self.p(state)).squeeze(-1)
            still_running = (halting_probability < 1.0).float()
            new_halted = (halting_probability + p * still_running > self.threshold).float() * still_running
            still_running = (halting_probability + p * still_running <= self.threshold).float() * still_running
            halting_probability += p * still_running
            remainders += new_halted * (1 - halting_probability)
            halting_probability += new_halted * remainders
            n_updates += still_running + new_halted
            update_weights = p * still_running + new_halted * remainders
            state = self.fn(state)
            previous_state = (state * update_weights.unsqueeze(-1)) + (previous_state * (1 - update_weights.unsqueeze(-1)))
            step += 1
        return previous_state, (remainders, n_updates)

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 10.0), (5, 3.0), (6, 30.0)], shape=(1, 3, 8))


class SharedExpertGate(nn.Module):
    """Expert 0 is a shared expert that always runs, forced through a view of the gate
    (`g = gate.view(-1); g[0] = 1.0`); routed experts apply `y.relu_()`; `out += ...`;
    `out.clamp_(-5, 5)`."""

    N_PATHS = 4
    CONSTRUCTS = ('view-store', 'relu_-in-branch', 'augassign', 'clamp_')

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(8, 3)
        self.experts = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

    def forward(self, x):
        gate = torch.sigmoid(self.gate(x))
        g = gate.view(-1)
        g[0] = 1.0
        out = torch.zeros_like(x)
        for i, expert in enumerate(self.experts):
            if gate[0, i] > 0.5:
                y = expert(x)
                if i > 0:
                    y.relu_()
                out += gate[0, i] * y
        out.clamp_(-5.0, 5.0)
        return out, (gate > 0.5).sum().item()

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (2, 1.0), (4, 1.0), (6, 1.0)], shape=(1, 8))


class RoutingSelfAttribute(nn.Module):
    """MoE layer bookkeeping on the module: `self.gate_probs` and `self.aux_loss` written in
    forward, `self.gate_probs` read and `self.last_expert` written in the `_route` helper."""

    N_PATHS = 3
    CONSTRUCTS = ('self-attr',)

    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(8, 3)
        self.experts = nn.ModuleList([nn.Linear(8, 4) for _ in range(3)])

    def _route(self, x):
        probs = self.gate_probs
        k = int(probs.argmax(1))
        self.last_expert = k
        return self.experts[k](x) * probs[0, k]

    def forward(self, x):
        self.gate_probs = F.softmax(self.gate(x), dim=1)
        self.aux_loss = (self.gate_probs.mean(0) ** 2).sum() * len(self.experts)
        y = self._route(x)
        return y, self.last_expert, self.aux_loss

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 0.3), (3, 10.0)], shape=(1, 8))


class ACTConstantLSTM(nn.Module):
    """A constant-trip ponder loop `for i in range(4): h, states = self.lstm(x, states)` with
    `states` None then a tuple; halting probabilities binarised in place (`p[p >= 0.5] = 1.0`)
    and the first halting step selected afterwards."""

    N_PATHS = 5
    CONSTRUCTS = ('carry-structure', 'states-none-tuple', 'masked-assign')

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 8)
        self.halter = nn.Linear(8, 1)
        self.steps = 4

    def forward(self, x):
        states = None
        halt, outs = [], []
        for i in range(self.steps):
            h, states = self.lstm(x, states)
            outs.append(h)
            halt.append(torch.sigmoid(self.halter(h)).squeeze())
        p = torch.stack(halt)
        p[p >= 0.5] = 1.0
        p[p < 0.5] = 0.0
        first = int(p.argmax())
        if p.sum() == 0:
            first = self.steps - 1
        return outs[first], first, p

    @staticmethod
    def path_key(inputs, output, trace):
        return output[1], bool(output[2].sum() == 0)

    @staticmethod
    def example_inputs():
        return (randn(1, 1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (2, 3.0), (10, 10.0), (13, 1.0), (58, 30.0)], shape=(1, 1, 8))


class MoEExpertDict(nn.Module):
    """Experts in an `nn.ModuleDict`, their outputs in a dict comprehension over
    `.items()`, the gate weights read by name; a confident gate routes to one expert and
    returns early, with the routing decision in the returned dict."""

    N_PATHS = 3
    CONSTRUCTS = ('dict', 'list-comp', 'early-return')

    def __init__(self):
        super().__init__()
        self.names = ["conv", "mlp", "skip"]
        self.gate = nn.Linear(8, 3)
        self.experts = nn.ModuleDict({
            "conv": nn.Sequential(nn.Linear(8, 8), nn.Tanh()),
            "mlp": nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8)),
            "skip": nn.Identity(),
        })

    def forward(self, x):
        probs = F.softmax(self.gate(x), 1)
        weights = {name: probs[:, i:i + 1] for i, name in enumerate(self.names)}
        if probs.max() > 0.9:
            k = int(probs.argmax())
            if k == 0:
                out = self.experts["conv"](x)
            elif k == 1:
                out = self.experts["mlp"](x)
            else:
                out = self.experts["skip"](x)
            return {"out": out * probs.max(), "routed": k}
        outs = {name: expert(x) for name, expert in self.experts.items()}
        mixed = sum([weights[name] * outs[name] for name in self.names])
        return {"out": mixed, "routed": -1}

    @staticmethod
    def path_key(inputs, output, trace):
        return output["routed"]

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 0.3), (1, 20.0), (3, 20.0), (5, 20.0), (7, 20.0)], shape=(1, 8))


class ACTBatchLiveRows(nn.Module):
    """Batch-level ACT (the pattern of several ACT reimplementations): every sample halts on
    its own, and each step runs the cell on the live rows only (`idx = selector.nonzero()
    .squeeze(1)`, `hx[idx] = self.rnn_cell(x[idx], hx[idx])`, `accum[idx] += ...`) until
    `not selector.any()`."""

    N_PATHS = 5
    CONSTRUCTS = ('data-size', 'Variable', '.data')
    WEIGHT_SEED = 3

    def __init__(self, size=6, hidden=8):
        super().__init__()
        self.hidden = hidden
        self.rnn_cell = nn.GRUCell(size, hidden)
        self.halt = nn.Linear(hidden, 1)
        self.max_steps = 4
        self.eps = 0.01

    def forward(self, x):
        batch_size = x.size(0)
        hx = Variable(x.data.new(batch_size, self.hidden).zero_())
        accum = torch.zeros_like(hx)
        halting = x.new_zeros(batch_size)
        n_updates = x.new_zeros(batch_size)
        selector = halting < 1 - self.eps
        for step in range(self.max_steps):
            idx = selector.nonzero().squeeze(1)
            hx[idx] = self.rnn_cell(x[idx], hx[idx])
            p = torch.sigmoid(self.halt(hx[idx])).squeeze(1)
            if step == self.max_steps - 1:
                p = torch.ones_like(p)
            still = halting[idx] + p < 1 - self.eps
            weight = torch.where(still, p, 1 - halting[idx])
            accum[idx] += weight.unsqueeze(1) * hx[idx]
            halting[idx] += weight
            n_updates[idx] += 1
            selector = halting < 1 - self.eps
            if not selector.any():
                break
        return accum, n_updates

    @staticmethod
    def path_key(inputs, output, trace):
        return tuple(sorted(int(n) for n in output[1]))

    @staticmethod
    def example_inputs():
        return (randn(4, 6, seed=0, scale=0.1),)

    @staticmethod
    def path_inputs():
        return images([(0, 0.1), (0, 3.0), (1, 10.0), (7, 3.0), (9, 3.0)], shape=(4, 6))


class ACTBatchPublished(nn.Module):
    """Batch ACT around an `nn.LSTMCell` as the 2017-2019 PyTorch ports write it: time-major
    input, `hx=None` (then `cx = hx`, one tensor that `hx[idx], cx[idx] = ...` writes twice),
    a `ByteTensor` selector refilled every time step that comes back bool from `(accum_h < 1
    - eps).data`, a flag feature holding the ponder step, and up to 100 ponder steps over the
    rows still running, until no row runs."""

    N_PATHS = 5
    CONSTRUCTS = ('kind-change', 'one-path-alias', 'data-size', 'Variable', '.data')

    def __init__(self, input_size=3, hidden_size=6, max_ponder=100, epsilon=0.01):
        super().__init__()
        self.rnn_cell = nn.LSTMCell(input_size + 1, hidden_size)
        self.ponder_linear = nn.Linear(hidden_size, 1)
        self.max_ponder = max_ponder
        self.epsilon = epsilon
        self._is_lstm = isinstance(self.rnn_cell, nn.LSTMCell)
        self.ponder_linear.bias.data.fill_(1)
        self.ponder_linear.weight.data.mul_(8)  # (calibrated: rows halt after 1 to 100 steps)

    def forward(self, input_, hx=None):
        if hx is None:
            hx = Variable(input_.data.new(input_.size(1), self.rnn_cell.hidden_size).zero_())
            if self._is_lstm:
                cx = hx
        else:
            hx, cx = [Variable(h.data.clone()) for h in hx]
        time_size, batch_size, input_dim_size = input_.size()
        accum_h = Variable(input_.data.new(batch_size).zero_())
        accum_hx = Variable(input_.data.new(input_.size(1), self.rnn_cell.hidden_size).zero_())
        accum_cx = Variable(input_.data.new(input_.size(1), self.rnn_cell.hidden_size).zero_())
        selector = input_.data.new(batch_size).byte()
        hx_list = []
        step_count = Variable(input_.data.new(batch_size).zero_())
        ponder_steps = []
        for input_row in input_:
            accum_h = accum_h.zero_()
            accum_hx = accum_hx.zero_()
            accum_cx = accum_cx.zero_()
            selector = selector.fill_(1)
            step_count = step_count.zero_()
            input_row_with_flag = torch.cat([input_row, Variable(input_row.data.new(batch_size, 1).zero_())], dim=1)
            for act_step in range(self.max_ponder):
                input_row_with_flag[:, input_dim_size] = act_step
                idx = selector.nonzero().squeeze(1)
                hx[idx], cx[idx] = self.rnn_cell(input_row_with_flag[idx], (hx[idx], cx[idx]))
                accum_hx[idx] += hx[idx]
                h = torch.sigmoid(self.ponder_linear(hx[idx]).squeeze(1))
                accum_h[idx] += h
                p = h - (accum_h[idx] - 1).clamp(min=0)
                accum_hx[idx] += p.unsqueeze(1) * hx[idx]
                accum_cx[idx] += p.unsqueeze(1) * cx[idx]
                step_count[idx] += 1
                selector = (accum_h < 1 - self.epsilon).data
                if not selector.any():
                    break
            ponder_steps.append(step_count.clone())
            hx = accum_hx / step_count.clone().unsqueeze(1)
            cx = accum_cx / step_count.clone().unsqueeze(1)
            hx_list.append(hx)
        return torch.stack(hx_list), (hx, cx), torch.stack(ponder_steps)

    @staticmethod
    def path_key(inputs, output, trace):
        return len(inputs) > 1, tuple(int(n) for n in output[2].max(1).values)

    @staticmethod
    def example_inputs():
        return (randn(2, 3, 3, seed=0, scale=0.1), (randn(3, 6, seed=10, scale=0.1), randn(3, 6, seed=20, scale=0.1)))

    @staticmethod
    def path_inputs():
        return [
            (randn(2, 3, 3, seed=0, scale=0.1), (randn(3, 6, seed=10, scale=0.1), randn(3, 6, seed=20, scale=0.1))),
            (randn(2, 3, 3, seed=0, scale=0.1),),  # two steps at each time step, no state given
            (randn(2, 3, 3, seed=0, scale=3.0),),  # three steps, then two
            (randn(2, 3, 3, seed=2, scale=10.0), (randn(3, 6, seed=12, scale=10.0), randn(3, 6, seed=22, scale=10.0))),
            (randn(2, 3, 3, seed=5, scale=10.0),),  # a row that never halts: all 100 ponder steps
        ]


class ACTWhileByteMask(nn.Module):
    """Batch ACT with a `while` over halting steps: a `ByteTensor` mask of the rows that are
    not padding (`.byte()`) that comes back bool (`halting < 1 - eps`), the LSTM state made
    by `cx = hx` when none is given, and the live rows updated in place; a batch of padding
    never enters the loop, so the mask is still a byte mask after it."""

    N_PATHS = 5
    CONSTRUCTS = ('kind-change', 'one-path-alias', 'data-size', 'Variable')

    def __init__(self, size=4, hidden=6, max_steps=5, eps=0.01):
        super().__init__()
        self.cell = nn.LSTMCell(size, hidden)
        self.halt = nn.Linear(size + hidden, 1)
        self.max_steps, self.eps = max_steps, eps

    def forward(self, x, state=None):
        batch_size = x.size(0)
        if state is None:
            hx = Variable(x.data.new(batch_size, self.cell.hidden_size).zero_())
            cx = hx
        else:
            hx, cx = state
            hx, cx = hx.clone(), cx.clone()
        running = (x.abs().sum(1) > 0).byte()
        halting = 1 - running.float()
        n_steps = x.new_zeros(batch_size)
        step = 0
        while running.any() and step < self.max_steps:
            idx = running.nonzero().squeeze(1)
            hx[idx], cx[idx] = self.cell(x[idx], (hx[idx], cx[idx]))
            halting[idx] += torch.sigmoid(self.halt(torch.cat([x[idx], hx[idx]], 1))).squeeze(1)
            n_steps[idx] += 1
            running = halting < 1 - self.eps
            step += 1
        return hx, cx, n_steps, running.sum()

    @staticmethod
    def path_key(inputs, output, trace):
        return inputs[1] is not None if len(inputs) > 1 else False, int(output[2].max())

    @staticmethod
    def example_inputs():
        return (randn(3, 4, seed=0), (randn(3, 6, seed=1), randn(3, 6, seed=2)))

    @staticmethod
    def path_inputs():
        return [
            (randn(3, 4, seed=0), (randn(3, 6, seed=1), randn(3, 6, seed=2))),
            (randn(3, 4, seed=0), None),
            (randn(3, 4, seed=3, scale=5.0), None),
            (torch.zeros(3, 4), None),
            (randn(3, 4, seed=2), (randn(3, 6, seed=5), randn(3, 6, seed=6))),
        ]


class MoEDispatchRows(nn.Module):
    """Top-1 mixture of experts over a batch, dispatched the way batched MoE code does: each
    expert runs on the rows routed to it (`idx = (route == e).nonzero().squeeze(1)`), and
    its output is stored back (`out[idx] = ...`); an expert with no rows is skipped."""

    N_PATHS = 4
    CONSTRUCTS = ('data-size', 'list-comp')

    def __init__(self, size=6, experts=3):
        super().__init__()
        self.router = nn.Linear(size, experts)
        self.experts = nn.ModuleList([nn.Linear(size, size) for _ in range(experts)])

    def forward(self, x):
        gates = F.softmax(self.router(x), dim=1)
        gate, route = gates.max(1)
        out = torch.zeros_like(x)
        counts = []
        for e, expert in enumerate(self.experts):
            idx = (route == e).nonzero().squeeze(1)
            counts.append(len(idx))
            if len(idx) > 0:
                out[idx] = expert(x[idx]) * gate[idx].unsqueeze(1)
        return out, [min(c, 2) for c in counts]

    @staticmethod
    def path_key(inputs, output, trace):
        return tuple(output[1])

    @staticmethod
    def example_inputs():
        return (randn(4, 6, seed=0),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (1, 1.0), (2, 1.0), (3, 1.0), (4, 1.0), (5, 1.0), (6, 1.0), (7, 1.0)], shape=(4, 6))


class UniqueLabelPooling(nn.Module):
    """Prototype pooling over the distinct labels of a batch (graph pooling, class
    prototypes): `torch.unique(labels, return_inverse=True, return_counts=True)`, then a
    scatter-add into one row per label and a mean; the labels come from the router's argmax."""

    N_PATHS = 3
    CONSTRUCTS = ('unique-repeat', 'data-size', '.data')

    def __init__(self, size=6, classes=4):
        super(UniqueLabelPooling, self).__init__()
        self.router = nn.Linear(size, classes)
        self.proj = nn.Linear(size, size)

    def pool(self, feats, labels):
        classes, inverse, counts = torch.unique(labels, return_inverse=True, return_counts=True)
        protos = Variable(torch.zeros(classes.size(0), feats.size(1)))
        protos.index_add_(0, inverse, feats)
        protos /= counts.unsqueeze(1).float()
        return protos, classes

    def forward(self, x):
        labels = self.router(x).data.argmax(1)
        feats = self.proj(x)
        protos, classes = self.pool(feats, labels)
        return feats @ protos.t(), classes, len(classes)

    @staticmethod
    def path_key(inputs, output, trace):
        return min(output[2], 3)

    @staticmethod
    def example_inputs():
        return (randn(5, 6, seed=0),)

    @staticmethod
    def path_inputs():
        return [(randn(5, 6, seed=s) + randn(1, 6, seed=s + 100, scale=scale),) for s, scale in ((0, 10.0), (0, 0.0), (2, 1.0), (5, 0.0), (1, 3.0))]


class DurationRegulator(nn.Module):
    """FastSpeech's length regulator: each token repeated by its predicted duration
    (`torch.repeat_interleave(x, durations, dim=0)`), the frame-to-token index from
    `torch.repeat_interleave(durations)`; a sequence may expand to no frame at all."""

    N_PATHS = 3
    CONSTRUCTS = ('unique-repeat', 'data-size')

    def __init__(self, size=6):
        super(DurationRegulator, self).__init__()
        self.duration_predictor = nn.Linear(size, 1)
        self.frame = nn.Linear(size, size)

    def forward(self, tokens):
        log_durations = self.duration_predictor(tokens).squeeze(1)
        durations = torch.clamp(torch.round(torch.exp(log_durations) - 1), min=0).long()
        frames = torch.repeat_interleave(tokens, durations, dim=0)
        token_of_frame = torch.repeat_interleave(durations)
        return self.frame(frames), token_of_frame, frames.size(0)

    @staticmethod
    def path_key(inputs, output, trace):
        return min(output[2], 2)

    @staticmethod
    def example_inputs():
        return (randn(4, 6, seed=0),)

    @staticmethod
    def path_inputs():
        return [(randn(4, 6, seed=s, scale=scale),) for s, scale in ((0, 0.3), (0, 2.0), (1, 1.0), (2, 3.0), (3, 1.0))]


class MoESparseDispatcher(nn.Module):
    """Shazeer et al.'s sparsely gated MoE at inference, as davidmrau/mixture-of-experts
    writes it: top-2 gating scattered into `gates`, a `SparseDispatcher` built in forward,
    the experts run on the rows routed to them (none, one or many), `combine` with
    `index_add`; the counts per expert returned (`dispatcher._part_sizes`)."""

    N_PATHS = 4
    CONSTRUCTS = ('helper-object', 'data-size', 'list-comp')

    def __init__(self, input_size=6, output_size=4, num_experts=4, k=2):
        super(MoESparseDispatcher, self).__init__()
        self.num_experts, self.k = num_experts, k
        self.experts = nn.ModuleList([nn.Sequential(nn.Linear(input_size, 8), nn.ReLU(), nn.Linear(8, output_size), nn.Softmax(1))
                                      for i in range(num_experts)])
        self.w_gate = nn.Parameter(torch.randn(input_size, num_experts), requires_grad=True)
        self.softmax = nn.Softmax(1)

    def noisy_top_k_gating(self, x, train):
        logits = x @ self.w_gate
        top_logits, top_indices = logits.topk(min(self.k + 1, self.num_experts), dim=1)
        top_k_logits = top_logits[:, :self.k]
        top_k_indices = top_indices[:, :self.k]
        top_k_gates = self.softmax(top_k_logits)
        zeros = torch.zeros_like(logits, requires_grad=True)
        gates = zeros.scatter(1, top_k_indices, top_k_gates)
        return gates, (gates > 0).sum(0)

    def forward(self, x):
        gates, load = self.noisy_top_k_gating(x, self.training)
        dispatcher = SparseDispatcher(self.num_experts, gates)
        expert_inputs = dispatcher.dispatch(x)
        expert_outputs = [self.experts[i](expert_inputs[i]) for i in range(self.num_experts)]
        y = dispatcher.combine(expert_outputs)
        return y, dispatcher._part_sizes

    @staticmethod
    def path_key(inputs, output, trace):
        return tuple(min(n, 2) for n in output[1])

    @staticmethod
    def example_inputs():
        return (randn(8, 6, seed=0),)

    @staticmethod
    def path_inputs():
        """Rows spread over every expert; all rows near one point (two experts get none);
        seven near one point and one far off (experts given one row)."""
        def clustered(seed, outlier):
            rows = randn(8, 6, seed=seed, scale=0.2) + randn(1, 6, seed=100 + seed, scale=2.0)
            return torch.cat([rows[:7], randn(1, 6, seed=200 + seed, scale=3.0)]) if outlier else rows
        return [(randn(8, 6, seed=0),), (clustered(0, False),), (clustered(0, True),), (clustered(3, True),)]


class PonderState(object):
    """ACT's bookkeeping kept in an object of its own: the accumulated output, the halting
    probability of each sample, the steps taken."""

    def __init__(self, batch, hidden):
        self.halting = torch.zeros(batch)
        self.output = torch.zeros(batch, hidden)
        self.steps = 0

    def update(self, h, p):
        self.output = self.output + p.unsqueeze(1) * h
        self.halting = self.halting + p
        self.steps += 1

    def done(self, threshold):
        return bool((self.halting >= threshold).all())


class ACTStateObject(nn.Module):
    """Pondering until every sample's halting probabilities add up to a threshold, the state
    in a `PonderState` built in forward (`state.update(h, p)`, `if state.done(t): break`,
    `return state.output, state.steps`)."""

    N_PATHS = 3
    CONSTRUCTS = ('helper-object', 'augassign')

    def __init__(self, size=6, hidden=8):
        super(ACTStateObject, self).__init__()
        self.hidden = hidden
        self.cell = nn.GRUCell(size, hidden)
        self.halt = nn.Linear(size + hidden, 1)
        self.max_ponder = 3
        self.threshold = 0.99
        with torch.no_grad():  # (the halting unit reads the input's first feature: inputs pick the steps)
            self.halt.weight.zero_()
            self.halt.weight[0, 0] = 4.0
            self.halt.bias.zero_()

    def forward(self, x):
        state = PonderState(x.size(0), self.hidden)
        h = x.new_zeros(x.size(0), self.hidden)
        for n in range(self.max_ponder):
            h = self.cell(x, h)
            p = torch.sigmoid(self.halt(torch.cat([x, h], 1))).squeeze(1)
            state.update(h, p)
            if state.done(self.threshold):
                break
        return state.output, state.steps

    @staticmethod
    def path_key(inputs, output, trace):
        return output[1]

    @staticmethod
    def example_inputs():
        return (_first_feature(randn(2, 6, seed=0), [-3.0, 0.0]),)

    @staticmethod
    def path_inputs():
        firsts = ([3.0, 3.0], [0.0, 3.0], [-3.0, 0.0], [2.0, -0.1], [0.5, 0.5])
        return [(_first_feature(randn(2, 6, seed=s), first),) for s, first in enumerate(firsts)]


def _first_feature(x, values):
    x = x.clone()
    x[:, 0] = torch.tensor(values)
    return x


MODELS = [
    ACTHalting,
    ACTNoGradLSTM,
    PonderNetInference,
    MoETop1,
    MoEHardRouting,
    MoETopKMask,
    RouterNumpyArgsort,
    UniversalTransformerACT,
    SharedExpertGate,
    RoutingSelfAttribute,
    ACTConstantLSTM,
    MoEExpertDict,
    ACTBatchLiveRows,
    ACTBatchPublished,
    ACTWhileByteMask,
    MoEDispatchRows,
    UniqueLabelPooling,
    DurationRegulator,
    MoESparseDispatcher,
    ACTStateObject,
]
