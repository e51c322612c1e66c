"""Runtime-length lists of Python scalars: exact on the reference interpreter and on ONNX
Runtime; a list given two kinds of item is refused where the second kind is put in."""

import pytest
import torch

from tests.frontend import scalar_list_models as M
from tests.frontend.helpers import assert_compiled_exactly, assert_imported_exactly

INPUTS = [
    (torch.randn(1, 4, generator=torch.Generator().manual_seed(seed)) * scale,)
    for seed in range(3)
    for scale in (0.1, 0.5, 1.0, 2.0, 3.0, -3.0, 5.0, -5.0)
]
MODELS = [M.GreedyTokens, M.ArgmaxWords, M.ConfidentExits, M.BranchLists]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_scalar_lists_are_exact_on_every_path(model):
    assert_imported_exactly(model, INPUTS)


@pytest.mark.parametrize("model", [M.GreedyTokens, M.ArgmaxWords], ids=lambda m: m.__name__)
def test_scalar_lists_compile_exactly(model):
    assert_compiled_exactly(model, INPUTS, "onnxruntime")


@pytest.mark.slow
@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_scalar_lists_compile_exactly_on_tvm(model):
    assert_compiled_exactly(model, INPUTS, "tvm")


def test_a_second_kind_of_item_is_refused_where_it_is_appended():
    from dycl.frontend import FrontendError, import_module
    from tests.frontend.test_desugar_support import marked_line

    torch.manual_seed(0)
    with pytest.raises(FrontendError) as caught:
        import_module(M.MixedKinds().eval(), INPUTS[0])
    error = caught.value
    assert (error.file, error.line) == (M.__file__, marked_line(M.MixedKinds))
    assert "putting a Python int into a list of tensors" in error.construct
    assert "torch.tensor(v)" in error.hint
