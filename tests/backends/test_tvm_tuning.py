"""MetaSchedule tuning: options, the budget split, the shared database, the cache key of
tuned libraries, and (slow tier) real tuning, locally and over TVM's RPC tracker."""

import json
import math
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from dycl.api import compile_module
from dycl.backends.cache import cache_key
from dycl.backends.tuning import TUNING_LOG, TuneOptions, invested_seconds, split_budget
from dycl.ir import parse_module

T = "!torch.vtensor<[16,16],f32>"
MATMUL = f'''"builtin.module"() ({{
  "func.func"() <{{sym_name = "forward", function_type = ({T}) -> ({T})}}> ({{
  ^bb0(%x: {T}):
    %y = "func.call"(%x) <{{callee = @subdnn_0}}> : ({T}) -> ({T})
    "func.return"(%y) : ({T}) -> ()
  }}) : () -> ()
  "func.func"() <{{sym_name = "subdnn_0", function_type = ({T}) -> ({T}), sym_visibility = "private"}}> ({{
  ^bb0(%x: {T}):
    %w = "dycl.param"() {{name = "w"}} : () -> {T}
    %y = "torch.aten.mm"(%x, %w) : ({T}, {T}) -> {T}
    "func.return"(%y) : ({T}) -> ()
  }}) {{dycl.subdnn}} : () -> ()
}}) : () -> ()'''

# A small search: one round of 4 candidates from a population of 32.
SMALL = dict(trials_per_task=4, trials_per_round=4, population=32)


def test_tune_options_are_checked():
    with pytest.raises(ValueError, match="minutes"):
        TuneOptions(minutes=-1)
    with pytest.raises(ValueError, match="go together"):
        TuneOptions(rpc_tracker="127.0.0.1:9190")
    with pytest.raises(ValueError, match="host:port"):
        TuneOptions(rpc_tracker="127.0.0.1", rpc_key="board")
    assert TuneOptions(rpc_tracker="localhost:9190", rpc_key="board").rpc_key == "board"


def test_budget_gives_rounds_most_costly_first_then_follows_cost():
    # Both get a 10 s round; the other 80 s go 3:1.
    assert split_budget([3.0, 1.0], 100.0, 10.0) == [70.0, 30.0]
    # A task of 1/101 of the cost still gets its round, where its share by cost would be 1 s.
    shares = split_budget([50.0, 50.0, 1.0], 100.0, 10.0)
    assert shares[2] > 10.0 - 1e-9 and shares[0] == shares[1] > 40.0 and abs(sum(shares) - 100.0) < 1e-9
    # Half of 100 s buys five rounds: the five most costly tasks, in any order of the list.
    shares = split_budget([1.0, 9.0, 2.0, 8.0, 3.0, 7.0, 4.0], 100.0, 10.0)
    assert [i for i, share in enumerate(shares) if share > 0] == [1, 3, 4, 5, 6]
    assert shares[1] > shares[3] > shares[5] > shares[6] > shares[4] and abs(sum(shares) - 100.0) < 1e-9
    # Tasks with records already come after those without any: a first round pays most.
    shares = split_budget([9.0, 1.0, 8.0, 2.0], 40.0, 10.0, started=[True, False, True, False])
    assert [i for i, share in enumerate(shares) if share > 0] == [1, 3]
    # Under one round: nothing; no tasks: nothing.
    assert split_budget([1.0, 1.0], 5.0, 10.0) == [0.0, 0.0]
    assert split_budget([1.0, 1.0], 15.0, 10.0) == [15.0, 0.0]
    assert split_budget([], 60.0, 10.0) == []


def test_the_default_database_is_one_per_target(tmp_path):
    import tvm

    from dycl.backends.tuning import database_directory
    from dycl.backends.tvm import target_of

    tuned, untuned = target_of("llvm", tuned=True), target_of("llvm")
    assert "mcpu" in str(tuned) and "mcpu" not in str(untuned)
    ours = database_directory(TuneOptions(), tuned, tmp_path)
    other = database_directory(TuneOptions(), tvm.target.Target({"kind": "llvm", "mcpu": "cascadelake", "num-cores": 2}), tmp_path)
    assert ours.parent == other.parent == tmp_path / "tvm-metaschedule" and ours != other
    assert "/" not in ours.name and " " not in ours.name
    assert database_directory(TuneOptions(database=str(tmp_path / "mine")), tuned, tmp_path) == tmp_path / "mine"


