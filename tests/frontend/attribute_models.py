"""Module attributes written in forward or its helpers, the way published code writes them:
`self.hidden = self.init_hidden(b)` at the top of forward and a gate helper that reads and
rewrites it, per-call bookkeeping lists, counters reset per call. `CASES` compile exactly
(inputs take every path); `REFUSED` keep state from one call to the next, or read an
attribute where the call assigned it on some paths only, and are refused at the marked line."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

CASES: dict = {}
REFUSED: dict = {}


def _vec(*values):
    return torch.tensor([list(values)])


class RNNGate(nn.Module):
    """SkipNet's recurrent gate: its LSTM state lives on the gate module."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTMCell(4, 4)
        self.proj = nn.Linear(4, 1)
        self.hidden = None

    def init_hidden(self, batch_size):
        return (torch.zeros(batch_size, 4), torch.zeros(batch_size, 4))

    def forward(self, x):
        self.hidden = self.rnn(x, self.hidden)
        return torch.sigmoid(self.proj(self.hidden[0]))


class SkipNetHidden(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.control = RNNGate()

    def forward(self, x):
        self.control.hidden = self.control.init_hidden(x.size(0))
        masks = []
        for block in self.blocks:
            prob = self.control(x)
            if prob.item() > 0.37:
                x = torch.relu(block(x))
                masks.append(1)
            else:
                masks.append(0)
        return x, masks


def _skipnet_inputs():
    torch.manual_seed(3)
    return [(torch.randn(1, 4) * s,) for s in (0.1, 1.0, 3.0, 10.0, 30.0)]


CASES["skipnet_hidden"] = (SkipNetHidden, _skipnet_inputs())


class GateBookkeeping(nn.Module):
    """Per-call lists and counters on the module, reset at the top of forward."""

    def __init__(self):
        super().__init__()
        self.gates = nn.ModuleList([nn.Linear(4, 1) for _ in range(3)])
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        self.gate_probs = []
        self.executed = 0
        for gate, block in zip(self.gates, self.blocks):
            p = torch.sigmoid(gate(x))
            self.gate_probs.append(p)
            if p.item() > 0.5:
                x = block(x)
                self.executed += 1
        return x, torch.cat(self.gate_probs, 1), self.executed


CASES["gate_bookkeeping"] = (GateBookkeeping, [(_vec(0.1, 0.2, 0.3, 0.4) * s,) for s in (-10.0, -1.0, 1.0, 10.0)])


class HelperReadsState(nn.Module):
    """A straight-line helper reads what forward assigned (DyCL inlines it), and an `if`
    tests a helper that rewrites the state."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.scale = 2.0  # configuration: read, never assigned

    def context(self, h):
        return h + self.memory * self.scale

    def decide(self, h):
        self.memory = self.memory * 0.5 + h
        return self.memory.sum() > 0

    def forward(self, x):
        self.memory = torch.tanh(self.fc(x))
        h = self.context(x)
        if self.decide(h):
            h = h * 2
        else:
            h = h - 1
        return h, self.memory


CASES["helper_reads_state"] = (HelperReadsState, [(_vec(1.0, 2.0, 3.0),), (_vec(-3.0, -2.0, -4.0),)])


class AssignedOnEveryPath(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        if x.sum() > 0:
            self.route = self.fc(x)
        else:
            self.route = -x
        for _ in range(2):
            self.route = self.route * 0.5 + 1
        return self.route


CASES["assigned_on_every_path"] = (AssignedOnEveryPath, [(_vec(1.0, 2.0, 3.0),), (_vec(-1.0, -2.0, -3.0),)])


class ConfigurationInHelper(nn.Module):
    """A helper that reads configuration only (`self.scale`, never assigned) still runs
    inside a captured block, also inside an expression, next to an assigned attribute."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.scale = 2.0

    def helper(self, x):
        return self.fc(x) * self.scale

    def forward(self, x):
        self.mem = x * 2
        y = F.relu(self.helper(x)) + self.mem * self.scale
        if y.sum() > 0:
            y = y - self.mem
        return y


CASES["configuration_in_helper"] = (ConfigurationInHelper, [(_vec(1.0, 2.0, 3.0),), (_vec(-3.0, -2.0, -4.0),)])


class CountsAcrossCalls(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1  # line marker: counts-calls
        return x * self.calls




class LazyHidden(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRUCell(3, 3)
        self.hidden = None

    def forward(self, x):
        if self.hidden is None:
            self.hidden = torch.zeros(1, 3)  # line marker: lazy-hidden
        self.hidden = self.rnn(x, self.hidden)
        return self.hidden




class AssignedOnOnePath(nn.Module):
    def __init__(self):
        super().__init__()
        self.last = torch.zeros(1, 3)

    def forward(self, x):
        if x.sum() > 0:
            self.last = x * 2
        return x + self.last  # line marker: one-path




class AssignedInWhile(nn.Module):
    def forward(self, x):
        step = 0
        while step < 3 and x.sum() > 0:
            self.best = x
            x = x - 1
            step += 1
        return self.best  # line marker: after-while


REFUSED["assigned_in_while"] = (AssignedInWhile, (_vec(1.0, 2.0, 3.0),), "after-while", "on some paths only")


def scaled(x, module):
    return module.memory * x


def scaled_named(x, module, name):
    return getattr(module, name) * x


class FunctionReadsState(nn.Module):
    """A plain function reads the attribute through a parameter other than its first: the
    parameter is the module, known here, so the read is the call's attribute variable."""

    def __init__(self):
        super().__init__()
        self.memory = torch.ones(1, 3)

    def forward(self, x):
        self.memory = x * 3
        y = scaled(x, self)
        return F.relu(y)


class FunctionReadsStateByName(FunctionReadsState):
    """... by a name it is given (`getattr(module, name)`): DyCL runs the function inside a
    captured block, where it would read the module's old value, and says so."""

    def forward(self, x):
        self.memory = x * 3  # line marker: function-reads (the run it starts)
        y = scaled_named(x, self, "memory")
        return F.relu(y)


def scaled_by(module, x):
    return module.memory * x


class FunctionGivenSelf(FunctionReadsState):
    """A plain function given the module as its first argument (`fn(self, ...)`, as a
    decorator's wrapper calls the method it wraps) is compiled with it as its `self`: it
    reads the value the call assigned."""

    def forward(self, x):
        self.memory = x * 3
        y = scaled_by(self, x)
        return F.relu(y)


CASES["function_given_self"] = (FunctionGivenSelf, [(_vec(1.0, 2.0, 3.0),), (_vec(-3.0, 2.0, -4.0),)])
CASES["function_reads_state"] = (FunctionReadsState, [(_vec(1.0, 2.0, 3.0),), (_vec(-3.0, 2.0, -4.0),)])
REFUSED["function_reads_state_by_name"] = (FunctionReadsStateByName, (_vec(1.0, 2.0, 3.0),), "function-reads", "captured block")


class NestedHelperCall(nn.Module):
    def __init__(self):
        super().__init__()
        self.memory = torch.ones(1, 3)

    def read(self, x):
        return self.memory * x

    def forward(self, x):
        self.memory = x * 3
        y = F.relu(self.read(x))  # evaluated first: DyCL makes the call a statement of its own
        return x.mean() + self.read(y)  # line marker: nested-helper


REFUSED["nested_helper_call"] = (NestedHelperCall, (_vec(1.0, 2.0, 3.0),), "nested-helper", "assign its result to a variable first")


class HoistedHelperCalls(nn.Module):
    """Helpers DyCL compiles, called inside expressions that Python evaluates first:
    `return self.step(x), self.memory`, `if self.score(x) > 0:`."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def step(self, x):
        self.memory = self.memory + torch.tanh(self.fc(x))
        return self.memory * 2

    def score(self, x):
        return self.memory.sum() * 2

    def forward(self, x):
        self.memory = x * 0.5
        if self.score(x) > 0:
            x = x + 1
        return self.step(x), self.memory


CASES["hoisted_helper_calls"] = (HoistedHelperCalls, [(_vec(1.0, 2.0, 3.0),), (_vec(-1.0, -2.0, 0.5),)])
