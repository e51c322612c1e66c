"""`for` over a runtime numpy array or tensor (unrolled over its static rows; numpy integers
as Python ints), `np.argsort(kind='stable')` and `np.argsort` with numpy's default sort (the
host runs numpy): exact on every path; in-place changes of the rows are refused at their line."""

import pytest
import torch

from tests.frontend import numpy_iteration_models as M
from tests.frontend.helpers import assert_compiled_exactly
from tests.frontend.test_desugar_support import check_paths, marked_line, refused, scaled_inputs

INPUTS = scaled_inputs(1, 4, scales=(-3.0, -1.0, -0.3, 0.3, 1.0, 3.0), seeds=(0, 1, 2))


@pytest.mark.parametrize("model", [M.RouterStableOrder, M.CutAtEnd, M.WhereFirstHit, M.WhereLayerList, M.DefaultSortOrder], ids=lambda m: m.__name__)
def test_loops_over_runtime_arrays_are_exact(model):
    torch.manual_seed(0)
    check_paths(model(), INPUTS, all_branches=False)


def test_inputs_take_several_orders_and_lengths():
    with torch.no_grad():
        ties = [(M.DefaultSortOrder()(*args)[1].tolist(), ((args[0] * 2).round()[0]).tolist()) for args in INPUTS]
        assert any(len(set(keys)) < len(keys) for _, keys in ties), "no input has equal keys"
        assert len({tuple(order) for order, _ in ties}) >= 3
        torch.manual_seed(0)
        router = M.RouterStableOrder().eval()
        assert len({tuple(router(*args)[2].tolist()) for args in INPUTS}) >= 3
        torch.manual_seed(0)
        cut = M.CutAtEnd().eval()
        assert len({len(cut(*args)[0]) for args in INPUTS}) >= 3


def test_np_where_inputs_take_every_number_of_hits():
    with torch.no_grad():
        torch.manual_seed(0)
        first = M.WhereFirstHit().eval()
        assert {first(*args)[1] for args in INPUTS} == {0, 1, 2}
        torch.manual_seed(0)
        layers = M.WhereLayerList().eval()
        assert len({tuple(layers(*args)[1]) for args in INPUTS}) >= 4


@pytest.mark.parametrize("model", [M.RouterStableOrder, M.WhereFirstHit, M.WhereLayerList, M.DefaultSortOrder], ids=lambda m: m.__name__)
def test_compiles_exactly(model):
    assert_compiled_exactly(model, INPUTS, "onnxruntime")


@pytest.mark.parametrize(
    "cls, construct, hint",
    [
        (M.ChangeRowsInPlace, "an in-place change inside a `for` over the rows", "range(len(t))"),
        (M.WhereArithmetic, "`hits + 1` on `hits`, the index array of `np.where(cond)`", "len(hits) > 0"),
        (M.WhereTruth, "on `hits`, the index array of `np.where(cond)`", "len(hits) > 0"),
    ],
)
def test_what_cannot_keep_its_meaning_is_refused(cls, construct, hint):
    refused(cls(), (torch.randn(1, 4),), construct, marked_line(cls), hint)