def test_tune_is_for_tvm_only_and_checked_before_anything_runs():
    import torch

    import dycl

    with pytest.raises(ValueError, match="tune= is for backend 'tvm'"):
        compile_module(parse_module(MATMUL), {}, "onnxruntime", run_pipeline=False, tune=TuneOptions())
    with pytest.raises(ValueError, match="tune= is for backend 'tvm'"):
        dycl.compile(torch.nn.Linear(2, 2), (torch.randn(1, 2),), tune=dycl.TuneOptions(), progress=False)
    with pytest.raises(TypeError, match="dycl.TuneOptions"):
        dycl.compile(torch.nn.Linear(2, 2), (torch.randn(1, 2),), backend="tvm", tune={"minutes": 1}, progress=False)


def test_a_tuned_library_is_keyed_on_the_database_content(tmp_path):
    options = {"target": "llvm", "database": str(tmp_path)}
    empty = cache_key("content", "tvm", options)
    (tmp_path / "database_tuning_record.json").write_text('[0, "a record"]\n')
    one_record = cache_key("content", "tvm", options)
    assert empty != one_record
    assert cache_key("content", "tvm", options) == one_record  # same content, same key
    with open(tmp_path / "database_tuning_record.json", "a") as stream:
        stream.write('[0, "another"]\n')
    assert cache_key("content", "tvm", options) not in (empty, one_record)
    assert cache_key("content", "tvm", {"target": "llvm", "database": ""}) != empty


def test_invested_seconds_sums_the_log_for_the_given_tasks(tmp_path):
    lines = [{"task": "a", "seconds": 10.0}, {"task": "b", "seconds": 5.0}, {"task": "a", "seconds": 2.5}]
    (tmp_path / TUNING_LOG).write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"task": "a", "sec')
    assert invested_seconds(tmp_path, {"a"}) == 12.5
    assert invested_seconds(tmp_path, {"a", "b"}) == 17.5
    assert invested_seconds(tmp_path / "missing", {"a"}) == 0.0


def _compile_matmul(weights, tune, cache_dir):
    return compile_module(
        parse_module(MATMUL), weights, "tvm", run_pipeline=False, progress=False, cache_dir=cache_dir, tune=tune,
    )


def _records(database) -> list[list]:
    path = database / "database_tuning_record.json"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def _measured(record) -> bool:
    run_secs = record[1][1]
    return bool(run_secs) and all(0 < float(s) < 1.0 for s in run_secs)


@pytest.mark.slow  # MetaSchedule: one search round, about a minute
def test_tuning_fills_one_shared_database_that_later_compiles_reuse(tmp_path):
    rng = np.random.default_rng(0)
    database = tmp_path / "database"
    tune = TuneOptions(minutes=0.5, database=str(database), **SMALL)
    weights = {"w": rng.standard_normal((16, 16)).astype(np.float32)}
    compiled = _compile_matmul(weights, tune, tmp_path / "cache")
    tuning = compiled.compile_report["tuning"]
    assert tuning["tasks"] == 1 and tuning["tuned"] == 1 and tuning["trials"] > 0
    assert compiled.manifest["subdnns"][0]["tuned"] is True
    assert compiled.manifest["backend_options"]["database"] == str(database)
    records = _records(database)
    assert records and any(_measured(r) for r in records)
    x = rng.standard_normal((16, 16)).astype(np.float32)
    np.testing.assert_allclose(compiled(x), x @ weights["w"], rtol=1e-5, atol=1e-5)

    # Another network with the same matmul shape (other weights, another compile cache),
    # tuning nothing: its task is the one already tuned, and the build uses its record.
    other = {"w": rng.standard_normal((16, 16)).astype(np.float32)}
    again = _compile_matmul(other, TuneOptions(minutes=0, database=str(database), **SMALL), tmp_path / "cache2")
    tuning = again.compile_report["tuning"]
    assert tuning["tasks"] == 1 and tuning["tuned"] == 0 and tuning["trials"] == 0
    assert tuning["invested_minutes"] > 0  # the first compile's search, found in the tuning log
    assert again.manifest["subdnns"][0]["tuned"] is True
    assert len(_records(database)) == len(records)
    np.testing.assert_allclose(again(x), x @ other["w"], rtol=1e-5, atol=1e-5)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_server(tracker_port: int, key: str, seconds: float, processes) -> None:
    from tvm import rpc

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert all(p.poll() is None for p in processes), "the RPC tracker or server exited"
        try:
            summary = rpc.connect_tracker("127.0.0.1", tracker_port).summary()
            if any(queue.get("free", 0) for name, queue in summary.get("queue_info", {}).items() if name == key):
                return
        except Exception:  # the tracker is still starting
            pass
        time.sleep(0.5)
    raise TimeoutError(f"no RPC server registered under '{key}' within {seconds} s")


