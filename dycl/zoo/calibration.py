"""Deterministic calibration shared by the zoo families.

Random weights give flat, input-independent decisions (every softmax is ~uniform, every gate
sits on the same side), so each family calibrates its decision layers on seeded inputs: batch
norm statistics first, then exit temperatures, gate biases or the end-token bias. Afterwards the
values are ordinary constants of the built model.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import nn

# A path input's decisions all lie at least this far from their thresholds, in the decision's
# own units (a softmax confidence, a gate probability, a score gap): compiled code (ONNX
# Runtime, TVM) differs from eager by ~1e-5 and must take the same branch.
DECISION_MARGIN = 1e-2

CANDIDATE_SEED = 20_240_611
BATCHNORM_SEED = 7


class CalibrationError(RuntimeError):
    """The seeded inputs could not be made to take every path."""


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run the block with torch's global generator set to ``seed``, restoring it afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def candidate_images(count: int, size: int, seed: int = CANDIDATE_SEED) -> torch.Tensor:
    """``count`` images (count×3×size×size) that differ in contrast, smoothness and colour.

    Mixing white and low-frequency noise at scales from 1/4 to 4 gives features that vary in
    more directions than plain ``randn`` does, which is what makes calibrated decisions differ.
    """
    generator = torch.Generator().manual_seed(seed)
    images = []
    for i in range(count):
        scale = 2.0 ** (-2.0 + 4.0 * torch.rand(1, generator=generator).item())
        white = torch.randn(1, 3, size, size, generator=generator)
        coarse = torch.randn(1, 3, size // 8, size // 8, generator=generator)
        smooth = F.interpolate(coarse, size=(size, size), mode="bilinear", align_corners=False)
        colour = 0.5 * torch.randn(1, 3, 1, 1, generator=generator)
        mix = (i % 4) / 3.0
        images.append(scale * (mix * white + (1.0 - mix) * 2.0 * smooth) + colour)
    return torch.cat(images)


@torch.no_grad()
def calibrate_batchnorm(model: nn.Module, run_everything: Callable[[torch.Tensor], object],
                        images: torch.Tensor) -> None:
    """Set every BatchNorm's running statistics to those of ``images`` (one pass, train mode).

    ``run_everything`` must push the batch through every layer (all exits, all blocks), so no
    BatchNorm keeps its default statistics. Afterwards the model is back in eval mode.
    """
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # cumulative average: after one batch, exactly its statistics
    model.train()
    run_everything(images)
    model.eval()
    for norm in norms:
        norm.momentum = 0.1


def greedy_cover(outcomes: list[frozenset[str]], required: frozenset[str]) -> list[int]:
    """Indices of a small subset of ``outcomes`` whose union contains ``required``.

    Picks, each round, the candidate covering most missing outcomes (the lowest index on ties),
    so the result is deterministic.
    """
    missing = set(required)
    chosen: list[int] = []
    while missing:
        gains = [len(outcome & missing) for outcome in outcomes]
        best = max(range(len(outcomes)), key=lambda i: (gains[i], -i))
        if gains[best] == 0:
            raise CalibrationError(f"no candidate input takes {sorted(missing)}")
        chosen.append(best)
        missing -= outcomes[best]
    return chosen


def split_between(values: torch.Tensor, fraction: float) -> float:
    """A cut that puts about ``fraction`` of ``values`` at or above it, midway in a gap.

    Cutting halfway between two neighbouring sorted values keeps the calibration inputs as far
    from the cut as the data allows.
    """
    ordered = torch.sort(values.flatten(), descending=True).values
    above = min(max(round(fraction * len(ordered)), 1), len(ordered) - 1)
    return float((ordered[above - 1] + ordered[above]) / 2)


def example_image(size: int) -> tuple[torch.Tensor]:
    """The example input of an image network: one seeded standard-normal 1×3×size×size image."""
    return (torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(0)),)
