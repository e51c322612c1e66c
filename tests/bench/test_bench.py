"""dycl-bench: structure of what it writes, never speed (speed lives in the bench itself)."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest
import torch

from dycl.bench import report
from dycl.bench.cli import main
from dycl.bench.numerics import errors_against, max_abs_error
from dycl.bench.run import derive
from dycl.bench.timing import geomean, interleaved, plan_rounds
from dycl.runtime import RuntimeOptions


def test_interleaved_runs_every_input_of_every_system_per_round():
    seen = []
    systems = {name: [lambda n=name, i=i: seen.append((n, i)) for i in range(3)] for name in ("a", "b", "c")}
    timings = interleaved(systems, rounds=4, strides={"c": 2})
    assert [len(timings[n].sweeps_ms) for n in "abc"] == [4, 4, 2]
    assert all(len(per) == 4 for per in timings["a"].per_input_ms)
    assert seen[:9] == [(n, i) for n in "abc" for i in range(3)]  # round 0: a b c
    assert seen[9:15] == [("b", i) for i in range(3)] + [("a", i) for i in range(3)]  # round 1: b (c skipped) a
    record = timings["a"].to_json()
    assert record["q1_ms"] <= record["median_ms"] <= record["q3_ms"] and record["rounds"] == 4


def test_a_warm_turn_makes_its_calls_once_untimed_then_times_them():
    calls = []

    def call():  # the first call of a turn is slow (cold), the next ones are not
        calls.append(time.perf_counter())
        if len(calls) % 2:
            time.sleep(0.05)

    timings = interleaved({"a": [call]}, rounds=3, pause_s=0, warm_up=True)
    assert len(calls) == 6 and len(timings["a"].sweeps_ms) == 3
    assert max(timings["a"].sweeps_ms) < 25  # the 50 ms warm-up call is never timed


def test_plan_rounds_gives_slow_systems_fewer_rounds():
    rounds, strides = plan_rounds({"fast": 0.01, "slow": 5.0}, budget_s=10, min_rounds=3, max_rounds=40)
    assert rounds == 40 and strides["fast"] == 1 and 40 // strides["slow"] >= 3


def test_max_abs_error():
    assert max_abs_error(torch.ones(2), np.ones(2, np.float32)) == (0.0, None)
    assert max_abs_error((torch.ones(2), 3), (np.zeros(2), 3))[0] == 1.0
    assert max_abs_error(torch.ones(2), np.ones(3))[0] == math.inf
    assert max_abs_error([torch.ones(1)], [])[0] == math.inf
    assert max_abs_error(torch.tensor([[1, 2]]), np.array([[1, 2]]))[0] == 0.0
    result = errors_against([lambda: torch.zeros(1)], [lambda: [np.full(1, 0.5)]])
    assert result["max_abs_error"] == 0.5 and result["mismatches"] == []


def _fake_record(name: str, scale: float) -> dict:
    def system(ms, **cost):
        return {"time": {"median_ms": ms, "q1_ms": ms * 0.9, "q3_ms": ms * 1.1, "rounds": 5, "per_input_median_ms": [ms]},
                "errors": {"max_abs_error": 1e-6, "per_input": [1e-6], "mismatches": []},
                "cost": cost, "info": {}}

    record = {
        "network": name, "family": "test", "path_inputs": 2, "distinct_paths": 2, "frontend_seconds": 1.0,
        "systems": {
            "eager": system(10 * scale),
            "torch.compile": system(8 * scale, total_seconds=20.0),
            "dycl-ort": system(2 * scale, frontend_seconds=1.0, passes_seconds=0.5, backend_seconds=3.0,
                               total_seconds=4.5, subdnn_count=7, cached_subdnns=0, artifact_bytes=1000),
            "dycl-ort-nohoist": system(2.2 * scale, subdnn_count=9),
            "oracle-ort": system(1.9 * scale, graphs=2, total_seconds=3.0),
        },
        "failures": {"oracle-tvm": "skipped in this test"},
    }
    record["systems"]["dycl-ort"]["host"] = {"subdnn_calls_per_inference": 5.0, "host_us_per_inference": 40.0,
                                             "host_us_per_subdnn_call": 8.0}
    derive(record)
    return record


def test_report_writes_strict_json_markdown_and_chart(tmp_path):
    records = [_fake_record("net_a", 1.0), _fake_record("net_b", 2.0)]
    result = {"machine": report.machine(), "config": {"threads": 2}, "networks": records,
              "summary": report.summary(records)}
    targets = result["summary"]["targets"]
    assert math.isclose(targets["dycl_ort_geomean_speedup_vs_eager"]["value"], 5.0)
    assert targets["dycl_ort_geomean_speedup_vs_eager"]["met"] is True
    assert math.isclose(targets["dynamism_overhead_ort_geomean"]["value"], 2 / 1.9)
    assert math.isnan(records[0]["ratios"]["dynamism_overhead_tvm"])
    paths = report.write(result, tmp_path, "t")
    loaded = json.loads(paths["json"].read_text())  # strict: no NaN literals
    assert loaded["networks"][0]["ratios"]["dynamism_overhead_tvm"] is None
    text = paths["md"].read_text()
    assert "`net_a`" in text and "geomean" in text and "skipped in this test" in text
    assert paths["png"].read_bytes()[:4] == b"\x89PNG"


def test_an_unstable_row_is_flagged_and_left_out_of_the_geomeans():
    """Eager's rounds on net_b spread from 5 ms to 800 ms (a loaded machine): its row is
    flagged and its speed-ups stay out of the geomean, which is net_a's alone."""
    steady, swinging = _fake_record("net_a", 1.0), _fake_record("net_b", 1.0)
    swinging["systems"]["eager"]["time"].update(q1_ms=5.0, q3_ms=800.0)
    derive(swinging)
    assert swinging["unstable_systems"] == ["eager"]
    assert "dycl-ort/speedup_vs_eager" in swinging["unstable_ratios"]
    assert "dynamism_overhead_ort" not in swinging["unstable_ratios"]
    summary = report.summary([steady, swinging])
    assert math.isclose(summary["targets"]["dycl_ort_geomean_speedup_vs_eager"]["value"], 5.0)
    result = {"machine": report.machine(), "config": {"threads": 2}, "networks": [steady, swinging], "summary": summary}
    row = next(line for line in report.markdown(result).splitlines() if line.startswith("| `net_b`"))
    assert row.count(report.UNSTABLE_MARK.strip()) >= 2  # eager's IQR and the ratios over it


