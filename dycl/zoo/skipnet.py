"""SkipNet (Wang et al., ECCV 2018): gates decide, per input, which residual blocks to run.

Backbone: ResNet-38 for CIFAR ([6,6,6] basic blocks, 16/32/64 channels). The first block always
runs; before each later block a gate looks at the current features and the block either runs or
is skipped for real, leaving only its shortcut (identity, or the downsampling 1×1 conv).

- ``skipnet_rnn``: one LSTM gate (hidden 10) shared by all blocks reads a per-block embedding
  (average pool, 1×1 conv to 10); the block runs when sigmoid(proj(h)) > 0.5.
- ``skipnet_ff``: a small feed-forward gate per block (max-pool, two 3×3 convs, average pool,
  1×1 conv to 2, softmax); the block is skipped when p_skip > 0.5.

``forward`` returns the logits. The path of an input is the tuple of run (True) / skip (False)
decisions for the 17 gated blocks.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import nn

from dycl.zoo.calibration import (BATCHNORM_SEED, DECISION_MARGIN, CalibrationError,
                                  calibrate_batchnorm, candidate_images, example_image,
                                  greedy_cover, seeded, split_between)
from dycl.zoo.entry import Inputs, ZooEntry, memoized_build, memoized_inputs
from dycl.zoo.layers import cifar_resnet_blocks, conv_bn_relu, init_weights

EMBED_DIM = 10
HIDDEN_DIM = 10
CANDIDATES = 48


class GatedResNet38(nn.Module):
    """The ResNet-38 body both SkipNets share; subclasses add the gates and ``forward``."""

    def __init__(self):
        super().__init__()
        blocks = cifar_resnet_blocks([6, 6, 6], [16, 32, 64], in_channels=16)
        self.stem = conv_bn_relu(3, 16)
        self.first_block = blocks[0]
        self.gated_blocks = nn.ModuleList(blocks[1:])
        self.head = nn.Sequential(nn.AvgPool2d(8), nn.Flatten(), nn.Linear(64, 10))
        # (channels, size) of the features each gate reads: the output of the previous block
        self.gate_inputs = [(16, 32)] * 6 + [(32, 16)] * 6 + [(64, 8)] * 5

    def run_probabilities(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Every block on a whole batch, each image along its own path (a mask, not a branch).

        Returns the logits and the probability that each gated block runs (batch × 17). Used to
        calibrate and to name paths; ``forward`` must agree with it.
        """
        x = self.first_block(self.stem(x))
        probabilities = []
        gate_state = self.initial_gate_state(len(x))
        for index, block in enumerate(self.gated_blocks):
            p_run, gate_state = self.run_probability(index, x, gate_state)
            run = (p_run > 0.5)[:, None, None, None]
            x = torch.where(run, block(x), block.shortcut(x))
            probabilities.append(p_run)
        return self.head(x), torch.stack(probabilities, dim=1)

    def initial_gate_state(self, batch: int):
        return None

    def run_probability(self, index: int, x: torch.Tensor, gate_state):
        raise NotImplementedError


class RecurrentGate(nn.Module):
    """One LSTM cell for all blocks; its hidden state is projected to the probability to run."""

    def __init__(self, embed_dim: int = EMBED_DIM, hidden_dim: int = HIDDEN_DIM):
        super().__init__()
        self.cell = nn.LSTMCell(embed_dim, hidden_dim)
        self.proj = nn.Linear(hidden_dim, 1)

    def forward(self, embedding: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]):
        h, c = self.cell(embedding, state)
        return torch.sigmoid(self.proj(h)), (h, c)


class SkipNetRNN(GatedResNet38):
    def __init__(self):
        super().__init__()
        self.gate_embeddings = nn.ModuleList(
            nn.Sequential(nn.AvgPool2d(size), nn.Conv2d(channels, EMBED_DIM, 1))
            for channels, size in self.gate_inputs)
        self.gate = RecurrentGate()
        self.hidden_dim = HIDDEN_DIM

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = self.first_block(x)
        state = (torch.zeros(1, self.hidden_dim), torch.zeros(1, self.hidden_dim))
        for block, embed in zip(self.gated_blocks, self.gate_embeddings):
            p_run, state = self.gate(embed(x).flatten(1), state)
            if p_run > 0.5:
                x = block(x)
            else:
                x = block.shortcut(x)
        return self.head(x)

    def initial_gate_state(self, batch: int):
        return torch.zeros(batch, HIDDEN_DIM), torch.zeros(batch, HIDDEN_DIM)

    def run_probability(self, index: int, x: torch.Tensor, gate_state):
        p_run, gate_state = self.gate(self.gate_embeddings[index](x).flatten(1), gate_state)
        return p_run[:, 0], gate_state


