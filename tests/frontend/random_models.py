"""Models that draw random numbers, written the way published code draws them: PonderNet's
halting (`torch.bernoulli(lambda_n)`, after the mildlyoverfitted / jankrepl PonderNet),
sampled actions (`torch.multinomial(probs, 1)`), noise (`torch.randn_like`, `x.normal_()`),
and the draws DyCL refuses. Used by tests/backends/test_random_ops.py."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class PonderNet(nn.Module):
    """A GRU cell pondering up to `max_steps` steps; a sample halts at step n with
    probability `lambda_n`, which is 1 at the last step. The batch stops when every sample
    has halted. `bias` sets the halting layer's bias: -1000 makes `lambda_n` exactly 0
    before the last step (every sample halts at `max_steps`), +1000 exactly 1 (step 1)."""

    def __init__(self, n_elems: int = 6, n_hidden: int = 8, max_steps: int = 4, bias: float | None = None):
        super().__init__()
        self.n_hidden = n_hidden
        self.max_steps = max_steps
        self.cell = nn.GRUCell(n_elems, n_hidden)
        self.output_layer = nn.Linear(n_hidden, 1)
        self.lambda_layer = nn.Linear(n_hidden, 1)
        if bias is not None:
            with torch.no_grad():
                self.lambda_layer.weight.zero_()
                self.lambda_layer.bias.fill_(bias)

    def halting_probability(self, h, n):
        if n == self.max_steps:
            return h.new_ones(h.shape[0])
        return torch.sigmoid(self.lambda_layer(h))[:, 0]

    def forward(self, x):
        batch_size, _ = x.shape
        h = x.new_zeros(batch_size, self.n_hidden)
        un_halted_prob = h.new_ones(batch_size)
        y_list, p_list = [], []
        halting_step = torch.zeros(batch_size, dtype=torch.long)
        for n in range(1, self.max_steps + 1):
            lambda_n = self.halting_probability(h, n)
            y_list.append(self.output_layer(h)[:, 0])
            p_list.append(un_halted_prob * lambda_n)
            halt = torch.bernoulli(lambda_n)  # line marker: bernoulli
            halting_step = torch.maximum(n * (halting_step == 0) * halt.to(torch.long), halting_step)
            un_halted_prob = un_halted_prob * (1 - lambda_n)
            h = self.cell(x, h)
            if halt.all():
                break
        return torch.stack(y_list), torch.stack(p_list), halting_step


class PonderSteps(PonderNet):
    """PonderNet's loop reduced to what it decides: the number of steps it ran."""

    def forward(self, x):
        h = x.new_zeros(x.shape[0], self.n_hidden)
        steps = 0
        for n in range(1, self.max_steps + 1):
            steps += 1
            halt = torch.bernoulli(self.halting_probability(h, n))
            h = self.cell(x, h)
            if halt.all():
                break
        return h, steps


class Draws(nn.Module):
    """Each random op DyCL compiles, on the arguments it is given: `p` probabilities (of one
    shape), `probs` rows of category weights, `scale` a tensor of one shape to draw like."""

    def __init__(self, p_fixed: float = 0.3, low: int = 0, high: int = 4, uniform=(0.0, 1.0), normal=(0.0, 1.0),
                 lambd: float = 1.0, samples: int = 1, replacement: bool = False):
        super().__init__()
        self.p_fixed, self.low, self.high, self.uniform, self.normal, self.lambd = p_fixed, low, high, uniform, normal, lambd
        self.samples, self.replacement = samples, replacement

    def forward(self, p, probs, like):
        drawn = {
            "bernoulli": torch.bernoulli(p),
            "bernoulli_p": p.bernoulli(self.p_fixed),
            "rand_below": torch.rand_like(p) < p,
            "rand": torch.rand(like.shape[0], 2),
            "randn": torch.randn_like(like),
            "randn_size": torch.randn(like.shape[0]),
            "randint": torch.randint(self.low, self.high, (like.shape[0],)),
            "multinomial": torch.multinomial(probs, self.samples, replacement=self.replacement),
            "uniform": torch.empty_like(like).uniform_(*self.uniform),
            "normal": torch.empty_like(like).normal_(*self.normal),
            "exponential": torch.empty_like(like).exponential_(self.lambd),
        }
        return tuple(drawn.values())


DRAW_NAMES = ("bernoulli", "bernoulli_p", "rand_below", "rand", "randn", "randn_size", "randint", "multinomial",
              "uniform", "normal", "exponential")


class Permuted(nn.Module):
    def forward(self, x):
        h = x * 2
        order = torch.randperm(x.shape[1])  # line marker: randperm
        return h[:, order]


class TrainingDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        return F.dropout(h, 0.5, training=True)  # line marker: dropout


class NormalNoise(nn.Module):
    def forward(self, x):
        h = x.relu()
        noisy = torch.normal(h, 0.1)  # line marker: normal
        return noisy + 1


class EvalDropout(nn.Module):
    """Dropout that draws nothing: `nn.Dropout` in eval mode, `F.dropout` of training=False
    and of p = 0 (torch tags them random all the same)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        h = self.drop(self.fc(x))
        return F.dropout(h, 0.5, training=False) + F.dropout(h, 0.0, training=True)


# ----- Python's and numpy's draws in forward (dycl/frontend/randomness.py) ---------------------

import random  # noqa: E402 (the models below draw as published code does: module-level names)

import numpy as np  # noqa: E402


class LayerDrop(nn.Module):
    """Stochastic depth as older research code writes it (`if random.random() < self.p:
    continue`), at inference too; returns how many layers ran."""

    def __init__(self, p: float = 0.5, layers: int = 3):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(layers))
        self.p = p

    def forward(self, x):
        ran = 0
        for layer in self.layers:
            if random.random() < self.p:
                continue
            x = torch.tanh(layer(x))
            ran += 1
        return x, ran


class HFLayerDrop(nn.Module):
    """Hugging Face's encoder loop (BART, Wav2Vec2 before torch.rand): a draw every layer that
    only a training call reads."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
        self.layerdrop = 0.3

    def forward(self, x):
        for layer in self.layers:
            dropout_probability = random.uniform(0, 1)
            if self.training and (dropout_probability < self.layerdrop):
                continue
            x = layer(x)
        return x


def jitter(x, low, high):
    return x * random.uniform(low, high)


class RandomScaling(nn.Module):
    """A plain helper that draws (`random.uniform`), a numpy gate (`np.random.rand() < p`) and
    a drawn count (`random.randint(a, b)`)."""

    def __init__(self, low=0.9, high=1.1, p=0.5, counts=(1, 3)):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.low, self.high, self.p, self.counts = low, high, p, counts

    def forward(self, x):
        y = jitter(self.fc(x), self.low, self.high)
        gated = np.random.rand() < self.p
        if gated:
            y = y * 2
        k = random.randint(self.counts[0], self.counts[1])
        return y, gated, k


class RandomLayerChoice(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))

    def forward(self, x):
        layer = random.choice(self.layers)  # line marker: choice
        return layer(x)


def _noise(x):
    return x + torch.from_numpy(np.random.normal(size=(4,))).float()  # line marker: numpy-noise


class NumpyNoiseHelper(nn.Module):
    def forward(self, x):
        y = _noise(x * 2)
        return y.relu()
