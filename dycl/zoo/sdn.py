"""Shallow-Deep Networks (Kaya et al., ICML 2019): early exit through internal classifiers.

Six internal classifiers sit at 15%, 30%, ..., 90% of the backbone's depth. At inference the
network returns at the first classifier whose softmax confidence reaches the threshold; when none
does, it returns the most confident of all exits (the six internal ones and the final one).

``forward`` returns ``(logits, exit_index)``: exit 6 is the final classifier.
"""

from __future__ import annotations

import functools
import math
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from dycl.zoo.calibration import (BATCHNORM_SEED, DECISION_MARGIN, CalibrationError,
                                  calibrate_batchnorm, candidate_images, example_image, seeded,
                                  split_between)
from dycl.zoo.entry import Inputs, ZooEntry, memoized_build, memoized_inputs
from dycl.zoo.layers import init_weights
from dycl.zoo import sdn_backbones

THRESHOLD = 0.8
EXIT_DEPTHS = (0.15, 0.30, 0.45, 0.60, 0.75, 0.90)
CANDIDATES = 48


class InternalClassifier(nn.Module):
    """SDN's exit head: a learned mix of max and average pooling down to about 4×4, one linear."""

    def __init__(self, channels: int, size: int, num_classes: int = sdn_backbones.NUM_CLASSES):
        super().__init__()
        kernel = max(size // 4, 1)
        self.max_pool = nn.MaxPool2d(kernel)
        self.avg_pool = nn.AvgPool2d(kernel)
        self.alpha = nn.Parameter(torch.rand(1))
        self.linear = nn.Linear(channels * (size // kernel) ** 2, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mixed = self.alpha * self.max_pool(x) + (1 - self.alpha) * self.avg_pool(x)
        return self.linear(mixed.flatten(1))


class EarlyExitNetwork(nn.Module):
    """A backbone cut into segments, an internal classifier after each, and the final head."""

    def __init__(self, backbone: sdn_backbones.Backbone, threshold: float = THRESHOLD):
        super().__init__()
        ends = [int(depth * len(backbone.layers) + 0.5) for depth in EXIT_DEPTHS]
        starts = [0] + ends[:-1]
        self.segments = nn.ModuleList(
            nn.Sequential(*backbone.layers[start:end]) for start, end in zip(starts, ends))
        self.internal_classifiers = nn.ModuleList(
            InternalClassifier(*backbone.shapes[end - 1]) for end in ends)
        self.tail = nn.Sequential(*backbone.layers[ends[-1]:])
        self.final_classifier = backbone.head
        self.threshold = threshold

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, int]:
        outputs = []
        confidences = []
        for i, (segment, classifier) in enumerate(zip(self.segments, self.internal_classifiers)):
            x = segment(x)
            logits = classifier(x)
            confidence = F.softmax(logits, dim=1).max()
            if confidence >= self.threshold:
                return logits, i
            outputs.append(logits)
            confidences.append(confidence)
        logits = self.final_classifier(self.tail(x))
        outputs.append(logits)
        confidences.append(F.softmax(logits, dim=1).max())
        most_confident = torch.stack(confidences).argmax().item()
        return outputs[most_confident], most_confident

    def all_exit_logits(self, x: torch.Tensor) -> list[torch.Tensor]:
        """The logits of every exit, without stopping early (for calibration and paths)."""
        outputs = []
        for segment, classifier in zip(self.segments, self.internal_classifiers):
            x = segment(x)
            outputs.append(classifier(x))
        outputs.append(self.final_classifier(self.tail(x)))
        return outputs


# --- paths -------------------------------------------------------------------------------------

def exit_path(confidences: list[float], threshold: float) -> tuple[tuple[int, bool], float]:
    """``((exit_index, fired), margin)`` for one input's exit confidences, as ``forward`` decides.

    ``fired`` is False when no internal classifier reached the threshold and the most confident
    exit was returned. ``margin`` is how far the closest decision was from flipping.
    """
    margin = math.inf
    for index, confidence in enumerate(confidences[:-1]):
        margin = min(margin, abs(confidence - threshold))
        if confidence >= threshold:
            return (index, True), margin
    ranked = sorted(confidences, reverse=True)
    margin = min(margin, ranked[0] - ranked[1])
    return (int(torch.tensor(confidences).argmax()), False), margin


def _confidences(model: EarlyExitNetwork, images: torch.Tensor) -> torch.Tensor:
    """Softmax confidence of every exit, one row per image."""
    with torch.no_grad():
        logits = model.all_exit_logits(images)
    return torch.stack([F.softmax(z, dim=1).amax(dim=1) for z in logits], dim=1)


def path_of(model: EarlyExitNetwork, inputs: Inputs) -> tuple[int, bool]:
    return exit_path(_confidences(model, *inputs)[0].tolist(), model.threshold)[0]


def branches_of(path: tuple[int, bool]) -> frozenset[str]:
    index, fired = path
    return frozenset({f"exit {index}" if fired else "no exit fires"})


def all_branches(model: EarlyExitNetwork) -> frozenset[str]:
    exits = {f"exit {i}" for i in range(len(model.internal_classifiers))}
    return frozenset(exits | {"no exit fires"})


# --- calibration -------------------------------------------------------------------------------

def _scale_reaching(logits: torch.Tensor, threshold: float) -> torch.Tensor:
    """Per row, the factor s at which softmax(s · logits) first has max >= threshold."""
    low = torch.full((len(logits),), -30.0)
    high = torch.full((len(logits),), 30.0)
    for _ in range(80):  # bisection on log s; confidence grows with s
        middle = (low + high) / 2
        reached = F.softmax(logits * middle.exp()[:, None], dim=1).amax(dim=1) >= threshold
        high = torch.where(reached, middle, high)
        low = torch.where(reached, low, middle)
    return high.exp()


@torch.no_grad()
def calibrate_exit_temperatures(model: EarlyExitNetwork, images: torch.Tensor) -> None:
    """Scale each internal classifier so that exits fire evenly on ``images``.

    Exit k is scaled so that it fires for 1/(7-k) of the images no earlier exit took; the seven
    outcomes (six exits and 'none fires') then get about 1/7 of the images each, as a trained
    SDN spreads easy and hard inputs over its exits. Scaling a linear layer's weight and bias
    is a temperature: it changes confidences, never which class wins.
    """
    logits = model.all_exit_logits(images)
    waiting = torch.ones(len(images), dtype=torch.bool)
    count = len(model.internal_classifiers)
    for k, classifier in enumerate(model.internal_classifiers):
        log_needed = _scale_reaching(logits[k], model.threshold).log()
        # fires iff log s >= log_needed; cut the waiting images' -log_needed at share 1/(7-k)
        log_scale = -split_between(-log_needed[waiting], 1.0 / (count + 1 - k))
        scale = math.exp(log_scale)
        classifier.linear.weight.mul_(scale)
        classifier.linear.bias.mul_(scale)
        fired = F.softmax(logits[k] * scale, dim=1).amax(dim=1) >= model.threshold
        waiting &= ~fired
    # The final head is scaled to reach the threshold on half the images, so that a fallback
    # sometimes returns the final exit and sometimes an internal one.
    final_linear = model.final_classifier[-1]
    scale = _scale_reaching(logits[-1], model.threshold).median().item()
    final_linear.weight.mul_(scale)
    final_linear.bias.mul_(scale)


def _build(make_backbone: Callable[[], sdn_backbones.Backbone], seed: int) -> EarlyExitNetwork:
    with seeded(seed):
        model = EarlyExitNetwork(make_backbone())
        init_weights(model)
        for classifier in model.internal_classifiers:
            nn.init.uniform_(classifier.alpha)
    calibrate_batchnorm(model, model.all_exit_logits, candidate_images(16, 32, BATCHNORM_SEED))
    calibrate_exit_temperatures(model, candidate_images(CANDIDATES, 32))
    return model.eval()


def _select_path_inputs(model: EarlyExitNetwork) -> list[Inputs]:
    """One candidate per exit, plus fallbacks to the final exit and to an internal one."""
    images = candidate_images(CANDIDATES, 32)
    chosen: dict[object, int] = {}
    for i, row in enumerate(_confidences(model, images).tolist()):
        (index, fired), margin = exit_path(row, model.threshold)
        if margin < DECISION_MARGIN:
            continue
        final = len(row) - 1
        key = ("exit", index) if fired else ("fallback", "final" if index == final else "internal")
        chosen.setdefault(key, i)
    taken = {f"exit {index}" if kind == "exit" else "no exit fires" for kind, index in chosen}
    missing = all_branches(model) - taken
    if missing:
        raise CalibrationError(f"SDN candidates miss {sorted(missing)}")
    return [(images[i:i + 1].clone(),) for i in sorted(chosen.values())]


def _entry(name: str, make_backbone: Callable[[], sdn_backbones.Backbone],
           summary: str) -> ZooEntry:
    build = memoized_build(functools.partial(_build, make_backbone))
    path_inputs = memoized_inputs(lambda: _select_path_inputs(build(0)))
    example_inputs = functools.partial(example_image, 32)
    return ZooEntry(name=name, family="sdn", summary=summary, build=build,
                    example_inputs=example_inputs, path_inputs=path_inputs, path_of=path_of,
                    branches_of=branches_of, all_branches=all_branches)


ENTRIES = [
    _entry("sdn_mobilenet", sdn_backbones.mobilenet, "MobileNet (13 depthwise-separable blocks)"),
    _entry("sdn_vgg", sdn_backbones.vgg16_bn, "VGG-16-BN (13 conv, FC 512-512)"),
    _entry("sdn_resnet", sdn_backbones.resnet56, "ResNet-56 ([9,9,9] basic blocks)"),
    _entry("sdn_wideresnet", sdn_backbones.wide_resnet32_4, "WRN-32-4 ([5,5,5], 64/128/256)"),
]
