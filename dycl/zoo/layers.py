"""Layers shared by the zoo: conv helpers, the CIFAR ResNet basic block, weight init.

The basic block keeps its residual branch and its shortcut as separate attributes because the
dynamic networks use them separately: skipping a block runs the shortcut alone.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def conv3x3(in_channels: int, out_channels: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)


def conv_bn_relu(in_channels: int, out_channels: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(conv3x3(in_channels, out_channels, stride),
                         nn.BatchNorm2d(out_channels), nn.ReLU())


class BasicBlock(nn.Module):
    """relu(branch(x) + shortcut(x)); the shortcut is a strided 1×1 conv when the shape changes."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1):
        super().__init__()
        self.branch = nn.Sequential(
            conv3x3(in_channels, out_channels, stride), nn.BatchNorm2d(out_channels), nn.ReLU(),
            conv3x3(out_channels, out_channels), nn.BatchNorm2d(out_channels))
        if stride == 1 and in_channels == out_channels:
            self.shortcut: nn.Module = nn.Identity()
        else:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.branch(x) + self.shortcut(x))


def cifar_resnet_blocks(blocks_per_stage: list[int], widths: list[int],
                        in_channels: int) -> list[BasicBlock]:
    """The blocks of a three-stage CIFAR ResNet; stages after the first halve the resolution."""
    blocks = []
    for stage, (count, width) in enumerate(zip(blocks_per_stage, widths)):
        for index in range(count):
            stride = 2 if stage > 0 and index == 0 else 1
            blocks.append(BasicBlock(in_channels, width, stride))
            in_channels = width
    return blocks


def init_weights(model: nn.Module) -> None:
    """The init the source papers' code uses: He-normal convs, unit BatchNorm, small linears."""
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.BatchNorm2d):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, 0.0, 0.01)
            nn.init.zeros_(module.bias)
