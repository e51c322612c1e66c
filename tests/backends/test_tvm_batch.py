"""`run_many` on TVM: the sub-DNNs dycl-mark-batchable proves row-wise are compiled with a
Relax symbolic dim 0 (`TvmBackend.dynamic_batch`), so the calls several requests wait on
are one backend call; the results are each request's own, exact against eager and against
one request at a time, on zoo networks at N = 32 with requests taking every path."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import dycl
from dycl.backends import compile_subdnns, subdnns_of
from dycl.backends.tvm import TvmBackend
from dycl.ir import make_context, parse_module
from dycl.passes.mark_batchable import MarkBatchablePass
from dycl.runtime import RuntimeOptions
from dycl.runtime.runners import tvm_runner
from dycl.zoo import REGISTRY
from tests.api.shared import *  # noqa: F401,F403 - one compile cache for the whole session
from tests.runtime.test_run_many import N, _check_against_eager_and_one_at_a_time, _requests

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("network", ["caption_resnext", "sdn_mobilenet"])
def test_run_many_on_tvm_matches_eager_and_one_request_at_a_time(network):
    torch.set_num_threads(1)
    entry = REGISTRY[network]
    model = entry.build()
    compiled = dycl.compile(model, entry.example_inputs(), backend="tvm", progress=False, check=False)
    requests = _requests(entry)
    compiled.batch_stats.clear()
    _check_against_eager_and_one_at_a_time(model, compiled, requests)
    if network == "caption_resnext":  # its encoder and decoder step are row-wise
        assert [r["batchable"] for r in compiled.manifest["subdnns"]] == [True, True]
        stats = compiled.batch_stats
        # every request's encoder in as few calls as keep each call's largest tensor in cache
        from dycl.runtime.batching import BATCH_BYTES

        encoder = compiled.manifest["subdnns"][0]
        assert stats["subdnn_0"]["backend_calls"] == -(-N // max(1, BATCH_BYTES // encoder["row_bytes"]))
        assert stats["subdnn_1"]["backend_calls"] < stats["subdnn_1"]["requests"]


V = "!torch.vtensor"
ROWS = f'''"builtin.module"() ({{
  "func.func"() <{{sym_name = "subdnn_0", function_type = ({V}<[1,4],f32>) -> {V}<[1,3],f32>, sym_visibility = "private"}}> ({{
  ^bb0(%x: {V}<[1,4],f32>):
    %w = "dycl.param"() {{name = "fc.weight"}} : () -> {V}<[3,4],f32>
    %b = "dycl.param"() {{name = "fc.bias"}} : () -> {V}<[3],f32>
    %h = "torch.aten.linear"(%x, %w, %b) : ({V}<[1,4],f32>, {V}<[3,4],f32>, {V}<[3],f32>) -> {V}<[1,3],f32>
    %t = "torch.aten.tanh"(%h) : ({V}<[1,3],f32>) -> {V}<[1,3],f32>
    "func.return"(%t) : ({V}<[1,3],f32>) -> ()
  }}) {{dycl.subdnn}} : () -> ()
}}) : () -> ()'''
WEIGHTS = {"fc.weight": np.arange(12, dtype=np.float32).reshape(3, 4) / 10, "fc.bias": np.array([0.1, -0.2, 0.3], np.float32)}


def _batchable_subdnn():
    module = parse_module(ROWS)
    MarkBatchablePass().apply(make_context(), module)
    (subdnn,) = subdnns_of(module)
    assert subdnn.batch_rows == 1 and subdnn.inputs[0].shape == (None, 4)
    return subdnn


def test_a_batchable_subdnn_runs_any_rows_in_one_call(tmp_path):
    """One compile, with a symbolic dim 0, runs one request's row and many; the rows arrive
    as run_many makes them (a concatenation, its split parts, an offset view: not always
    64-byte aligned, which TVM's DLPack import needs; the runner copies those)."""
    assert TvmBackend.dynamic_batch
    subdnn = _batchable_subdnn()
    compiled = compile_subdnns([subdnn], WEIGHTS, "tvm", cache_dir=tmp_path / "cache", progress=False)[subdnn.name]
    assert compiled.meta.get("batchable", True)
    (name, data), = compiled.files.items()
    (tmp_path / name).write_bytes(data)
    run = tvm_runner(tmp_path / name, compiled.meta, RuntimeOptions(threads=1))
    rng = np.random.default_rng(0)
    weight, bias = torch.from_numpy(WEIGHTS["fc.weight"]), torch.from_numpy(WEIGHTS["fc.bias"])
    rows = [rng.standard_normal((1, 4)).astype(np.float32) for _ in range(33)]
    joined = np.concatenate(rows)
    for x in (rows[0], joined[:2], joined, joined[1:], joined[3:7]):
        (got,) = run(x)
        expected = torch.tanh(torch.from_numpy(np.ascontiguousarray(x)) @ weight.T + bias).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


def test_a_tuned_build_keeps_one_requests_rows(tmp_path):
    """MetaSchedule tunes static shapes only: with a database, a batchable sub-DNN is built
    for one request's rows (as tuned) and run request by request."""
    subdnn = _batchable_subdnn()
    backend = TvmBackend.from_options({"database": str(tmp_path / "database")})
    compiled = backend.compile(subdnn, WEIGHTS)
    assert compiled.meta["batchable"] is False
