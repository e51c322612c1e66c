"""Image encoders of the two captioning networks, sized for 64×64 inputs.

Both map 1×3×64×64 to an 8×8 grid of 512-channel features that the decoder attends over.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dycl.zoo.layers import conv_bn_relu

FEATURE_CHANNELS = 512


def conv_bn(in_channels: int, out_channels: int, kernel: int, stride: int = 1,
            groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel, stride=stride, padding=kernel // 2,
                  groups=groups, bias=False),
        nn.BatchNorm2d(out_channels))


class ResNeXtBlock(nn.Module):
    """Bottleneck with a grouped 3×3 conv: 1×1 reduce, 3×3 with ``cardinality`` groups, 1×1 expand."""

    def __init__(self, in_channels: int, out_channels: int, cardinality: int,
                 group_width: int, stride: int = 1):
        super().__init__()
        width = cardinality * group_width
        self.reduce = conv_bn(in_channels, width, 1)
        self.grouped = conv_bn(width, width, 3, stride=stride, groups=cardinality)
        self.expand = conv_bn(width, out_channels, 1)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = conv_bn(in_channels, out_channels, 1, stride=stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.reduce(x))
        out = F.relu(self.grouped(out))
        return F.relu(self.expand(out) + self.shortcut(x))


def resnext_encoder(cardinality: int = 8) -> nn.Sequential:
    """ResNeXt-20 (8×4d): stride-2 stem, then [2,2,2] blocks to 128/256/512 channels."""
    layers: list[nn.Module] = [conv_bn_relu(3, 64, stride=2)]
    in_channels = 64
    for stage, (out_channels, group_width) in enumerate([(128, 4), (256, 8), (512, 16)]):
        for index in range(2):
            stride = 2 if stage > 0 and index == 0 else 1
            layers.append(ResNeXtBlock(in_channels, out_channels, cardinality, group_width, stride))
            in_channels = out_channels
    return nn.Sequential(*layers)


class Inception(nn.Module):
    """GoogLeNet's inception module: 1×1 | 1×1→3×3 | 1×1→5×5 | max-pool→1×1, concatenated."""

    def __init__(self, in_channels: int, c1: int, c3_reduce: int, c3: int, c5_reduce: int,
                 c5: int, pool_proj: int):
        super().__init__()
        self.branch1 = conv_bn_relu_k(in_channels, c1, 1)
        self.branch3 = nn.Sequential(conv_bn_relu_k(in_channels, c3_reduce, 1),
                                     conv_bn_relu_k(c3_reduce, c3, 3))
        self.branch5 = nn.Sequential(conv_bn_relu_k(in_channels, c5_reduce, 1),
                                     conv_bn_relu_k(c5_reduce, c5, 5))
        self.branch_pool = nn.Sequential(nn.MaxPool2d(3, stride=1, padding=1),
                                         conv_bn_relu_k(in_channels, pool_proj, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.branch1(x), self.branch3(x), self.branch5(x),
                          self.branch_pool(x)], dim=1)


def conv_bn_relu_k(in_channels: int, out_channels: int, kernel: int,
                   stride: int = 1) -> nn.Sequential:
    return nn.Sequential(*conv_bn(in_channels, out_channels, kernel, stride), nn.ReLU())


def googlenet_encoder() -> nn.Sequential:
    """GoogLeNet up to inception 4a: 7×7 stem, max-pool, 1×1 and 3×3 convs, 3a, 3b, pool, 4a."""
    return nn.Sequential(
        conv_bn_relu_k(3, 64, 7, stride=2),                      # 32×32
        nn.MaxPool2d(3, stride=2, padding=1),                    # 16×16
        conv_bn_relu_k(64, 64, 1),
        conv_bn_relu_k(64, 192, 3),
        Inception(192, 64, 96, 128, 16, 32, 32),                 # 3a -> 256
        Inception(256, 128, 128, 192, 32, 96, 64),               # 3b -> 480
        nn.MaxPool2d(3, stride=2, padding=1),                    # 8×8
        Inception(480, 192, 96, 208, 16, 48, 64),                # 4a -> 512
    )
