"""dycl.compile end to end on small dynamic networks, both backends: same outputs as eager
on inputs that take every path."""

import numpy as np
import pytest
import torch

import dycl
from tests.api.models import (
    EarlyExit,
    GreedyDecoder,
    SkipGate,
    decoder_inputs,
    early_exit_inputs,
    seeded,
    skip_gate_inputs,
)
from tests.api.shared import BACKENDS, max_error

NETWORKS = {
    "early_exit": (EarlyExit, early_exit_inputs, lambda out: out[1]),
    "skip_gate": (SkipGate, skip_gate_inputs, None),
    "greedy_decoder": (GreedyDecoder, decoder_inputs, lambda out: len(out[1])),
}


@pytest.fixture(scope="module")
def compiled_networks():
    cache = {}

    def get(name, backend):
        if (name, backend) not in cache:
            cls, make_inputs, _ = NETWORKS[name]
            model = seeded(cls)
            cache[name, backend] = (model, dycl.compile(model, make_inputs()[0], backend=backend, progress=False))
        return cache[name, backend]

    return get


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(NETWORKS))
def test_matches_eager_on_every_path(compiled_networks, name, backend):
    model, compiled = compiled_networks(name, backend)
    _, make_inputs, path_of = NETWORKS[name]
    paths = set()
    with torch.no_grad():
        for args in make_inputs():
            expected = model(*args)
            actual = compiled(*args)
            assert max_error(expected, actual) <= 1e-4
            if path_of is not None:
                paths.add(path_of(expected))
    if path_of is not None:
        assert len(paths) > 1, f"inputs took one path only: {paths}"
    report = compiled.compile_report
    assert report["subdnn_count"] >= 1 and report["backend"] == backend


def test_skip_gate_inputs_take_both_sides_of_every_gate():
    model = seeded(SkipGate)
    taken = set()
    with torch.no_grad():
        for (x,) in skip_gate_inputs():
            for i, gate in enumerate(model.gates):
                on = bool(gate(x).sum() > 0)
                taken.add((i, on))
                if on:
                    x = x + torch.relu(model.blocks[i](x))
    assert taken == {(i, on) for i in range(len(model.gates)) for on in (True, False)}


def test_numpy_in_numpy_out_and_output_structure(compiled_networks):
    model, compiled = compiled_networks("greedy_decoder", "onnxruntime")
    h, token = decoder_inputs()[2]
    out = compiled(h.numpy(), token.numpy())
    assert isinstance(out, tuple) and isinstance(out[0], np.ndarray) and isinstance(out[1], list)
    assert all(isinstance(t, np.ndarray) for t in out[1])
    torch_out = compiled(h, token)
    assert isinstance(torch_out[0], torch.Tensor) and all(isinstance(t, torch.Tensor) for t in torch_out[1])


def test_hcfg_and_generated_source_are_exposed(compiled_networks):
    _, compiled = compiled_networks("early_exit", "onnxruntime")
    assert compiled.hcfg is not None
    summary = compiled.hcfg.summary() if hasattr(compiled.hcfg, "summary") else None
    if summary is not None:
        assert summary.subdnn_count == compiled.compile_report["subdnn_count"]
    assert "def forward(x):" in compiled.source and "import torch" not in compiled.source


def test_unknown_backend_option_fails_before_compiling():
    with pytest.raises(TypeError, match="unknown onnxruntime backend option"):
        dycl.compile(seeded(SkipGate), (torch.randn(1, 8),), tune_seconds=5, progress=False)


def test_python_scalar_inputs_and_outputs():
    from dycl.runtime import InputError
    from tests.api.models import ScalarInputs

    model = seeded(ScalarInputs)
    compiled = dycl.compile(model, (torch.randn(1, 4), 3, 0.5), progress=False)
    assert [i["kind"] for i in compiled.manifest["inputs"]] == ["tensor", "int", "float"]
    with torch.no_grad():
        for n, scale in ((1, 2.0), (5, 2.0), (3, -1.5)):
            x = torch.randn(1, 4)
            expected, actual = model(x, n, scale), compiled(x, n, scale)
            assert max_error(expected, actual) <= 1e-6 and actual[1] == n + 1
    with pytest.raises(InputError, match="input 'n': expected a Python int, got float"):
        compiled(torch.randn(1, 4), 2.5, 1.0)
