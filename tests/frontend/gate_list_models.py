"""Models for test_gate_lists.py: gates kept in a plain Python list on the model
(`self.gate_instances`, filled in `__init__`), as SkipNet's RL gating and dynamic-routing
code keep them: each gate stores what it decided on itself in its forward
(`self.saved_action = action`), and the model's forward reads it back through the list
after the blocks (issue 34, item 9.1)."""

from __future__ import annotations

import torch
from torch import nn


class FeedforwardGate(nn.Module):
    """SkipNet's feed-forward gate at inference: a hard action from a pooled logit, kept on
    the gate with its probability."""

    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, 1)

    def forward(self, x):
        prob = torch.sigmoid(self.proj(x))
        action = (prob > 0.5).float()
        self.saved_action = action
        self.saved_prob = prob
        return action


class SkipNetGateList(nn.Module):
    """Blocks skipped by their gates (a runtime branch per block); the gates are registered
    in a ModuleList and also kept in `self.gate_instances`, through which forward collects
    the actions and probabilities (`[g.saved_action for g in self.gate_instances]`)."""

    def __init__(self, width=8, blocks=3):
        super().__init__()
        self.stem = nn.Linear(6, width)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(width, width), nn.ReLU()) for _ in range(blocks)])
        self.gates = nn.ModuleList()
        self.gate_instances = []
        for _ in range(blocks):
            gate = FeedforwardGate(width)
            self.gates.append(gate)
            self.gate_instances.append(gate)
        self.head = nn.Linear(width, 4)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        for block, gate in zip(self.blocks, self.gates):
            mask = gate(x)
            if mask.item() > 0.5:
                x = block(x) + x
        actions = [g.saved_action for g in self.gate_instances]
        probs = torch.cat([g.saved_prob for g in self.gate_instances], 1)
        return self.head(x), torch.cat(actions, 1), probs


def skipnet_inputs():
    torch.manual_seed(11)
    return [(torch.randn(1, 6) * scale,) for scale in (0.5, 2.0, 4.0, 1.0, 3.0, 6.0, 8.0, 0.1)]


class GatedResidual(nn.Module):
    """A residual block owning its gate (the gate is a submodule of the block)."""

    def __init__(self, width):
        super().__init__()
        self.body = nn.Linear(width, width)
        self.gate = FeedforwardGate(width)

    def forward(self, x):
        mask = self.gate(x)
        return x + mask * torch.tanh(self.body(x))


class RoutedBlocks(nn.Module):
    """Dynamic-routing code: blocks in an `nn.Sequential`, their gates collected by a helper
    of `__init__` (`self._collect_gates()` appends to `self.gate_instances`), read after the
    blocks by a loop (`for inst in self.gate_instances: actions.append(inst.saved_action)`),
    the last gate's probability by index (`self.gate_instances[-1].saved_prob`)."""

    def __init__(self, width=8, blocks=3):
        super().__init__()
        self.layers = nn.Sequential(*[GatedResidual(width) for _ in range(blocks)])
        self.gate_instances = []
        self._collect_gates()
        self.head = nn.Linear(width, 3)

    def _collect_gates(self):
        for layer in self.layers:
            self.gate_instances.append(layer.gate)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        actions = []
        for inst in self.gate_instances:
            actions.append(inst.saved_action)
        executed = sum(int(a.item()) for a in actions)
        return self.head(x), torch.cat(actions, 1), self.gate_instances[-1].saved_prob, executed


def routed_inputs():
    torch.manual_seed(12)
    return [(torch.randn(1, 8) * scale,) for scale in (0.3, 1.0, 3.0, 6.0, 0.1, 2.0, 9.0)]


class PreviousActions(nn.Module):
    """Reads the gates' actions *before* the gates run: the values the previous call left on
    them (an action-conditioned policy). That is state kept from one call to the next, which
    the compiled model carries as PyTorch does (`compiled.state`)."""

    def __init__(self, width=6, gates=2):
        super().__init__()
        self.gate_instances = [FeedforwardGate(width) for _ in range(gates)]
        self.gates = nn.ModuleList(self.gate_instances)
        for gate in self.gate_instances:
            gate.saved_action = torch.zeros(1, 1)
        self.mix = nn.Linear(width, width)

    def forward(self, x):
        previous = torch.cat([g.saved_action for g in self.gate_instances], 1)
        for gate in self.gates:
            x = x + gate(x) * torch.tanh(self.mix(x))
        return x * (1.0 + previous.sum())


def previous_inputs():
    torch.manual_seed(13)
    return [(torch.randn(1, 6) * scale,) for scale in (2.0, 0.2, 3.0, 1.0, 5.0, 0.5)]


class AppendsToGateList(nn.Module):
    """Changes the list of gates in forward: module state that changes from call to call,
    refused at the line."""

    def __init__(self):
        super().__init__()
        self.gate = FeedforwardGate(4)
        self.gate_instances = [self.gate]

    def forward(self, x):
        a = self.gate(x)
        self.gate_instances.append(self.gate)
        return x * a
