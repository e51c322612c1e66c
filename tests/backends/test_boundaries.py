"""Values of every kind crossing the host/sub-DNN boundary, exact on both backends
(ONNX Runtime in the default tier, TVM in the slow tier)."""

import pytest
import torch

from tests.backends.boundary_models import BOUNDARY
from tests.frontend.helpers import assert_imported_exactly, eager, max_abs_error

MODELS = sorted(BOUNDARY, key=lambda model: model.__name__)
INPUTS = [
    (torch.randn(1, 4, generator=torch.Generator().manual_seed(seed)) * scale,)
    for seed in range(6)
    for scale in (0.1, 1.0, -4.0, 4.0)
]


def ports(manifest) -> set[tuple[str, tuple, str]]:
    return {
        (direction, tuple(spec["shape"]), spec["dtype"])
        for subdnn in manifest["subdnns"]
        for direction in ("in", "out")
        for spec in subdnn["inputs" if direction == "in" else "outputs"]
    }


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_inputs_take_every_path(model):
    assert_imported_exactly(model, INPUTS)


def check_backend(model, backend: str) -> None:
    import dycl

    torch.manual_seed(0)
    instance = model().eval()
    # The boundaries of the pure split (dycl-keep-branches keeps some gates inside one
    # sub-DNN, so fewer values cross); then the default pipeline, exact as well.
    split = dycl.compile(instance, INPUTS[0], backend=backend, progress=False, pipeline={"keep_branches": False})
    carried = ports(split.manifest)
    for direction, shape, dtype in BOUNDARY[model]:
        assert (direction, tuple(shape), dtype) in carried, f"no sub-DNN {direction}put {shape} {dtype}: {carried}"
    default = dycl.compile(instance, INPUTS[0], backend=backend, progress=False)
    for args in INPUTS:
        assert max_abs_error(eager(instance, args), split(*args)) <= 1e-5
        assert max_abs_error(eager(instance, args), default(*args)) <= 1e-5


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_onnxruntime(model):
    check_backend(model, "onnxruntime")


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.__name__)
def test_tvm(model):
    check_backend(model, "tvm")