class FeedforwardGate(nn.Module):
    """SkipNet's FFGate-I: max-pool, two 3×3 convs, average pool, 1×1 conv to (skip, run)."""

    def __init__(self, channels: int, size: int):
        super().__init__()
        self.max_pool = nn.MaxPool2d(2)
        self.conv1 = conv_bn_relu(channels, channels)
        self.conv2 = conv_bn_relu(channels, channels)
        self.avg_pool = nn.AvgPool2d(size // 2)
        self.linear = nn.Conv2d(channels, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv2(self.conv1(self.max_pool(x)))
        return F.softmax(self.linear(self.avg_pool(x)).flatten(1), dim=1)


class SkipNetFF(GatedResNet38):
    def __init__(self):
        super().__init__()
        self.gates = nn.ModuleList(FeedforwardGate(c, s) for c, s in self.gate_inputs)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = self.first_block(x)
        for block, gate in zip(self.gated_blocks, self.gates):
            p_skip = gate(x)[0, 0]
            if p_skip > 0.5:
                x = block.shortcut(x)
            else:
                x = block(x)
        return self.head(x)

    def run_probability(self, index: int, x: torch.Tensor, gate_state):
        return self.gates[index](x)[:, 1], None


# --- paths -------------------------------------------------------------------------------------

def path_of(model: GatedResNet38, inputs: Inputs) -> tuple[bool, ...]:
    with torch.no_grad():
        _, probabilities = model.run_probabilities(*inputs)
    return tuple(bool(p > 0.5) for p in probabilities[0])


def branches_of(path: tuple[bool, ...]) -> frozenset[str]:
    return frozenset(f"block {i + 1} {'runs' if run else 'skipped'}" for i, run in enumerate(path))


def all_branches(model: GatedResNet38) -> frozenset[str]:
    return branches_of((True,) * len(model.gated_blocks)) | branches_of(
        (False,) * len(model.gated_blocks))


# --- calibration -------------------------------------------------------------------------------

def _run_every_gate(model: GatedResNet38, images: torch.Tensor) -> None:
    # Train-mode pass for BatchNorm statistics: run each block and gate on all images.
    x = model.first_block(model.stem(images))
    gate_state = model.initial_gate_state(len(x))
    for index, block in enumerate(model.gated_blocks):
        _, gate_state = model.run_probability(index, x, gate_state)
        x = block(x)
    model.head(x)


@torch.no_grad()
def calibrate_ff_gates(model: SkipNetFF, images: torch.Tensor) -> None:
    """Shift each gate's (skip, run) bias so it skips half the images that reach it."""
    x = model.first_block(model.stem(images))
    for block, gate in zip(model.gated_blocks, model.gates):
        logits = gate.linear(gate.avg_pool(gate.conv2(gate.conv1(gate.max_pool(x))))).flatten(1)
        gate.linear.bias[0] -= split_between(logits[:, 0] - logits[:, 1], 0.5)
        skip = (gate(x)[:, 0] > 0.5)[:, None, None, None]
        x = torch.where(skip, block.shortcut(x), block(x))


def calibrate_rnn_gate(model: SkipNetRNN, images: torch.Tensor) -> None:
    """Centre the shared gate on every block, then give its projection a useful gain.

    The LSTM's state drifts from block to block, so with one shared projection some blocks would
    always run and others never. Each block's embedding bias is shifted (along the direction
    that moves the gate most) until the gate runs that block for half the images that reach it.
    """
    with torch.no_grad():
        x = model.first_block(model.stem(images))
    state = model.initial_gate_state(len(x))
    for block, embed in zip(model.gated_blocks, model.gate_embeddings):
        with torch.no_grad():
            embedding = embed(x).flatten(1)
        direction = _steepest_direction(model.gate, embedding, state)
        shift = _median_root(lambda t: _run_probability_along(model.gate, embedding, direction,
                                                              state, t) - 0.5)
        with torch.no_grad():
            embed[1].bias += shift * direction
            p_run, state = model.gate(embed(x).flatten(1), state)
            x = torch.where((p_run > 0.5)[:, :, None, None], block(x), block.shortcut(x))
    with torch.no_grad():
        _, probabilities = model.run_probabilities(images)
        gain = 1.0 / torch.logit(probabilities).abs().median()
        model.gate.proj.weight *= gain
        model.gate.proj.bias *= gain


def _run_probability_along(gate: RecurrentGate, embedding: torch.Tensor, direction: torch.Tensor,
                           state, shifts: torch.Tensor) -> torch.Tensor:
    """The gate's run probability (shifts × inputs) with the embedding moved by t · direction."""
    count = len(shifts)
    moved = (embedding[None] + shifts[:, None, None] * direction).flatten(0, 1)
    repeated = tuple(s.repeat(count, 1) for s in state)
    return gate(moved, repeated)[0].view(count, len(embedding))


def _steepest_direction(gate: RecurrentGate, embedding: torch.Tensor, state) -> torch.Tensor:
    """Unit direction in embedding space along which the mean gate probability grows fastest."""
    embedding = embedding.clone().requires_grad_(True)
    with torch.enable_grad():
        gate(embedding, state)[0].sum().backward()
    direction = embedding.grad.sum(dim=0)
    return direction / direction.norm()


@torch.no_grad()
def _median_root(offset_of, bound: float = 64.0, points: int = 129) -> float:
    """The t nearest 0 where the median over inputs of ``offset_of(t)`` changes sign.

    ``offset_of`` takes a vector of t values and returns (len(t) × inputs); a coarse grid
    brackets the crossing and a fine grid inside the bracket locates it.
    """
    low, high = -bound, bound
    for _ in range(3):  # each round narrows the bracket by a factor of points - 1
        grid = torch.linspace(low, high, points)
        positive = offset_of(grid).quantile(0.5, dim=1) > 0  # midway between the middle two
        crossings = (positive[1:] != positive[:-1]).nonzero().flatten()
        if len(crossings) == 0:
            raise CalibrationError("the SkipNet gate cannot be centred on this block")
        i = int(crossings[torch.argmin((grid[crossings] + grid[crossings + 1]).abs())])
        low, high = float(grid[i]), float(grid[i + 1])
    return (low + high) / 2


def _build(model_class: type[GatedResNet38], seed: int) -> GatedResNet38:
    with seeded(seed):
        model = model_class()
        init_weights(model)
    calibrate_batchnorm(model, lambda images: _run_every_gate(model, images),
                        candidate_images(16, 32, BATCHNORM_SEED))
    images = candidate_images(CANDIDATES, 32)
    if isinstance(model, SkipNetFF):
        calibrate_ff_gates(model, images)
    else:
        calibrate_rnn_gate(model, images)
    return model.eval()


def _select_path_inputs(model: GatedResNet38) -> list[Inputs]:
    images = candidate_images(CANDIDATES, 32)
    with torch.no_grad():
        _, probabilities = model.run_probabilities(images)
    outcomes = []
    for row in probabilities:
        clear = bool(((row - 0.5).abs() >= DECISION_MARGIN).all())
        outcomes.append(branches_of(tuple(bool(p > 0.5) for p in row)) if clear else frozenset())
    chosen = greedy_cover(outcomes, all_branches(model))
    return [(images[i:i + 1].clone(),) for i in sorted(chosen)]


def _entry(name: str, model_class: type[GatedResNet38], summary: str) -> ZooEntry:
    build = memoized_build(functools.partial(_build, model_class))
    path_inputs = memoized_inputs(lambda: _select_path_inputs(build(0)))
    example_inputs = functools.partial(example_image, 32)
    return ZooEntry(name=name, family="skipnet", summary=summary, build=build,
                    example_inputs=example_inputs, path_inputs=path_inputs, path_of=path_of,
                    branches_of=branches_of, all_branches=all_branches)


ENTRIES = [
    _entry("skipnet_rnn", SkipNetRNN, "ResNet-38 + shared LSTM gate (hidden 10)"),
    _entry("skipnet_ff", SkipNetFF, "ResNet-38 + feed-forward gate per block"),
]