def test_geomean_ignores_missing():
    assert math.isclose(geomean([2.0, 8.0, math.nan, None]), 4.0)
    assert math.isnan(geomean([]))


def test_cli_rejects_unknown_names(capsys):
    assert main(["--only", "no_such_net", "--out", "/nonexistent"]) == 2
    assert "unknown network" in capsys.readouterr().err
    assert main(["--only", "blockdrop", "--systems", "bogus", "--out", "/nonexistent"]) == 2


@pytest.mark.slow
def test_quick_run_structure(tmp_path):
    """`dycl-bench --quick`: every quick system ran on both networks, exactly as eager."""
    assert main(["--quick", "--quiet", "--out", str(tmp_path), "--stem", "q"]) == 0
    result = json.loads((tmp_path / "q.json").read_text())
    assert result["machine"]["cores"] and result["machine"]["versions"]["torch"]
    assert len(result["networks"]) == 2
    for record in result["networks"]:
        assert not record["failures"]
        for system in ("eager", "dycl-ort", "dycl-ort-nohoist", "oracle-ort"):
            entry = record["systems"][system]
            assert entry["time"]["median_ms"] > 0 and entry["time"]["rounds"] >= 3
            assert entry["errors"]["max_abs_error"] <= 1e-4, (record["network"], system, entry["errors"])
        assert record["systems"]["dycl-ort"]["cost"]["subdnn_count"] > 0
        assert record["systems"]["dycl-ort"]["host"]["subdnn_calls_per_inference"] > 0
    assert (tmp_path / "q.png").exists() and "| network |" in (tmp_path / "q.md").read_text()