@pytest.mark.slow  # MetaSchedule over RPC: one search round, about a minute
def test_tuning_measures_through_an_rpc_tracker(tmp_path):
    pytest.importorskip("tornado", reason="TVM's RPC tracker needs tornado")
    tracker_port, key = _free_port(), "dycl-test-board"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    tracker = subprocess.Popen(
        [sys.executable, "-m", "tvm.exec.rpc_tracker", "--host", "127.0.0.1", "--port", str(tracker_port),
         "--port-end", str(tracker_port + 1)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True,
    )
    server_log = tmp_path / "server.log"
    with open(server_log, "w") as log:
        server_port = _free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "tvm.exec.rpc_server", "--host", "127.0.0.1", "--port", str(server_port),
             "--port-end", str(server_port + 1), "--tracker", f"127.0.0.1:{tracker_port}", "--key", key],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
    try:
        _wait_for_server(tracker_port, key, 60, (tracker, server))
        rng = np.random.default_rng(1)
        database = tmp_path / "database"
        tune = TuneOptions(minutes=0.5, database=str(database), rpc_tracker=f"127.0.0.1:{tracker_port}", rpc_key=key, **SMALL)
        weights = {"w": rng.standard_normal((16, 16)).astype(np.float32)}
        compiled = _compile_matmul(weights, tune, tmp_path / "cache")
        assert compiled.compile_report["tuning"]["trials"] > 0
        assert any(_measured(r) for r in _records(database))
        # The server saw the candidates: it logs each session the runner opened.
        assert "connected from" in server_log.read_text().lower() or "connection from" in server_log.read_text().lower()
        x = rng.standard_normal((16, 16)).astype(np.float32)
        np.testing.assert_allclose(compiled(x), x @ weights["w"], rtol=1e-5, atol=1e-5)
    finally:
        # Each runs its loop in a TVM popen worker of its own: end the whole group.
        for process in (server, tracker):
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
    assert math.isfinite(compiled.compile_report["tuning"]["seconds"])


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--tune-minutes", "1"], "--tune-minutes needs --backend tvm"),
        (["--rpc-key", "board"], "--rpc-tracker and --rpc-key go with --tune-minutes"),
        (["--backend", "tvm", "--tune-minutes", "1", "--rpc-tracker", "nohost", "--rpc-key", "k"], "host:port"),
    ],
)
def test_dycl_compile_checks_its_tuning_flags_before_loading_the_model(flags, message, capsys):
    from tools.dycl_compile import main

    assert main(["zoo:no_such_network", "-o", "unused", *flags]) == 1
    assert message in capsys.readouterr().err


@pytest.mark.slow  # one short search (~50 s on 2 cores)
def test_a_sub_dnn_with_a_runtime_dim_is_built_untuned_beside_tuned_ones(tmp_path):
    """MetaSchedule searches static shapes only (on a symbolic one it fails: "parallel_for_dynamic
    error"): the sub-DNN whose rows `x[:k]` gives is built untuned, the size-1 and size-0 ones
    are tuned, and the model is exact for every count."""
    import dycl
    from tests.frontend.helpers import max_abs_error
    from tests.frontend.test_runtime_sizes import SliceByCount, lengths_inputs

    model = SliceByCount().eval()
    inputs = lengths_inputs([2, 0, 1, 3])
    tune = TuneOptions(minutes=0.5, trials_per_task=4, trials_per_round=2, population=8)
    compiled = dycl.compile(model, inputs[0], backend="tvm", tune=tune, cache_dir=tmp_path, progress=False)
    assert compiled.compile_report["tuning"]["tasks"] >= 1
    for args in inputs:  # (a tuned schedule may sum in another order: float rounding)
        assert max_abs_error(model(*args), compiled(*args)) <= 1e-5
