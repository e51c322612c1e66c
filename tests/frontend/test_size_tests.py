"""Tests of sizes that grow or shrink in a runtime loop compile exactly, with loop counts on
both sides of every bound (before: minGPT's crop returned wrong tokens from 4 steps on, a
`while` on a size never ended, a shrinking window read 4 columns where eager read 3, and the
parity and queue forms were refused)."""

from __future__ import annotations

import pytest
import dycl
from dycl.frontend import import_module
from tests.frontend.helpers import eager_method as _eager, max_abs_error, run, seeded_model as _model, tiered
from tests.frontend.size_test_models import (
    CharGPT,
    GrowToLimit,
    LastColumns,
    LastTokenLogits,
    NegativeRemainder,
    ParityMixer,
    ShrinkingWindow,
    SlidingQueue,
    crop_inputs,
    queue_inputs,
    row_inputs,
)

CASES = {
    "context_crop": (CharGPT, crop_inputs, "generate"),
    "sliding_queue": (SlidingQueue, queue_inputs, "forward"),
    "parity": (ParityMixer, lambda: row_inputs(2, (1, 0, 2, 3, 4, 5)), "forward"),
    "grow_to_limit": (GrowToLimit, lambda: row_inputs(2, (3, 1, 2, 5, 6, 8)), "forward"),
    "shrinking_window": (ShrinkingWindow, lambda: row_inputs(6, (1, 0, 2, 3, 4, 5, 6)), "forward"),
    "shrinking_window_from_narrow": (ShrinkingWindow, lambda: row_inputs(6, (3, 0, 1, 2, 4, 5, 6)), "forward"),
    "negative_remainder": (NegativeRemainder, lambda: row_inputs(1, (0, 1, 2, 3, 4, 5, 6)), "forward"),
    "last_columns": (LastColumns, lambda: row_inputs(4, (1, 0, 2, 3)), "forward"),
    "last_token_logits": (LastTokenLogits, crop_inputs, "forward"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_size_tests_are_exact_on_the_interpreter(name):
    factory, inputs, method = CASES[name]
    model = _model(factory)
    program = import_module(model, inputs()[0], method=method)
    for args in inputs():
        assert max_abs_error(_eager(model, method, args), run(program, args)) <= 1e-5, args[1]


@pytest.mark.parametrize("backend", ["onnxruntime", pytest.param("tvm", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", tiered(CASES, {"grow_to_limit", "last_columns", "shrinking_window"}))
def test_size_tests_compile_exactly(name, backend):
    factory, inputs, method = CASES[name]
    model = _model(factory)
    compiled = dycl.compile(model, inputs()[0], backend=backend, method=method, progress=False)
    errors = [max_abs_error(_eager(model, method, args), compiled(*args)) for args in inputs()]
    assert max(errors) <= 1e-5, errors


def test_a_window_past_the_examples_bound_is_a_run_of_its_own():
    """`h[:, -4:]` of 6 columns: export holds it for 4 columns on; the host tests the size
    and calls a run captured at 3 columns below that."""
    model = _model(ShrinkingWindow)
    program = import_module(model, row_inputs(6, (1,))[0])
    text = str(program.module)
    assert "torch.aten.lt.int" in text  # (the size is compared with the bound at run time)
