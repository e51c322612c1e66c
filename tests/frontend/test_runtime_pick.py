"""A module or function picked by a runtime index becomes one branch per candidate
(dycl/frontend/dispatch.py): exact on every candidate, Python's index rules kept."""

import pytest
import torch

import dycl
from tests.frontend import pick_models as M
from tests.frontend.helpers import assert_compiled_exactly, assert_imported_exactly, eager

INPUTS = [
    (torch.randn(1, 4, generator=torch.Generator().manual_seed(seed)) * scale,)
    for seed in range(4)
    for scale in (0.5, 2.0, 5.0, -5.0)
]
MODELS = [M.ExpertByArgmax, M.PickFromTheEnd, M.SameExpertTwice, M.NumpyAction, M.ActivationTable]


def _picks(model) -> set[int]:
    """The indices eager PyTorch picks over INPUTS (every candidate must be taken)."""
    torch.manual_seed(0)
    m = model().eval()
    return {int(m.gate(x).argmax(1)) for (x,) in INPUTS}


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_candidate_is_picked_by_the_inputs(model):
    assert _picks(model) == {0, 1, 2}


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_runtime_picks_are_exact(model):
    assert_imported_exactly(model, INPUTS)


@pytest.mark.parametrize("model", [M.ExpertByArgmax, M.NumpyAction, M.ActivationTable], ids=lambda m: m.__name__)
def test_runtime_picks_compile_exactly(model):
    assert_compiled_exactly(model, INPUTS, "onnxruntime")


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_runtime_picks_compile_exactly_on_tvm(model):
    assert_compiled_exactly(model, INPUTS, "tvm")


def test_an_index_past_the_end_raises_index_error_as_in_python():
    torch.manual_seed(0)
    model = M.IndexPastTheEnd().eval()
    past = [x for x in INPUTS if int(model.gate(x[0]).argmax(1)) == 2]
    inside = [x for x in INPUTS if int(model.gate(x[0]).argmax(1)) < 2]
    assert past and inside
    compiled = dycl.compile(model, inside[0], progress=False)
    for args in inside:
        assert torch.allclose(torch.as_tensor(compiled(*args)), eager(model, args), atol=1e-5)
    for args in past:
        with pytest.raises(IndexError):
            eager(model, args)
        with pytest.raises(IndexError):
            compiled(*args)
