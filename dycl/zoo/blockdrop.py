"""BlockDrop (Wu et al., CVPR 2018): a policy network picks, once per input, which blocks run.

Backbone: FlatResNet-32 for CIFAR ([5,5,5] basic blocks, 16/32/64 channels). A small ResNet
policy network ([1,1,1] blocks) maps the image to 15 sigmoid outputs; block t runs iff its
output is >= 0.5, otherwise only its shortcut (identity, or the downsampling 1×1 conv) runs.

``forward`` returns the logits. An input's path is its 15-bit policy (True = the block runs).
"""

from __future__ import annotations

import functools

import torch
from torch import nn

from dycl.zoo.calibration import (BATCHNORM_SEED, DECISION_MARGIN, calibrate_batchnorm,
                                  candidate_images, example_image, greedy_cover, seeded,
                                  split_between)
from dycl.zoo.entry import Inputs, ZooEntry, memoized_build, memoized_inputs
from dycl.zoo.layers import cifar_resnet_blocks, conv_bn_relu, init_weights

NUM_BLOCKS = 15
CANDIDATES = 48


class PolicyNetwork(nn.Module):
    """ResNet-8: a stem, one basic block per stage, then one logit per backbone block."""

    def __init__(self, num_blocks: int = NUM_BLOCKS):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn_relu(3, 16), *cifar_resnet_blocks([1, 1, 1], [16, 32, 64], in_channels=16),
            nn.AvgPool2d(8), nn.Flatten())
        self.logits = nn.Linear(64, num_blocks)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.logits(self.features(x))


class BlockDrop(nn.Module):
    def __init__(self):
        super().__init__()
        self.policy_net = PolicyNetwork()
        self.stem = conv_bn_relu(3, 16)
        self.blocks = nn.ModuleList(cifar_resnet_blocks([5, 5, 5], [16, 32, 64], in_channels=16))
        self.head = nn.Sequential(nn.AvgPool2d(8), nn.Flatten(), nn.Linear(64, 10))

    def block_policy(self, x: torch.Tensor) -> torch.Tensor:
        """Which blocks run for each image (batch × 15 booleans)."""
        return torch.sigmoid(self.policy_net(x)) >= 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        policy = self.block_policy(x)
        x = self.stem(x)
        for t, block in enumerate(self.blocks):
            if policy[0, t]:
                x = block(x)
            else:
                x = block.shortcut(x)
        return self.head(x)


# --- paths -------------------------------------------------------------------------------------

def path_of(model: BlockDrop, inputs: Inputs) -> tuple[bool, ...]:
    with torch.no_grad():
        return tuple(bool(bit) for bit in model.block_policy(*inputs)[0])


def branches_of(path: tuple[bool, ...]) -> frozenset[str]:
    return frozenset(f"block {t} {'runs' if run else 'dropped'}" for t, run in enumerate(path))


def all_branches(model: BlockDrop) -> frozenset[str]:
    count = len(model.blocks)
    return branches_of((True,) * count) | branches_of((False,) * count)


# --- calibration -------------------------------------------------------------------------------

def _run_everything(model: BlockDrop, images: torch.Tensor) -> None:
    model.policy_net(images)
    x = model.stem(images)
    for block in model.blocks:
        x = block(x)
    model.head(x)


@torch.no_grad()
def calibrate_policy(model: BlockDrop, images: torch.Tensor) -> None:
    """Centre each policy logit on its median over ``images`` (each block runs for half of
    them), then scale the logits so a typical one is ±1 (decisions far from 0.5)."""
    logits = model.policy_net(images)
    for t in range(logits.shape[1]):
        model.policy_net.logits.bias[t] -= split_between(logits[:, t], 0.5)
    centred = model.policy_net(images)
    gain = 1.0 / centred.abs().median()
    model.policy_net.logits.weight *= gain
    model.policy_net.logits.bias *= gain


def _build(seed: int) -> BlockDrop:
    with seeded(seed):
        model = BlockDrop()
        init_weights(model)
    calibrate_batchnorm(model, lambda images: _run_everything(model, images),
                        candidate_images(16, 32, BATCHNORM_SEED))
    calibrate_policy(model, candidate_images(CANDIDATES, 32))
    return model.eval()


def _select_path_inputs(model: BlockDrop) -> list[Inputs]:
    images = candidate_images(CANDIDATES, 32)
    with torch.no_grad():
        probabilities = torch.sigmoid(model.policy_net(images))
    outcomes = []
    for row in probabilities:
        clear = bool(((row - 0.5).abs() >= DECISION_MARGIN).all())
        outcomes.append(branches_of(tuple(bool(p >= 0.5) for p in row)) if clear else frozenset())
    chosen = greedy_cover(outcomes, all_branches(model))
    return [(images[i:i + 1].clone(),) for i in sorted(chosen)]


build = memoized_build(_build)
path_inputs = memoized_inputs(lambda: _select_path_inputs(build(0)))
example_inputs = functools.partial(example_image, 32)

ENTRIES = [
    ZooEntry(name="blockdrop", family="blockdrop",
             summary="FlatResNet-32 + ResNet-8 policy network (15 bits)", build=build,
             example_inputs=example_inputs, path_inputs=path_inputs, path_of=path_of,
             branches_of=branches_of, all_branches=all_branches),
]
