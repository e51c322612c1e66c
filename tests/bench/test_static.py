"""The static batched baseline is the dynamic network with every block run: forced onto
its all-blocks path, the dynamic network answers as the static one does, row by row."""

from __future__ import annotations

import pytest
import torch

from dycl.bench.static import batch_of, static_variant
from dycl.zoo import REGISTRY


def _force_every_block(name: str, model: torch.nn.Module) -> None:
    """Make every decision of `model` take its all-blocks, no-exit side (in place)."""
    with torch.no_grad():
        if name == "blockdrop":
            model.policy_net.logits.bias.fill_(1e4)  # every block runs
        elif name == "skipnet_ff":
            for gate in model.gates:
                gate.linear.bias[0] = -1e4  # p_skip ~ 0
        elif name == "skipnet_rnn":
            model.gate.proj.bias.fill_(1e4)  # p_run ~ 1
        elif name.startswith("caption"):
            model.decoder.fc.bias[model.end_token] = -1e4  # never stops: max_length words
        # SDN: the inputs whose path is "no exit fires, the final head wins" are picked instead


def _full_path_inputs(name: str, model: torch.nn.Module) -> list[tuple]:
    entry = REGISTRY[name]
    inputs = entry.path_inputs()
    if entry.family == "sdn":
        final = (len(model.internal_classifiers), False)
        return [args for args in inputs if entry.path_of(model, args) == final]
    return inputs


@pytest.mark.parametrize("name", [
    "blockdrop",
    pytest.param("skipnet_ff", marks=pytest.mark.slow),
    pytest.param("skipnet_rnn", marks=pytest.mark.slow),
    pytest.param("sdn_resnet", marks=pytest.mark.slow),
    pytest.param("caption_resnext", marks=pytest.mark.slow),
])
def test_static_variant_is_the_network_with_every_block_run(name):
    entry = REGISTRY[name]
    model = entry.build(0)
    static = static_variant(entry.family, model)  # shares the weights: built before forcing
    _force_every_block(name, model)
    inputs = _full_path_inputs(name, model)
    assert inputs
    with torch.no_grad():
        batched = static(*batch_of(inputs))
        for row, args in enumerate(inputs):
            dynamic = model(*args)
            dynamic = dynamic[0] if isinstance(dynamic, tuple) else dynamic
            torch.testing.assert_close(batched[row:row + 1], dynamic, rtol=1e-4, atol=1e-4)


def test_unknown_family_is_refused():
    with pytest.raises(ValueError, match="no static batched variant"):
        static_variant("transformer", torch.nn.Linear(1, 1))
