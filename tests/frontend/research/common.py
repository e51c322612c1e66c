"""Input generation and control-flow-free building blocks shared by the research corpus.

Nothing here has a `forward` of its own with Python control flow, so every error the
frontend reports for a corpus model must point into the model's own file.
"""

from __future__ import annotations

import torch
import torch.nn as nn


def randn(*shape, seed: int = 0, scale: float = 1.0) -> torch.Tensor:
    """A reproducible normal tensor: the same (shape, seed, scale) gives the same values."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator) * scale


def randint(high: int, *shape, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, high, shape, generator=generator)


def conv_bn(cin: int, cout: int, inplace: bool = False) -> nn.Sequential:
    """conv3x3 + BN + ReLU, the stem/stage of most CIFAR research code."""
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=inplace))


def pooled_head(channels: int, classes: int) -> nn.Sequential:
    """Internal classifier: global average pool + linear."""
    return nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, classes))


def randomize_bn(module: nn.Module, seed: int = 0) -> None:
    """Non-trivial BatchNorm running statistics (fresh ones are the identity in eval mode)."""
    generator = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=generator) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=generator) + 0.5)


def images(pairs, shape=(1, 3, 8, 8)) -> list[tuple[torch.Tensor]]:
    """One-input argument tuples `(randn(shape, seed, scale),)` for (seed, scale) pairs."""
    return [(randn(*shape, seed=seed, scale=scale),) for seed, scale in pairs]


def tinted(pairs, shape=(1, 3, 8, 8)) -> list[tuple[torch.Tensor]]:
    """Images with a per-channel offset of size `scale` on unit noise: pooled gate features
    vary with the tint (plain noise averages out under global pooling)."""
    return [(randn(*shape, seed=seed) + randn(shape[0], shape[1], 1, 1, seed=seed + 1000, scale=scale),) for seed, scale in pairs]
