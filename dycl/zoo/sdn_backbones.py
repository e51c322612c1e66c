"""The four SDN backbones (CIFAR-scale), each cut into a flat list of layers.

An early-exit network attaches its internal classifiers between these layers, so every backbone
reports the (channels, resolution) after each layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from dycl.zoo.layers import cifar_resnet_blocks, conv3x3, conv_bn_relu

NUM_CLASSES = 10


@dataclass
class Backbone:
    layers: list[nn.Module]         # the first one includes the stem
    head: nn.Module                 # the final classifier, after the last layer

    @property
    def shapes(self) -> list[tuple[int, int]]:
        """(channels, height = width) after each layer, from a dry run on a 32×32 input.

        The layers are fresh; eval mode keeps the dry run from touching BatchNorm statistics.
        """
        shapes = []
        x = torch.zeros(1, 3, 32, 32)
        with torch.no_grad():
            for layer in self.layers:
                x = layer.eval()(x)
                shapes.append((x.shape[1], x.shape[2]))
        return shapes


class DepthwiseSeparable(nn.Module):
    """MobileNet block: 3×3 depthwise conv, then 1×1 pointwise conv, each with BN and ReLU."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1):
        super().__init__()
        self.depthwise = nn.Sequential(
            nn.Conv2d(in_channels, in_channels, 3, stride=stride, padding=1,
                      groups=in_channels, bias=False),
            nn.BatchNorm2d(in_channels), nn.ReLU())
        self.pointwise = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pointwise(self.depthwise(x))


def mobilenet() -> Backbone:
    """MobileNet for 32×32 inputs: 13 depthwise-separable blocks, 32 -> 1024 channels."""
    config = [64, (128, 2), 128, (256, 2), 256, (512, 2), 512, 512, 512, 512, 512, (1024, 2), 1024]
    layers: list[nn.Module] = []
    channels = 32
    for item in config:
        width, stride = item if isinstance(item, tuple) else (item, 1)
        layers.append(DepthwiseSeparable(channels, width, stride))
        channels = width
    layers[0] = nn.Sequential(conv_bn_relu(3, 32), layers[0])
    head = nn.Sequential(nn.AvgPool2d(2), nn.Flatten(), nn.Linear(channels, NUM_CLASSES))
    return Backbone(layers, head)


def vgg16_bn() -> Backbone:
    """VGG-16 with BatchNorm for 32×32 inputs: 13 convs (max-pool after 2, 4, 7, 10, 13), FC 512-512."""
    widths = [64, 64, 128, 128, 256, 256, 256, 512, 512, 512, 512, 512, 512]
    pooled_after = {1, 3, 6, 9, 12}
    layers: list[nn.Module] = []
    channels = 3
    for index, width in enumerate(widths):
        layer = [nn.Conv2d(channels, width, 3, padding=1), nn.BatchNorm2d(width), nn.ReLU()]
        if index in pooled_after:
            layer.append(nn.MaxPool2d(2))
        layers.append(nn.Sequential(*layer))
        channels = width
    head = nn.Sequential(nn.Flatten(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, NUM_CLASSES))
    return Backbone(layers, head)


def resnet56() -> Backbone:
    """ResNet-56 for CIFAR: 3 stages of 9 basic blocks, 16/32/64 channels."""
    blocks = cifar_resnet_blocks([9, 9, 9], [16, 32, 64], in_channels=16)
    return _resnet_backbone(blocks, conv_bn_relu(3, 16), final_norm=None, channels=64)


class WideBasic(nn.Module):
    """Pre-activation wide block: BN-ReLU-conv, BN-ReLU-conv, plus a 1×1 conv shortcut on change."""

    def __init__(self, in_channels: int, out_channels: int, stride: int = 1):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(in_channels)
        self.conv1 = conv3x3(in_channels, out_channels, stride)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.conv2 = conv3x3(out_channels, out_channels)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv1(F.relu(self.bn1(x)))
        out = self.conv2(F.relu(self.bn2(out)))
        return out + self.shortcut(x)


def wide_resnet32_4() -> Backbone:
    """WRN-32-4 for CIFAR: 3 stages of 5 wide blocks, 64/128/256 channels."""
    blocks: list[nn.Module] = []
    channels = 16
    for stage, width in enumerate([64, 128, 256]):
        for index in range(5):
            stride = 2 if stage > 0 and index == 0 else 1
            blocks.append(WideBasic(channels, width, stride))
            channels = width
    final_norm = nn.Sequential(nn.BatchNorm2d(channels), nn.ReLU())
    return _resnet_backbone(blocks, conv3x3(3, 16), final_norm, channels)


def _resnet_backbone(blocks: list[nn.Module], stem: nn.Module, final_norm: nn.Module | None,
                     channels: int) -> Backbone:
    """The stem joins the first block; the head pools the final 8×8 map of ``channels``."""
    layers = [nn.Sequential(stem, blocks[0]), *blocks[1:]]
    head_layers = [] if final_norm is None else [final_norm]
    head_layers += [nn.AvgPool2d(8), nn.Flatten(), nn.Linear(channels, NUM_CLASSES)]
    return Backbone(layers, nn.Sequential(*head_layers))
