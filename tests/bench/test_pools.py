"""python -m dycl.bench.pools: structure of what it measures, never speed."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from dycl.bench import pools
from dycl.bench.cli import parser


@pytest.mark.parametrize("kind", pools.MODELS)
def test_graphs_load_and_keep_their_shape(kind, tmp_path):
    path = tmp_path / f"{kind}.onnx"
    pools.write_model(kind, path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    shape = session.get_inputs()[0].shape
    (y,) = session.run(None, {"x": np.ones(shape, np.float32)})
    assert list(y.shape) == shape  # chainable: each session's output feeds the next


def test_every_configuration_reports_per_call_latency():
    """One round of every configuration, each in its own worker process (the global pool
    is per process): a row per (configuration, session count), positive latencies."""
    rows = pools.measure("tiny", pools.CONFIGS, [1, 3], threads=2, rounds=1, calls=6, log=None)["rows"]
    assert {(r["config"], r["sessions"]) for r in rows} == {(c, n) for c in pools.CONFIGS for n in (1, 3)}
    assert all(r["median_us_per_call"] > 0 and r["rounds"] == 1 for r in rows)
    threads = {r["config"]: r["process_threads"] for r in rows}
    assert threads["shared/spin"] < threads["session/spin"]  # one pool instead of one per session
    assert "| tiny | 3 | single |" in pools.table(rows)


def test_bench_cli_takes_the_pool_switch():
    assert parser().parse_args(["--ort-pool", "shared"]).ort_pool == "shared"
    assert parser().parse_args([]).ort_pool == "session"
    with pytest.raises(SystemExit):
        parser().parse_args(["--ort-pool", "bogus"])
