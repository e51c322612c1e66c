"""Lists grown by loops over a constant range: their lengths are known after the loop when
every iteration appends a fixed number of items before any break (loops.py,
`_length_after_for`), and a statement that needs a static shape compiles once per length."""

import pytest
import torch
from xdsl.dialects import scf

from tests.frontend import loop_length_models as M
from tests.frontend.helpers import assert_compiled_exactly, eager
from tests.frontend.test_desugar_support import check_paths, scaled_inputs

INPUTS = scaled_inputs(1, 4, scales=(-3.0, -1.0, -0.3, 0.3, 1.0, 3.0), seeds=tuple(range(8)))
EXACT = [M.FixedLengthTokens, M.TwoListsUntilHalt, M.AppendAfterBreak, M.ConditionalAppend, M.ArrayThenStatistics]


def _outcomes(model) -> set:
    torch.manual_seed(0)
    m = model().eval()
    return {eager(m, args)[-1] for args in INPUTS}


@pytest.mark.parametrize("model", EXACT, ids=lambda m: m.__name__)
def test_the_inputs_take_several_lengths(model):
    assert len(_outcomes(model)) >= 3, _outcomes(model)


@pytest.mark.parametrize("model", EXACT, ids=lambda m: m.__name__)
def test_lists_grown_by_constant_loops_are_exact(model):
    torch.manual_seed(0)
    program = check_paths(model(), INPUTS, all_branches=False)
    if model is M.FixedLengthTokens:
        # the loop stays a loop: the list's length is known without unrolling it
        assert [op for op in program.module.walk() if isinstance(op, scf.ForOp)]


@pytest.mark.parametrize("model", [M.FixedLengthTokens, M.TwoListsUntilHalt, M.ArrayThenStatistics], ids=lambda m: m.__name__)
def test_lists_grown_by_constant_loops_compile_exactly(model):
    assert_compiled_exactly(model, INPUTS, "onnxruntime")


def test_appends_are_counted_only_where_every_iteration_reaches_them():
    import ast

    from dycl.frontend.loops import _appends_per_iteration

    def appends(source):
        return _appends_per_iteration(ast.parse(source).body, "outs")

    assert appends("h = f(h)\nouts.append(h)\nouts.append(h * 2)\nif c:\n    break") == ({2}, 2)
    assert appends("if c:\n    break\nouts.append(h)") == ({0}, 1)  # a breaking iteration appends nothing
    assert appends("outs.append(h)\nif c:\n    break\nouts.append(h)\nif d:\n    break") == ({1, 2}, 2)
    assert appends("h = f(h)\nouts.append(h)") == (set(), 1)
    assert appends("if c:\n    outs.append(h)") is None  # only some iterations append
    assert appends("outs.append(h)\nif c:\n    continue") is None
    assert appends("outs.append(h)\nouts.pop()") is None
    assert appends("outs.append(h)\nalias = outs") is None
    assert appends("outs.append(h)\nhelper(outs)") is None
    assert appends("outs.append(h)\ny = outs[-1] + len(outs)") == (set(), 1)


def test_an_exit_test_after_statements_compiled_once_per_length():
    """The `if` right after the statements a per-length chain takes in: its condition was
    computed in their run, then lost when the chain compiled them again (refused at line 1:
    "`__dycl_condition` may be used before it is assigned")."""
    from dycl.frontend import import_module
    from tests.frontend.helpers import max_abs_error, run

    torch.manual_seed(0)
    model = M.TokensThenLiveRows().eval()
    program = import_module(model, INPUTS[0])
    outputs = [eager(model, args) for args in INPUTS]
    assert len({n for _, n in outputs}) >= 2 and len({bool(y.sum() > 0) for y, _ in outputs}) == 2
    assert max(max_abs_error(expected, run(program, args)) for expected, args in zip(outputs, INPUTS)) <= 1e-5
