"""The static batched baseline: what a static compiler would serve for a dynamic network.

A static compiler cannot branch, so it serves the network with its dynamism taken out:
no early exit and no skipping, every block run for every request, at a fixed batch N,
compiled whole. For each zoo family that network is written here from the model's own
modules (same weights), batch-first:

- SDN: the backbone with its final head. The internal classifiers exist only to exit
  early; without exits they compute nothing the answer needs, so they are left out.
- SkipNet (both): the ResNet-38 with every gated block run; the gates (an LSTM or a
  feed-forward net per block) decide nothing any more and are left out.
- BlockDrop: the FlatResNet-32 with every block run; no policy network.
- Captioning: the encoder and all `max_length` decoding steps, greedy, never stopping at
  the end token (every row decodes the same number of steps).

Its answers are those of the network without its dynamism, not the dynamic network's, so
they are checked against the same static network in eager PyTorch, not against the
dynamic one. It is exported with `torch.export` at batch N and compiled by the same ONNX
exporter and runner as the oracle (`dycl.bench.oracle`), so per-call machinery matches.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from dycl.bench.oracle import load_graph, onnx_bytes
from dycl.runtime import RuntimeOptions


class StaticSDN(nn.Module):
    """An SDN without exits: the backbone and the final classifier."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.segments, self.tail, self.head = model.segments, model.tail, model.final_classifier

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for segment in self.segments:
            x = segment(x)
        return self.head(self.tail(x))


class StaticSkipNet(nn.Module):
    """A SkipNet with every block run and no gate."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.stem, self.first_block, self.blocks, self.head = model.stem, model.first_block, model.gated_blocks, model.head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.first_block(self.stem(x))
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class StaticBlockDrop(nn.Module):
    """BlockDrop with every block run and no policy network."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.stem, self.blocks, self.head = model.stem, model.blocks, model.head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class StaticCaption(nn.Module):
    """A captioner that always decodes `max_length` words (no stop at the end token)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        model = self.model
        features = model.encode(images)
        state = model.decoder.initial_state(features)
        word = torch.full((images.shape[0],), model.start_token, dtype=torch.int64)
        words = []
        for _ in range(model.max_length):
            scores, state = model.decoder.step(features, word, state)
            word = scores.argmax(dim=1)
            words.append(word)
        return torch.stack(words, dim=1)


STATIC_VARIANTS: dict[str, Callable[[nn.Module], nn.Module]] = {
    "sdn": StaticSDN,
    "skipnet": StaticSkipNet,
    "blockdrop": StaticBlockDrop,
    "caption": StaticCaption,
}
"""zoo family -> the static network of a built model of that family."""


def static_variant(family: str, model: nn.Module) -> nn.Module:
    if family not in STATIC_VARIANTS:
        raise ValueError(f"no static batched variant for zoo family {family!r} (known: {', '.join(STATIC_VARIANTS)})")
    return STATIC_VARIANTS[family](model).eval()


def batch_of(requests: list[tuple[torch.Tensor, ...]]) -> tuple[torch.Tensor, ...]:
    """The requests' inputs concatenated along dim 0, argument by argument."""
    return tuple(torch.cat(column, dim=0) for column in zip(*requests))


def _key(network: str, batch: int, example: tuple[torch.Tensor, ...]) -> str:
    """What decides a static graph: the zoo's and this file's source, the network, the
    input shapes and dtypes, the batch and the tool versions."""
    from importlib.metadata import version

    digest = hashlib.sha256()
    zoo = Path(__file__).resolve().parent.parent / "zoo"
    for source in [*sorted(zoo.glob("*.py")), Path(__file__)]:
        digest.update(source.read_bytes())
    shapes = [(str(t.dtype), tuple(t.shape)) for t in example]
    digest.update(f"{network}|{batch}|{shapes}|torch={torch.__version__}|ort={version('onnxruntime')}".encode())
    return digest.hexdigest()[:24]


def compile_static(
    network: str,
    static_model: nn.Module,
    example: tuple[torch.Tensor, ...],
    runtime: RuntimeOptions,
    directory: Path,
) -> tuple[Any, dict[str, Any]]:
    """`static_model` exported at the batch of `example` and compiled whole by ONNX
    Runtime: (runner(*numpy arrays) -> list of arrays, cost). A graph already under
    `directory` for the same key is loaded instead."""
    batch = int(example[0].shape[0])
    path = directory / "static" / network / f"batch{batch}-{_key(network, batch, example)}" / "static.onnx"
    cost: dict[str, Any] = {"batch": batch, "cached": path.exists()}
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        with torch.no_grad():
            program = torch.export.export(static_model, tuple(example), strict=False)
        n_outputs = len(program.graph_signature.user_outputs)
        cost["ops"] = sum(1 for n in program.graph.nodes if n.op == "call_function")
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(onnx_bytes(program, len(example), n_outputs))
        partial.rename(path)
        cost["compile_seconds"] = time.perf_counter() - start
        (path.parent / "cost.json").write_text(json.dumps(cost))
    else:
        try:
            cost.update({k: v for k, v in json.loads((path.parent / "cost.json").read_text()).items() if k != "cached"})
        except (OSError, ValueError):
            pass
    cost["size_bytes"] = path.stat().st_size
    return load_graph(path, "onnxruntime", len(example), runtime), cost
