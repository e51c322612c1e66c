"""Sizes that depend on the data, compiled for TVM: the loops of published code whose batch
shrinks as samples finish (adaptive computation time over a batch of 8, per-sample early
exit), exact against eager on inputs where 0, some and all samples stop at a step. Their
stores at the live rows (`hx[idx] = ...`, `accum[idx] += ...`) failed TVM's compile before
`dycl.backends.tvm_stores`; the beam search's `top_k_words // vocab_size` failed its Relax
import (the beam search itself compiles on TVM in test_data_sizes.py).
(tests/frontend/test_data_sizes.py runs the gathers and stores alone on TVM.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from dycl.backends import compile_subdnns, subdnns_of
from dycl.ir import parse_module
from dycl.runtime import RuntimeOptions
from dycl.runtime.runners import tvm_runner
from tests.frontend.data_size_models import AdaptiveComputationTime, BatchEarlyExit
from tests.frontend.helpers import assert_compiled_exactly
from tests.frontend.test_data_sizes import act_inputs, early_exit_inputs

pytestmark = pytest.mark.slow


# (BeamSearch on TVM: tests/frontend/test_data_sizes.py::test_a_beam_search_compiles_exactly_on_tvm)
@pytest.mark.parametrize("factory, inputs", [
    (AdaptiveComputationTime, act_inputs()),
    (BatchEarlyExit, early_exit_inputs()),
], ids=["act", "batch_early_exit"])
def test_loops_over_sizes_from_data_compile_exactly_on_tvm(factory, inputs):
    assert_compiled_exactly(factory, inputs, "tvm")


V = "!torch.vtensor"
DIVISIONS = f'''"builtin.module"() ({{
  "func.func"() <{{sym_name = "subdnn_0", function_type = ({V}<[?],si64>, {V}<[4],f32>) -> ({V}<[?],si64>, {V}<[?],si64>, {V}<[4],f32>), sym_visibility = "private"}}> ({{
  ^bb0(%words: {V}<[?],si64>, %x: {V}<[4],f32>):
    %six = "torch.constant.int"() <{{value = 6 : i64}}> : () -> !torch.int
    %floor = "torch.constant.str"() <{{value = "floor"}}> : () -> !torch.str
    %trunc = "torch.constant.str"() <{{value = "trunc"}}> : () -> !torch.str
    %q = "torch.aten.div.Tensor_mode"(%words, %six, %floor) : ({V}<[?],si64>, !torch.int, !torch.str) -> {V}<[?],si64>
    %t = "torch.aten.div.Tensor_mode"(%words, %six, %trunc) : ({V}<[?],si64>, !torch.int, !torch.str) -> {V}<[?],si64>
    %k = "torch.constant.float"() <{{value = 2.5 : f64}}> : () -> !torch.float
    %f = "torch.aten.div.Tensor_mode"(%x, %k, %floor) : ({V}<[4],f32>, !torch.float, !torch.str) -> {V}<[4],f32>
    "func.return"(%q, %t, %f) : ({V}<[?],si64>, {V}<[?],si64>, {V}<[4],f32>) -> ()
  }}) {{dycl.subdnn}} : () -> ()
}}) : () -> ()'''


def test_division_with_a_rounding_mode_by_a_python_int(tmp_path):
    """`top_k_words // vocab_size`: an int64 tensor by a Python int, floor and trunc, negative
    values included; and a float tensor by a Python float."""
    (subdnn,) = subdnns_of(parse_module(DIVISIONS))
    compiled = compile_subdnns([subdnn], {}, "tvm", cache_dir=tmp_path / "cache", progress=False)[subdnn.name]
    (name, data), = compiled.files.items()
    (tmp_path / name).write_bytes(data)
    run = tvm_runner(tmp_path / name, compiled.meta, RuntimeOptions(threads=1))
    words = np.array([0, 5, 6, 17, -1, -7, -12], np.int64)
    x = np.array([-3.0, -2.5, 4.9, 5.0], np.float32)
    floor, trunc, floats = run(words, x)
    w, t = torch.from_numpy(words), torch.from_numpy(x)
    np.testing.assert_array_equal(floor, torch.div(w, 6, rounding_mode="floor").numpy())
    np.testing.assert_array_equal(trunc, torch.div(w, 6, rounding_mode="trunc").numpy())
    np.testing.assert_array_equal(floats, torch.div(t, 2.5, rounding_mode="floor").numpy())
