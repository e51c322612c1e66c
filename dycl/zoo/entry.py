"""The record every zoo network provides (see docs/zoo.md)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable, Hashable

import torch
from torch import nn

Inputs = tuple  # of tensors, and Python ints (gpt_decode's `max_new_tokens`)


@dataclass(frozen=True)
class ZooEntry:
    """One evaluation network: how to build it and how to drive every path through it.

    build(seed=0)            -> the network, eval mode, seeded and calibrated weights
    example_inputs()         -> one input tuple, as a user would pass to ``model(*inputs)``
    path_inputs()            -> input tuples that together take every path of ``build(0)``
    path_of(model, inputs)   -> the path one input takes (exit index, skip pattern, length)
    branches_of(path)        -> the branch outcomes that path exercises
    all_branches(model)      -> the branch outcomes ``path_inputs()`` must exercise together
    """

    name: str
    family: str
    summary: str
    build: Callable[..., nn.Module]
    example_inputs: Callable[[], Inputs]
    path_inputs: Callable[[], list[Inputs]]
    path_of: Callable[[nn.Module, Inputs], Hashable]
    branches_of: Callable[[Hashable], frozenset[str]]
    all_branches: Callable[[nn.Module], frozenset[str]]

    def paths(self, model: nn.Module, inputs: list[Inputs]) -> list[Hashable]:
        """The path each input tuple of ``inputs`` takes through ``model``."""
        return [self.path_of(model, args) for args in inputs]

    def uncovered(self, model: nn.Module, inputs: list[Inputs]) -> frozenset[str]:
        """Branch outcomes of ``model`` that none of ``inputs`` exercises."""
        covered: set[str] = set()
        for path in self.paths(model, inputs):
            covered |= self.branches_of(path)
        return self.all_branches(model) - covered


# --- caching ------------------------------------------------------------------------------------
# Calibration runs the network on dozens of inputs; a process builds each (network, seed) once
# and hands out copies. ``build.cache_clear()`` forgets one network's builds, clear_caches()
# everything.

_CACHES: list[dict] = []


def memoized_build(build_fresh: Callable[[int], nn.Module]) -> Callable[..., nn.Module]:
    """``build(seed=0)`` that calibrates once per seed and returns an independent copy."""
    built: dict[int, nn.Module] = {}
    _CACHES.append(built)

    def build(seed: int = 0) -> nn.Module:
        if seed not in built:
            built[seed] = build_fresh(seed)
        return copy.deepcopy(built[seed])

    build.cache_clear = built.clear  # type: ignore[attr-defined]
    return build


def memoized_inputs(select: Callable[[], list[Inputs]]) -> Callable[[], list[Inputs]]:
    """``path_inputs()`` that selects once and returns fresh tensors each call."""
    selected: dict[None, list[Inputs]] = {}
    _CACHES.append(selected)

    def path_inputs() -> list[Inputs]:
        if None not in selected:
            selected[None] = select()
        return [tuple(t.clone() if isinstance(t, torch.Tensor) else t for t in args) for args in selected[None]]

    return path_inputs


def clear_caches() -> None:
    for cache in _CACHES:
        cache.clear()
