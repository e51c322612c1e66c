"""RL policies at inference (argmax / thresholded Bernoulli), written the way pytorch/examples,
BlockDrop and recurrent-attention code is written."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable
from torch.distributions import Bernoulli, Categorical

from tests.frontend.research.common import images, randn

SavedAction = namedtuple("SavedAction", ["log_prob", "value"])


class ActorCriticArgmax(nn.Module):
    """pytorch/examples actor_critic: `self.saved_actions.append(SavedAction(...))`, the greedy
    action returned as a Python int."""

    N_PATHS = 3
    CONSTRUCTS = ('saved-actions', 'self-attr')

    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(8, 16)
        self.action_head = nn.Linear(16, 3)
        self.value_head = nn.Linear(16, 1)
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))
        action_prob = F.softmax(self.action_head(x), dim=-1)
        state_values = self.value_head(x)
        return self.select_action(action_prob, state_values)

    def select_action(self, probs, state_value):
        m = Categorical(probs)
        action = probs.argmax()  # greedy at evaluation; training samples m.sample()
        self.saved_actions.append(SavedAction(m.log_prob(action), state_value))
        return action.item()

    @staticmethod
    def path_key(inputs, output, trace):
        return output

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 10.0), (7, 3.0)], shape=(1, 8))


class ReinforceExpertPolicy(nn.Module):
    """Hand-rolled REINFORCE controller choosing which expert runs (log-probabilities from
    `F.log_softmax(...).gather`, no torch.distributions): `self.saved_log_probs.append`, an
    `if/elif` chain on the action."""

    N_PATHS = 3
    CONSTRUCTS = ('saved-actions', 'self-attr')

    def __init__(self, num_classes=4):
        super().__init__()
        self.policy = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
        self.expert0 = nn.Linear(8, num_classes)
        self.expert1 = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, num_classes))
        self.expert2 = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, num_classes))
        self.saved_log_probs = []

    def forward(self, x):
        logits = self.policy(x)
        action = torch.argmax(logits, 1)
        self.saved_log_probs.append(F.log_softmax(logits, dim=1).gather(1, action.view(-1, 1)))
        a = int(action)
        if a == 0:
            y = self.expert0(x)
        elif a == 1:
            y = self.expert1(x)
        else:
            y = self.expert2(x)
        return y, a

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 10.0), (7, 3.0)], shape=(1, 8))


class BlockDropAgentNumpy(nn.Module):
    """Agent probabilities thresholded in place, a `Bernoulli` for the log-probability,
    and the policy walked as a numpy array (`policy.data.cpu().numpy()[0]`)."""

    N_PATHS = 8
    CONSTRUCTS = ('masked-assign', 'np-on-tensor', 'np.mean', '.data', '.cpu()', 'saved-actions')

    def __init__(self, num_classes=10):
        super().__init__()
        self.agent = nn.Linear(8, 3)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(3)])
        self.head = nn.Linear(8, num_classes)
        self.saved_actions = []

    def forward(self, x):
        probs = torch.sigmoid(self.agent(x))
        policy = probs.clone()
        policy[policy < 0.5] = 0.0
        policy[policy >= 0.5] = 1.0
        distr = Bernoulli(probs)
        self.saved_actions.append(distr.log_prob(policy).sum())
        actions = policy.data.cpu().numpy()[0]
        for i, a in enumerate(actions):
            if a == 1:
                x = x + self.blocks[i](x)
        block_usage = float(np.mean(actions))
        return self.head(x), policy, block_usage

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (1, 1.0), (2, 1.0), (4, 1.0), (4, 0.3), (6, 1.0), (8, 1.0), (14, 3.0)], shape=(1, 8))


class GlimpsePolicyStop(nn.Module):
    """Recurrent attention with a learned stop action: `h = None` before the loop, an RNNCell
    called with `hx=None` first, `break` when the stop policy fires."""

    N_PATHS = 4
    CONSTRUCTS = ('none-start', '.detach()')

    def __init__(self, num_classes=10):
        super().__init__()
        self.num_glimpses = 4
        self.glimpse = nn.Linear(16 + 2, 8)
        self.rnn = nn.RNNCell(8, 8)
        self.locator = nn.Linear(8, 2)
        self.stop = nn.Linear(8, 1)
        self.classifier = nn.Linear(8, num_classes)

    def forward(self, x):
        h = None
        loc = torch.zeros(x.size(0), 2)
        for t in range(self.num_glimpses):
            g = F.relu(self.glimpse(torch.cat([x.view(x.size(0), -1), loc], 1)))
            h = self.rnn(g, h)
            loc = torch.tanh(self.locator(h)).detach()
            stop = torch.sigmoid(self.stop(h))
            if stop.item() > 0.5:
                break
        return self.classifier(h), t + 1

    @staticmethod
    def example_inputs():
        return (randn(1, 1, 4, 4),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (91, 30.0), (103, 3.0), (103, 10.0)], shape=(1, 1, 4, 4))


class NumpyWhereLayerSelect(nn.Module):
    """A policy that lists the layers to run: `np.where(probs > 0.5)[0]`, then a loop over
    that data-dependent index array."""

    N_PATHS = 8
    CONSTRUCTS = ('np-on-tensor', 'np.where', '.detach()', '.cpu()')

    def __init__(self, num_classes=10):
        super().__init__()
        self.policy = nn.Linear(8, 3)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(3)])
        self.head = nn.Linear(8, num_classes)

    def forward(self, x):
        probs = torch.sigmoid(self.policy(x)).detach().cpu().numpy()[0]
        keep = np.where(probs > 0.5)[0]
        for i in keep:
            x = x + self.blocks[i](x)
        return self.head(x), len(keep)

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (1, 1.0), (2, 1.0), (4, 1.0), (4, 0.3), (6, 1.0), (8, 1.0), (14, 3.0)], shape=(1, 8))


class DQNNoGradAct(nn.Module):
    """The DQN tutorial's `select_action`: `with torch.no_grad(): policy_net(state).max(1).indices.view(1, 1)`,
    then a network per action."""

    N_PATHS = 2
    CONSTRUCTS = ('no_grad',)

    def __init__(self):
        super().__init__()
        self.policy_net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
        self.left = nn.Linear(8, 4)
        self.right = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))

    def forward(self, state):
        with torch.no_grad():
            action = self.policy_net(state).max(1).indices.view(1, 1)
        if action.item() == 0:
            return self.left(state), action
        return self.right(state), action

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (1, 1.0)], shape=(1, 8))


class BernoulliPolicySaved(nn.Module):
    """A `Bernoulli(logits=...)` policy made deterministic at test time (`dist.probs > 0.5`),
    actions saved on the module (`self.saved_actions.append(actions.data)`)."""

    N_PATHS = 8
    CONSTRUCTS = ('saved-actions', '.data')

    def __init__(self):
        super().__init__()
        self.policy = nn.Linear(8, 3)
        self.layers = nn.ModuleList([nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(3)])
        self.saved_actions = []
        self.saved_log_probs = []

    def forward(self, x):
        dist = Bernoulli(logits=self.policy(x))
        actions = (dist.probs > 0.5).float()
        self.saved_actions.append(actions.data)
        self.saved_log_probs.append(dist.log_prob(actions).sum())
        for i in range(actions.size(1)):
            if actions[0, i] == 1:
                x = self.layers[i](x)
        return x, actions

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (1, 1.0), (2, 1.0), (4, 1.0), (4, 0.3), (6, 1.0), (8, 1.0), (14, 3.0)], shape=(1, 8))


class PolicyVariableNumpy(nn.Module):
    """Old pytorch/examples reinforce: `Variable(state)`, `np.argmax(probs.data.numpy())`,
    then `self.heads[action]` indexed with the numpy integer."""

    N_PATHS = 3
    CONSTRUCTS = ('Variable', 'np-on-tensor', 'np.argmax', '.data')

    def __init__(self):
        super().__init__()
        self.affine1 = nn.Linear(8, 16)
        self.affine2 = nn.Linear(16, 3)
        self.heads = nn.ModuleList([nn.Linear(8, 4) for _ in range(3)])

    def forward(self, x):
        state = Variable(x)
        action_scores = self.affine2(F.relu(self.affine1(state)))
        probs = F.softmax(action_scores, dim=1)
        action = np.argmax(probs.data.numpy())
        out = self.heads[action](state)
        return out, int(action)

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 10.0), (7, 3.0)], shape=(1, 8))


class PolicyHiddenState(nn.Module):
    """An LSTM controller that decides per block: `self.hidden = self.init_hidden(b)` at the
    top of forward, `self.decide` reads and rewrites it."""

    N_PATHS = 8
    CONSTRUCTS = ('init-hidden', 'self-attr')
    WEIGHT_SEED = 3

    def __init__(self, hidden=8):
        super().__init__()
        self.hidden_size = hidden
        self.controller = nn.LSTMCell(8, hidden)
        self.act_head = nn.Linear(hidden, 1)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(3)])

    def init_hidden(self, batch_size):
        return (torch.zeros(batch_size, self.hidden_size), torch.zeros(batch_size, self.hidden_size))

    def decide(self, feat):
        self.hidden = self.controller(feat, self.hidden)
        return torch.sigmoid(self.act_head(self.hidden[0])) > 0.5

    def forward(self, x):
        self.hidden = self.init_hidden(x.size(0))
        for block in self.blocks:
            if self.decide(x):
                x = block(x)
        return x

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (0, 0.3), (1, 1.0), (1, 0.3), (1, 10.0), (8, 1.0), (8, 3.0), (12, 30.0)], shape=(1, 8))


class StreamingGRUClassifier(nn.Module):
    """Streaming inference over consecutive chunks: the GRU state is created on the first
    chunk (`if self.hidden is None`) and carried to the next, a step counter decides when
    to smooth the prediction."""

    N_PATHS = 2
    CONSTRUCTS = ('cross-call-state', 'Variable', '.detach()')

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 12, batch_first=True)
        self.fc = nn.Linear(12, 4)
        self.hidden = None
        self.steps = 0

    def init_hidden(self, batch_size):
        return Variable(torch.zeros(1, batch_size, 12))

    def forward(self, x):
        if self.hidden is None:
            self.hidden = self.init_hidden(x.size(0))
        out, hidden = self.gru(x, self.hidden)
        self.hidden = hidden.detach()
        self.steps += 1
        y = self.fc(out[:, -1])
        smoothed = self.steps % 2 == 0
        if smoothed:
            y = y * 0.5
        return y, smoothed

    @staticmethod
    def path_key(inputs, output, trace):
        return output[1]

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (1, 1.0), (2, 0.5), (3, 2.0)], shape=(1, 3, 8))


class StreamingLSTMTupleState(nn.Module):
    """Streaming inference with the LSTM's `(h, c)` kept as one tuple attribute, created by
    a helper on the first chunk and handed straight back to the LSTM; a step counter decides
    when to smooth the prediction."""

    N_PATHS = 2
    CONSTRUCTS = ('cross-call-state', 'paired-state', 'Variable')

    def __init__(self):
        super(StreamingLSTMTupleState, self).__init__()
        self.lstm = nn.LSTM(8, 10, batch_first=True)
        self.fc = nn.Linear(10, 4)
        self.state = None
        self.steps = 0

    def init_state(self, batch_size):
        return (Variable(torch.zeros(1, batch_size, 10)), Variable(torch.zeros(1, batch_size, 10)))

    def forward(self, x):
        if self.state is None:
            self.state = self.init_state(x.size(0))
        out, self.state = self.lstm(x, self.state)
        self.steps += 1
        y = self.fc(out[:, -1])
        smoothed = self.steps % 2 == 0
        if smoothed:
            y = y * 0.5
        return y, smoothed

    @staticmethod
    def path_key(inputs, output, trace):
        return output[1]

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (1, 1.0), (2, 0.5), (3, 2.0)], shape=(1, 3, 8))


class StreamingCellPairPolicy(nn.Module):
    """A recurrent policy over a stream, its LSTMCell state in two attributes that start None
    and are set together (`if self.hx is None:` makes both), stepped through each chunk;
    the action is the argmax, taken only where the policy is confident."""

    N_PATHS = 2
    CONSTRUCTS = ('cross-call-state', 'paired-state', '.data')

    def __init__(self):
        super(StreamingCellPairPolicy, self).__init__()
        self.cell = nn.LSTMCell(6, 8)
        self.actor = nn.Linear(8, 3)
        self.hx = None
        self.cx = None

    def forward(self, obs):
        if self.hx is None:
            self.hx = Variable(obs.data.new(obs.size(0), 8).zero_())
            self.cx = Variable(obs.data.new(obs.size(0), 8).zero_())
        for t in range(obs.size(1)):
            self.hx, self.cx = self.cell(obs[:, t], (self.hx, self.cx))
        probs = F.softmax(self.actor(self.hx), dim=1)
        if probs.max() > 0.36:
            return probs, int(probs.argmax())
        return probs, -1

    @staticmethod
    def path_key(inputs, output, trace):
        return output[1] >= 0

    @staticmethod
    def example_inputs():
        return (randn(1, 3, 6),)

    @staticmethod
    def path_inputs():
        return images([(0, 0.1), (1, 3.0), (2, 0.1), (3, 3.0), (4, 1.0), (5, 5.0)], shape=(1, 3, 6))


class RecurrentPolicyStream(nn.Module):
    """A recurrent REINFORCE policy kept across calls (`self.h`, cleared in place at an
    episode boundary), its log-probabilities saved on the module, its action picking the
    expert that runs."""

    N_PATHS = 2
    CONSTRUCTS = ('cross-call-state', 'saved-actions', '.data')

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(8, 8)
        self.head = nn.Linear(8, 2)
        self.expert0 = nn.Linear(8, 3)
        self.expert1 = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 3))
        self.h = torch.zeros(1, 8)
        self.saved_log_probs = []

    def forward(self, x):
        if x.abs().max() > 2.5:  # a new episode
            self.h.data.zero_()
        self.h = self.cell(x, self.h)
        logits = self.head(self.h)
        action = logits.argmax(1)
        self.saved_log_probs.append(F.log_softmax(logits, 1).gather(1, action.view(-1, 1)))
        if int(action) == 0:
            y = self.expert0(x)
        else:
            y = self.expert1(x)
        return y

    @staticmethod
    def example_inputs():
        return (randn(1, 8),)

    @staticmethod
    def path_inputs():
        return images([(0, 1.0), (1, 1.0), (2, 3.0), (3, 0.5), (4, 1.0), (5, 2.0)], shape=(1, 8))


class FactoredActionHead(nn.Module):
    """One dimension of a factored action space: greedy at inference, the action and its
    log-probability kept on the head (`self.saved_action`, `self.saved_log_prob`)."""

    def __init__(self, hidden, choices):
        super().__init__()
        self.logits = nn.Linear(hidden, choices)

    def forward(self, h):
        log_probs = F.log_softmax(self.logits(h), dim=-1)
        action = log_probs.argmax(-1)
        self.saved_action = action
        self.saved_log_prob = log_probs.gather(-1, action.unsqueeze(-1))
        return action


class FactoredPolicyHeads(nn.Module):
    """A policy over a factored action space: the heads are registered as named submodules
    and kept in a plain list `self.action_heads` (appended in `__init__`); forward runs each,
    stops early when a head picks the no-op action, then reads back what the heads saved in
    this call through the list (`for head in self.action_heads: ...head.saved_action`)."""

    N_PATHS = 4
    CONSTRUCTS = ('gate-list', 'self-attr', 'early-return')

    def __init__(self, dims=(3, 2, 3)):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.Tanh())
        self.action_heads = []
        for k, choices in enumerate(dims):
            head = FactoredActionHead(16, choices)
            setattr(self, "head{}".format(k), head)
            self.action_heads.append(head)

    def forward(self, x):
        h = self.body(x)
        for k in range(len(self.action_heads)):
            a = getattr(self, "head{}".format(k))(h)
            if a.item() == 0 and k == 0:
                return h.new_zeros(1, len(self.action_heads)), 0.0
        actions = [head.saved_action.float() for head in self.action_heads]
        log_prob = sum(head.saved_log_prob for head in self.action_heads)
        return torch.stack(actions, 1), float(log_prob)

    @staticmethod
    def path_key(inputs, output, trace):
        return tuple(output[0].flatten().tolist())

    @staticmethod
    def example_inputs():
        return (randn(1, 8, seed=1),)

    @staticmethod
    def path_inputs():
        return images([(k, s) for k in range(6) for s in (0.5, 3.0)], shape=(1, 8))


MODELS = [
    ActorCriticArgmax,
    ReinforceExpertPolicy,
    BlockDropAgentNumpy,
    GlimpsePolicyStop,
    NumpyWhereLayerSelect,
    DQNNoGradAct,
    BernoulliPolicySaved,
    PolicyVariableNumpy,
    PolicyHiddenState,
    StreamingGRUClassifier,
    RecurrentPolicyStream,
    StreamingLSTMTupleState,
    StreamingCellPairPolicy,
    FactoredPolicyHeads,
]
