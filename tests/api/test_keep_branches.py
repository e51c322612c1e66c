"""The gated networks with dycl-keep-branches (the default): every gate stays inside one
sub-DNN, run as ONNX `If` / Relax `if`; every path matches eager PyTorch, with one sub-DNN
call per inference. ONNX Runtime in the default tier; TVM and the split's call counts in
the slow tier."""

from pathlib import Path

import numpy as np
import pytest
import torch

import dycl
from dycl.runtime.profile import host_overhead
from tests.api.shared import max_error

GATED = ("blockdrop", "skipnet_ff", "skipnet_rnn")
GATES = {"blockdrop": 15, "skipnet_ff": 17, "skipnet_rnn": 17}


def compile_zoo(name: str, backend: str, **options):
    from dycl.zoo import REGISTRY

    entry = REGISTRY[name]
    model = entry.build(0)
    compiled = dycl.compile(model, entry.example_inputs(), backend=backend, progress=False, **options)
    return entry, model, compiled


def calls_per_inference(compiled, entry) -> list[int]:
    return [
        host_overhead(compiled, tuple(np.ascontiguousarray(x.numpy()) for x in args), repeat=1)["subdnn_calls"]
        for args in entry.path_inputs()
    ]


def onnx_ifs(directory: Path) -> int:
    import onnx

    def count(graph) -> int:
        return sum(
            (node.op_type == "If") + sum(count(a.g) for a in node.attribute if a.type == a.GRAPH)
            for node in graph.node
        )

    return sum(count(onnx.load(str(path)).graph) for path in Path(directory).glob("*.onnx"))


def check_every_path(entry, model, compiled) -> None:
    with torch.no_grad():
        for args in entry.path_inputs():
            assert max_error(model(*args), compiled(*args)) <= 1e-4


# BlockDrop in the default tier; the two SkipNets (30 s and more of cold compile each) in the slow one
@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n.startswith("skipnet") else []) for n in GATED])
def test_gated_network_is_one_call_on_onnxruntime(name):
    entry, model, compiled = compile_zoo(name, "onnxruntime")
    assert compiled.compile_report["subdnn_count"] == 1
    assert onnx_ifs(compiled.directory) == GATES[name]  # every gate is an If
    assert calls_per_inference(compiled, entry) == [1] * len(entry.path_inputs())
    check_every_path(entry, model, compiled)


@pytest.mark.slow
@pytest.mark.parametrize("name", GATED)
def test_gated_network_is_one_call_on_tvm(name):
    entry, model, compiled = compile_zoo(name, "tvm")
    assert compiled.compile_report["subdnn_count"] == 1
    assert calls_per_inference(compiled, entry) == [1] * len(entry.path_inputs())
    check_every_path(entry, model, compiled)


@pytest.mark.slow
@pytest.mark.parametrize("name", GATED)
def test_pure_split_stays_available(name):
    """keep_branches=False is the DyCL paper's split: no If, a call per gate and block."""
    entry, model, compiled = compile_zoo(name, "onnxruntime", pipeline={"keep_branches": False})
    assert onnx_ifs(compiled.directory) == 0
    assert min(calls_per_inference(compiled, entry)) > GATES[name] // 2
    check_every_path(entry, model, compiled)
