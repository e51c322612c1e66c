"""Models that keep module attributes from one call to the next, written the way published
code writes them: a streaming RNN that creates its state lazily, the REINFORCE buffers of
reinforcement-learning SkipNet, call counters, running statistics changed in place.

`SEQUENCES`: name -> (factory, a list of calls' arguments); a compiled model must match eager
call by call, its state included. `REFUSED`: name -> (factory, args, line marker, words)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.autograd import Variable
from torch.distributions import Categorical

SEQUENCES: dict = {}
REFUSED: dict = {}


def _chunks(count: int, shape, seed: int = 0, scale: float = 1.0):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(*shape, generator=generator) * scale,) for _ in range(count)]


class StreamingGRU(nn.Module):
    """Streaming inference: the GRU state is created on the first chunk and carried over."""

    def __init__(self, features=4, hidden=8, classes=3):
        super().__init__()
        self.hidden_size = hidden
        self.gru = nn.GRU(features, hidden, batch_first=True)
        self.classifier = nn.Linear(hidden, classes)
        self.hidden = None

    def init_hidden(self, batch_size):
        return Variable(torch.zeros(1, batch_size, self.hidden_size))

    def forward(self, chunk):
        if self.hidden is None:
            self.hidden = self.init_hidden(chunk.size(0))
        out, hidden = self.gru(chunk, self.hidden)
        self.hidden = hidden.detach()
        return self.classifier(out[:, -1])


SEQUENCES["streaming_gru"] = (StreamingGRU, _chunks(20, (1, 5, 4)))


class StreamingLSTMData(nn.Module):
    """The same with an LSTM, its state kept as two tensor attributes through `.data`, and
    cleared in place (`zero_`, `.data.fill_`) when the input says the stream starts over."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 6, batch_first=True)
        self.head = nn.Linear(6, 2)
        self.h = torch.zeros(1, 1, 6)
        self.c = torch.zeros(1, 1, 6)

    def forward(self, chunk):
        if chunk[0, 0, 0] > 0.5:  # a new stream
            self.h.zero_()
            self.c.data.fill_(0.0)
        out, (h, c) = self.lstm(chunk, (self.h, self.c))
        self.h, self.c = h.data, c.data
        return self.head(out).mean(1)


SEQUENCES["streaming_lstm_data"] = (StreamingLSTMData, _chunks(12, (1, 3, 4), seed=3, scale=1.2))


class StreamingLSTMTuple(nn.Module):
    """Streaming with the LSTM's `(h, c)` kept as one tuple attribute, created lazily by a
    helper and passed straight back into the LSTM: `out, self.state = self.lstm(x, self.state)`."""

    def __init__(self, features=4, hidden=6):
        super(StreamingLSTMTuple, self).__init__()
        self.hidden_dim = hidden
        self.lstm = nn.LSTM(features, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, 2)
        self.state = None

    def init_state(self, batch_size):
        return (Variable(torch.zeros(1, batch_size, self.hidden_dim)),
                Variable(torch.zeros(1, batch_size, self.hidden_dim)))

    def forward(self, x):
        if self.state is None:
            self.state = self.init_state(x.size(0))
        out, self.state = self.lstm(x, self.state)
        self.state = tuple([s.detach() for s in self.state])
        return self.fc(out[:, -1].data)


SEQUENCES["streaming_lstm_tuple"] = (StreamingLSTMTuple, _chunks(20, (1, 5, 4), seed=5))


class StreamingCellPair(nn.Module):
    """Two attributes that start None and are set together in one branch (`self.h is None`
    says that `self.c` is None too), then stepped through the chunk with an LSTMCell."""

    def __init__(self):
        super(StreamingCellPair, self).__init__()
        self.cell = nn.LSTMCell(4, 6)
        self.out = nn.Linear(6, 3)
        self.h = None
        self.c = None

    def forward(self, chunk):
        if self.h is None:
            self.h = Variable(chunk.data.new(chunk.size(0), 6).zero_())
            self.c = Variable(chunk.data.new(chunk.size(0), 6).zero_())
        outputs = []
        for t in range(chunk.size(1)):
            self.h, self.c = self.cell(chunk[:, t], (self.h, self.c))
            outputs += [self.out(self.h)]
        return torch.stack(outputs, 1)


SEQUENCES["streaming_cell_pair"] = (StreamingCellPair, _chunks(20, (2, 3, 4), seed=6))


