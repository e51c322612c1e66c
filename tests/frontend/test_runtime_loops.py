"""Loops whose trip count is known only at run time compile to host `scf.while` loops with
Python's meaning (runtime_loop_models.py): exact on every path on the reference interpreter,
and end to end on ONNX Runtime."""

import pytest
import torch
from xdsl.dialects import scf

from tests.frontend import runtime_loop_models as M
from tests.frontend.helpers import assert_compiled_exactly, eager
from tests.frontend.test_desugar_support import check_paths, scaled_inputs

INPUTS = scaled_inputs(1, 4, scales=(-3.0, -1.0, -0.3, 0.3, 1.0, 3.0), seeds=(0, 1, 2))
MODELS = [M.Halting, M.WhileTrueBreak, M.RangeOfARuntimeInt, M.IterateTokens, M.IterateTensors, M.MeanOfExits]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_runtime_trip_counts_are_exact(model):
    torch.manual_seed(0)
    program = check_paths(model(), INPUTS, all_branches=False)
    runtime_loops = [op for op in program.module.walk() if isinstance(op, scf.WhileOp)]
    assert runtime_loops if model is not M.MeanOfExits else not runtime_loops  # (an unrolled loop)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_the_inputs_take_several_trip_counts(model):
    torch.manual_seed(0)
    m = model().eval()
    outcomes = {repr(eager(m, args)[1:]) if isinstance(eager(m, args), tuple) else None for args in INPUTS}
    if model is M.MeanOfExits:
        assert len({eager(m, args)[2] for args in INPUTS}) == 3  # 1, 2 and 3 exits taken
    elif model is M.IterateTensors:
        hs_lengths = set()
        for (x,) in INPUTS:
            y = x
            for n in range(1, 4):
                y = torch.tanh(m.fc(y))
                if y.mean() > 0.1:
                    break
            hs_lengths.add(n)
        assert len(hs_lengths) > 1
    else:
        assert len(outcomes) > 1, outcomes


@pytest.mark.parametrize("model", [M.Halting, M.RangeOfARuntimeInt, M.IterateTokens, M.MeanOfExits], ids=lambda m: m.__name__)
def test_runtime_trip_counts_compile_exactly(model):
    assert_compiled_exactly(model, INPUTS, "onnxruntime")


def test_deleting_past_the_end_of_a_runtime_list_raises_index_error():
    import dycl

    torch.manual_seed(0)
    model = M.DeletePastTheEnd().eval()
    example = next(args for args in INPUTS if _raises_not(model, args))
    compiled = dycl.compile(model, example, progress=False)
    outcomes = set()
    for args in INPUTS:
        try:
            expected = eager(model, args)
        except IndexError:
            outcomes.add("IndexError")
            with pytest.raises(IndexError):
                compiled(*args)
            continue
        outcomes.add("ok")
        assert compiled(*args)[1] == expected[1]
    assert outcomes == {"ok", "IndexError"}


def _raises_not(model, args) -> bool:
    try:
        eager(model, args)
    except IndexError:
        return False
    return True
