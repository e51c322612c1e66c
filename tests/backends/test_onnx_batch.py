"""The ONNX Runtime backend compiles a network's sub-DNNs through one export and cuts the
result back into one model per sub-DNN: the parts must compute what lone compiles do."""

from dataclasses import replace

import numpy as np
import pytest

from dycl.backends import BackendError
from dycl.backends.onnxruntime import OnnxRuntimeBackend
from dycl.runtime import RuntimeOptions
from dycl.runtime.runners import ort_runner
from tests.backends.test_backends import hcfg_subdnns
from tests.backends.test_fx_rebuild import one_op_subdnn

BACKEND = OnnxRuntimeBackend.from_options({"opset": None})


def _runner(compiled, directory):
    (name, data), = compiled.files.items()
    path = directory / name
    path.write_bytes(data)
    return ort_runner(path, compiled.meta, RuntimeOptions(threads=1))


def test_parts_of_a_joint_export_match_lone_compiles(sample_weights, tmp_path):
    weights = {k: v.numpy() for k, v in sample_weights.items()}
    subdnns = hcfg_subdnns()
    assert len(subdnns) >= 2
    joint = BACKEND.compile_batch(subdnns, weights)
    assert list(joint) == [s.name for s in subdnns]
    assert joint[subdnns[1].name].meta["input_names"][0] == "s1_in0"  # the joint route, not the fallback
    rng = np.random.default_rng(0)
    for subdnn in subdnns:
        lone = BACKEND.compile(subdnn, weights)
        (tmp_path / "joint").mkdir(exist_ok=True)
        (tmp_path / "lone").mkdir(exist_ok=True)
        args = [rng.standard_normal(s.shape).astype(s.dtype) for s in subdnn.inputs]
        expected = _runner(lone, tmp_path / "lone")(*args)
        got = _runner(joint[subdnn.name], tmp_path / "joint")(*args)
        assert len(got) == len(expected) == len(subdnn.outputs)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)


def test_an_op_the_exporter_lacks_is_still_blamed_on_its_subdnn():
    good = replace(one_op_subdnn("torch.aten.relu"), name="subdnn_1")
    bad = one_op_subdnn("torch.aten.linalg_matrix_exp")
    with pytest.raises(BackendError) as info:
        BACKEND.compile_batch([good, bad], {})
    assert info.value.subdnn == "subdnn_7" and info.value.op == "torch.aten.linalg_matrix_exp"