class RLGate(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.fc = nn.Linear(channels, 1)

    def forward(self, x):
        prob = torch.sigmoid(self.fc(x))
        action = (prob.data > 0.5).float()  # sampled in training: Bernoulli(prob).sample()
        return action, prob


class ReinforceSkipNet(nn.Module):
    """SkipNet with reinforcement-learning gates: each gate's action and log-probability go
    into `self.saved_actions` / `self.saved_log_probs` on every call (also at inference), and
    a skipped block appends a placeholder action of its own."""

    def __init__(self, channels=8, blocks=3, classes=5):
        super().__init__()
        self.stem = nn.Linear(6, channels)
        self.blocks = nn.ModuleList([nn.Sequential(nn.Linear(channels, channels), nn.ReLU()) for _ in range(blocks)])
        self.gates = nn.ModuleList([RLGate(channels) for _ in range(blocks)])
        self.fc = nn.Linear(channels, classes)
        self.saved_actions = []
        self.saved_log_probs = []

    def log_prob(self, prob, action):
        return torch.log(prob * action + (1 - prob) * (1 - action))

    def forward(self, x):
        x = F.relu(self.stem(x))
        masks = []
        for block, gate in zip(self.blocks, self.gates):
            action, prob = gate(x)
            self.saved_actions.append(action)
            self.saved_log_probs.append(self.log_prob(prob, action))
            masks.append(action.byte())
            if action.item() > 0.5:
                x = x + block(x)
            else:
                self.saved_actions.append(Variable(torch.zeros(1, 1)).fill_(-1.0))
        executed = sum([int(m.sum()) for m in masks])
        return self.fc(x), executed


SEQUENCES["reinforce_skipnet"] = (ReinforceSkipNet, _chunks(10, (1, 6), seed=5, scale=2.0))


class CountedExits(nn.Module):
    """A call counter read in a branch, a float total, and a running mean changed in place."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 4)
        self.calls = 0
        self.total = 0.0
        self.running = torch.zeros(4)
        self.warm = False

    def forward(self, x):
        self.calls += 1
        y = self.layer(x)
        if self.calls % 3 == 0:
            y = y * 2
        if not self.warm:
            self.running.zero_()
            self.warm = True
        self.running.mul_(0.9).add_(0.1 * y.mean(0).detach())
        self.total = self.total + float(y.sum())
        return y + self.running, self.calls


SEQUENCES["counted_exits"] = (CountedExits, _chunks(7, (2, 4), seed=7))


class CountsAcrossCalls(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x * self.calls


SEQUENCES["counts_across_calls"] = (CountsAcrossCalls, _chunks(4, (1, 3)))


class AssignedOnOnePath(nn.Module):
    """`self.last` changes only where the input is positive; elsewhere the last value stays."""

    def __init__(self):
        super().__init__()
        self.last = torch.zeros(1, 3)

    def forward(self, x):
        if x.sum() > 0:
            self.last = x * 2
        return x + self.last


SEQUENCES["assigned_on_one_path"] = (AssignedOnOnePath, _chunks(8, (1, 3), seed=11, scale=2.0))


class HistoryReader(nn.Module):
    def __init__(self):
        super().__init__()
        self.saved = []

    def forward(self, x):
        self.saved.append(x.sum())
        return x * len(self.saved)  # line marker: reads-saved


REFUSED["reads_appended_list"] = (HistoryReader, (torch.ones(1, 3),), "reads-saved", "only appends to")


class GrowingMemory(nn.Module):
    def __init__(self):
        super().__init__()
        self.memory = torch.zeros(1, 3)

    def forward(self, x):  # line marker: growing
        self.memory = torch.cat([self.memory, x])
        return self.memory.sum(0)


REFUSED["growing_memory"] = (GrowingMemory, (torch.ones(1, 3),), "growing", "same kind, shape and dtype")


class DictState(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = {}

    def forward(self, x):
        self.seen = dict(self.seen, last=x)  # line marker: dict-state
        return x * 2


REFUSED["dict_state"] = (DictState, (torch.ones(1, 3),), "dict-state", "a dict that persists")


class DistributionUsedLater(nn.Module):
    """A `Categorical` made in one statement and used by a later one, which DyCL compiles
    on its own: the distribution would keep the example's probabilities (a wrong
    log-probability on every other input before this was refused)."""

    def __init__(self):
        super().__init__()
        self.policy = nn.Linear(4, 3)

    def forward(self, x):
        probs = F.softmax(self.policy(x), -1)
        m = Categorical(probs)  # line marker: categorical
        action = probs.argmax()
        log_probs = []
        log_probs.append(m.log_prob(action))
        return log_probs[0], action.item()


REFUSED["distribution_used_later"] = (DistributionUsedLater, (torch.ones(1, 4),), "categorical", "holding tensors computed in forward")


class MemoizedEncoder(nn.Module):
    """Memoization across calls, as inference servers write it: the last input and its encoding
    are kept, and a call whose input equals the last one (`torch.equal`, after `is not None`
    in the same `and`) returns the kept encoding and counts a hit."""

    def __init__(self):
        super(MemoizedEncoder, self).__init__()
        self.enc = nn.Linear(4, 4)
        self.cache_key = None
        self.cache_value = None
        self.hits = 0

    def forward(self, x):
        if self.cache_key is not None and torch.equal(x, self.cache_key):
            self.hits += 1
            return self.cache_value
        out = torch.tanh(self.enc(x))
        self.cache_key = x.clone()
        self.cache_value = out
        return out


def memoized_calls():
    """A miss, a hit, a miss, two hits, a miss."""
    a, b = _chunks(2, (2, 4), seed=5)
    return [a, (a[0].clone(),), b, (b[0].clone(),), b, a]