def test_merge_cold_costs_takes_the_earlier_backend_seconds():
    warm, cold = _fake_record("net_a", 1.0), _fake_record("net_a", 1.0)
    warm["systems"]["dycl-ort"]["cost"].update(backend_seconds=0.2, cached_subdnns=7)
    cold["systems"]["dycl-ort"]["cost"].update(backend_seconds=30.0)
    report.merge_cold_costs([warm], {"networks": [cold]})
    cost = warm["systems"]["dycl-ort"]["cost"]
    assert cost["backend_seconds"] == 30.0 and cost["cached_subdnns"] == 0
    assert math.isclose(cost["total_seconds"], 1.0 + 0.5 + 30.0)
    assert warm["systems"]["dycl-ort"]["warm_cost"]["backend_seconds"] == 0.2


class _EarlyExit(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(4, 4), torch.nn.Linear(4, 3)
        with torch.no_grad():
            self.a.weight.copy_(torch.eye(4))
            self.a.bias.zero_()

    def forward(self, x):
        h = torch.relu(self.a(x))
        if h.sum().item() > 0.5:
            return self.b(h), 1
        return h * 2, 2


def test_oracle_freezes_each_inputs_path_and_matches_eager(tmp_path):
    from dycl.bench.numerics import max_abs_error
    from dycl.bench.oracle import oracle_calls

    torch.manual_seed(0)
    model = _EarlyExit().eval()
    inputs = [(torch.full((1, 4), 1.0),), (torch.full((1, 4), -1.0),)]
    with torch.no_grad():
        expected = [model(*args) for args in inputs]
    assert {e[1] for e in expected} == {1, 2}  # both paths
    calls, cost = oracle_calls("early_exit", model, inputs, [e[1] for e in expected], "onnxruntime", RuntimeOptions(threads=1), tmp_path)
    assert cost["graphs"] == 2 and cost["cached_graphs"] == 0
    for call, want in zip(calls, expected):
        assert max_abs_error(want, call())[0] < 1e-5
    calls, cost = oracle_calls("early_exit", model, inputs, [e[1] for e in expected], "onnxruntime", RuntimeOptions(threads=1), tmp_path)
    assert cost["cached_graphs"] == 2 and max_abs_error(expected[1], calls[1]())[0] < 1e-5


def test_oracle_with_decisions_computes_them_and_returns_what_eager_does(tmp_path):
    """The plain oracle drops the condition's reduction (its value is burnt in); the decided
    one keeps it as an extra graph output, which its calls leave out."""
    import onnx

    from dycl.bench.oracle import oracle_calls, trace_path

    model = _EarlyExit().eval()
    args = (torch.full((1, 4), 1.0),)
    plain, _ = trace_path(model, args)
    decided, template = trace_path(model, args, keep_decisions=True)
    assert template == [None, 1]
    assert len(decided.graph_signature.user_outputs) == len(plain.graph_signature.user_outputs) + 1
    with torch.no_grad():
        want = model(*args)
    calls, cost = oracle_calls("early_exit", model, [args], [1], "onnxruntime", RuntimeOptions(threads=1), tmp_path,
                               keep_decisions=True)
    assert max_abs_error(want, calls[0]())[0] < 1e-5
    (graph_file,) = (tmp_path / "oracle" / "early_exit").glob("onnxruntime-decisions-*/oracle.onnx")
    assert len(onnx.load(str(graph_file)).graph.output) == 2  # the logits and h.sum()


def test_a_network_measured_in_its_own_process_comes_back_as_its_record():
    """dycl-bench measures each network in a fresh process (`Settings.own_process`); what
    that process returns, an error included, is the network's record."""
    from dycl.bench.run import Settings, bench

    records = bench(["no_such_net"], Settings(log=False, own_process=True))
    assert records[0]["network"] == "no_such_net" and "KeyError" in records[0]["error"]


def test_the_bench_rests_before_every_network_but_the_first(monkeypatch):
    """`Settings.rest_seconds` of idle come before each network after the first, so that no
    network is measured on a machine the ones before it tired (docs/bench.md)."""
    from dycl.bench import run
    from dycl.bench.run import Settings, bench

    slept = []
    monkeypatch.setattr(run.time, "sleep", slept.append)
    records = bench(["no_such_net", "nor_this_one", "nor_that_one"], Settings(log=False, rest_seconds=7.0))
    assert [r["network"] for r in records] == ["no_such_net", "nor_this_one", "nor_that_one"]
    assert slept == [7.0, 7.0]
    slept.clear()
    bench(["no_such_net", "nor_this_one"], Settings(log=False))
    assert slept == []
