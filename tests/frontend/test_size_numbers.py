"""A size known only at run time as a number in tensor math compiles exactly (before: the op
stayed in the host untranslated and `dycl.compile` raised PipelineError after the frontend);
where the op takes a Python number, not a tensor, the statement is refused at its line."""

from __future__ import annotations

import pytest
import torch

import dycl
from dycl.frontend import FrontendError, import_module
from tests.frontend.helpers import assert_compiled_exactly, eager, max_abs_error, run
from tests.frontend.size_number_models import (
    ClampBySize,
    CountUnlessClose,
    IntegerCounts,
    MeanOverDecodeSteps,
    ScaledByKeptCount,
    decode_inputs,
    kept_inputs,
    pair_inputs,
)

CASES = {
    "mean_over_decode_steps": (MeanOverDecodeSteps, decode_inputs),
    "scaled_by_kept_count": (ScaledByKeptCount, kept_inputs),
    "integer_counts": (IntegerCounts, kept_inputs),
    "clamp_by_size": (ClampBySize, kept_inputs),
    "count_unless_close": (CountUnlessClose, pair_inputs),
}


def _same_dtypes(expected, actual) -> None:
    if isinstance(expected, (tuple, list)):
        for e, a in zip(expected, actual):
            _same_dtypes(e, a)
    elif isinstance(expected, torch.Tensor):
        assert expected.dtype == actual.dtype, (expected.dtype, actual.dtype)


@pytest.mark.parametrize("name", sorted(CASES))
def test_sizes_as_numbers_are_exact_on_the_interpreter(name):
    factory, inputs = CASES[name]
    torch.manual_seed(0)
    model = factory().eval()
    inputs = inputs()
    program = import_module(model, inputs[0])
    for args in inputs:
        expected, actual = eager(model, args), run(program, args)
        assert max_abs_error(expected, actual) <= 1e-5
        _same_dtypes(expected, actual)


@pytest.mark.parametrize("name", ["count_unless_close", *(pytest.param(name, marks=pytest.mark.slow) for name in ["integer_counts", "mean_over_decode_steps"])])
def test_sizes_as_numbers_compile_exactly_on_onnxruntime(name):
    factory, inputs = CASES[name]
    torch.manual_seed(0)
    model = factory().eval()
    compiled = dycl.compile(model, inputs()[0], progress=False)
    for args in inputs():
        expected, actual = eager(model, args), compiled(*args)
        assert max_abs_error(expected, actual) <= 1e-5
        _same_dtypes(expected, actual)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["onnxruntime", "tvm"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_sizes_as_numbers_compile_exactly(name, backend):
    factory, inputs = CASES[name]
    assert_compiled_exactly(factory, inputs(), backend)


class FullOfCount(torch.nn.Module):
    def forward(self, x):
        kept = x[x > 0]
        filled = torch.full_like(x, kept.size(0))  # REFUSED: full_like takes a Python number
        return filled + x


class FullOfCountAsTheHintSays(torch.nn.Module):
    def forward(self, x):
        kept = x[x > 0]
        filled = torch.zeros_like(x) + kept.size(0)
        return filled + x


def test_a_size_where_the_op_takes_a_python_number_is_refused_at_its_line():
    with pytest.raises(FrontendError) as info:
        import_module(FullOfCount().eval(), (torch.randn(2, 5),))
    error = info.value
    lines = open(__file__).read().splitlines()
    line = next(k for k, text in enumerate(lines, start=1) if "# REFUSED" in text)
    assert (error.file, error.line) == (__file__, line), str(error)
    assert "`filled = torch.full_like(x, kept.size(0))`" in str(error)
    assert "a number known only at run time" in str(error)
    assert "torch.zeros_like(x) + n" in str(error)
    # the hint keeps the meaning, and what it says compiles
    hinted = FullOfCountAsTheHintSays().eval()
    program = import_module(hinted, (torch.randn(2, 5),))
    for args in kept_inputs():
        args = (args[0][:2],)
        assert max_abs_error(eager(FullOfCount().eval(), args), run(program, args)) == 0.0
