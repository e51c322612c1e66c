"""The zoo: every network builds, runs, is deterministic, and its path inputs take every path."""

from __future__ import annotations

import pytest
import torch

from dycl.zoo import EVALUATION, REGISTRY
from dycl.zoo.caption import CaptionModel
from dycl.zoo.gpt_decode import GPTDecode, scores_without_end
from dycl.zoo.sdn import EarlyExitNetwork

NAMES = list(REGISTRY)


def test_registry_holds_the_nine_networks_and_the_decoder():
    assert list(EVALUATION) == ["sdn_mobilenet", "sdn_vgg", "sdn_resnet", "sdn_wideresnet", "skipnet_rnn",
                                "skipnet_ff", "caption_resnext", "caption_googlenet", "blockdrop"]
    assert NAMES == [*EVALUATION, "gpt_decode"]
    for name, entry in REGISTRY.items():
        assert entry.name == name


@pytest.mark.parametrize("name", NAMES)
def test_builds_in_eval_mode_and_runs(name):
    entry = REGISTRY[name]
    model = entry.build(0)
    assert not model.training
    with torch.no_grad():
        output = model(*entry.example_inputs())
    if isinstance(model, EarlyExitNetwork):
        logits, exit_index = output
        assert isinstance(exit_index, int) and 0 <= exit_index <= 6
        output = logits
    if isinstance(model, CaptionModel):
        assert output.dtype == torch.int64 and output.shape[0] == 1
        assert 1 <= output.shape[1] <= model.max_length
    elif isinstance(model, GPTDecode):
        _, budget = entry.example_inputs()
        assert output.dtype == torch.int64 and output.dim() == 1 and 1 <= len(output) <= budget
    else:
        assert output.shape == (1, 10)
        assert torch.isfinite(output).all()
        assert output.std() > 1e-3  # logits are not all identical


@pytest.mark.parametrize("name", NAMES)
def test_path_inputs_cover_every_path(name):
    entry = REGISTRY[name]
    model = entry.build(0)
    inputs = entry.path_inputs()
    assert 2 <= len(inputs) <= 12
    assert entry.uncovered(model, inputs) == frozenset()
    paths = entry.paths(model, inputs)
    assert len(set(paths)) == len(paths), "each path input should add a new path"


@pytest.mark.parametrize("name", NAMES)
def test_forward_takes_the_path_that_paths_reports(name):
    """``paths`` re-runs the model's pieces; ``forward`` itself must agree with it."""
    entry = REGISTRY[name]
    model = entry.build(0)
    for args in entry.path_inputs():
        path = entry.path_of(model, args)
        with torch.no_grad():
            output = model(*args)
            expected = _output_along(model, entry.family, path, *args)
        if entry.family == "sdn":
            assert output[1] == path[0]
            output = output[0]
        assert output.shape == expected.shape
        torch.testing.assert_close(output, expected, rtol=1e-4, atol=1e-5)


def _output_along(model, family: str, path, x: torch.Tensor, *rest) -> torch.Tensor:
    """What ``forward`` must return for ``x`` if it takes ``path``, computed step by step."""
    if family == "decode":
        _, length, stopped = path
        scores, _ = scores_without_end(model, x, length)
        tokens = scores.index_fill(1, torch.tensor([model.eos_id]), -torch.inf).argmax(dim=1)
        if stopped:
            tokens[-1] = model.eos_id
        return tokens
    if family == "sdn":
        return model.all_exit_logits(x)[path[0]]
    if family == "caption":
        length, stopped = path
        words = model.scores_without_end(x)[0, :length].argmax(dim=1)
        if stopped:
            words[-1] = model.end_token
        return words[None]
    if family == "skipnet":
        x = model.first_block(model.stem(x))
        blocks = model.gated_blocks
    else:
        x = model.stem(x)
        blocks = model.blocks
    for runs, block in zip(path, blocks, strict=True):
        x = block(x) if runs else block.shortcut(x)
    return model.head(x)


@pytest.mark.parametrize("name", NAMES)
def test_two_builds_give_the_same_outputs(name):
    entry = REGISTRY[name]
    first = entry.build(0)
    entry.build.cache_clear()  # the second build calibrates from scratch
    second = entry.build(0)
    inputs = entry.path_inputs()
    with torch.no_grad():
        for args in inputs:
            a, b = first(*args), second(*args)
            if isinstance(a, tuple):
                assert a[1] == b[1]
                a, b = a[0], b[0]
            assert torch.equal(a, b)


def test_the_seed_changes_the_weights():
    entry = REGISTRY["blockdrop"]
    first, other = entry.build(0).state_dict(), entry.build(1).state_dict()
    assert first.keys() == other.keys()
    assert not torch.equal(first["blocks.0.branch.0.weight"], other["blocks.0.branch.0.weight"])


def test_build_returns_independent_copies():
    entry = REGISTRY["sdn_mobilenet"]
    model = entry.build(0)
    model.threshold = 2.0  # a user changes their copy
    assert entry.build(0).threshold == pytest.approx(0.8)


def test_latency_tool_times_every_path():
    from dycl.zoo.latency import eager_latency_ms

    median, fastest, slowest, best = eager_latency_ms("blockdrop", runs=6, warmup=1)
    assert 0 < fastest <= median <= slowest  # 5 calls per path: odd counts keep this exact
    assert best <= slowest
