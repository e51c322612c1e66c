"""dycl-bench's throughput table: its structure and its answer checks, never its speed."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

import dycl
from dycl.bench import report
from dycl.bench.throughput import (BREAKDOWN_PARTS, SYSTEMS, WrongAnswer, check_answers, measure, request_mix,
                                   run_many_breakdown)
from dycl.runtime import RuntimeOptions


class _ExitOrDeeper(nn.Module):
    """Exits after one layer when its features are large, else runs a second layer first;
    the exit index comes back as a Python int, as the SDNs return theirs."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.first, self.second, self.head = nn.Linear(4, 8), nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x):
        h = torch.relu(self.first(x))
        if h.sum() > 2.0:
            return self.head(h), 0
        h = torch.relu(self.second(h))
        return self.head(h), 1


class _EveryLayer(nn.Module):
    """The static counterpart: both layers for every row, no exit."""

    def __init__(self, model: _ExitOrDeeper):
        super().__init__()
        self.model = model

    def forward(self, x):
        m = self.model
        return m.head(torch.relu(m.second(torch.relu(m.first(x)))))


def _path_inputs(model):
    inputs = [(torch.full((1, 4), 2.0),), (torch.full((1, 4), -2.0),), (torch.linspace(-1, 1, 4)[None],)]
    with torch.no_grad():
        assert {model(*args)[1] for args in inputs} == {0, 1}  # both paths
    return inputs


@pytest.fixture(scope="module")
def network(tmp_path_factory):
    """The model, its path inputs, DyCL+ORT one request at a time, and the artifact
    dycl-serve would load (the run-many form, loaded back from its directory)."""
    from dycl.bench.systems import prepare_served
    from dycl.frontend import import_module

    model = _ExitOrDeeper().eval()
    inputs = _path_inputs(model)
    cache = tmp_path_factory.mktemp("cache")
    compiled = dycl.compile(model, inputs[0], backend="onnxruntime", threads=1, cache_dir=cache, progress=False)
    served, cost, artifact = prepare_served(import_module(model, inputs[0]), RuntimeOptions(threads=1), cache)
    yield model, inputs, compiled, served, cost
    del artifact


def test_request_mix_takes_every_path_input_equally_often():
    inputs = [(torch.full((1, 2), float(k)),) for k in range(3)]
    mix = request_mix(inputs, 8)
    counts = sorted(sum(1 for (x,) in mix if x[0, 0] == k) for k in range(3))
    assert counts == [2, 3, 3] and request_mix(inputs, 8)[0][0].equal(mix[0][0])  # seeded order


def test_check_answers_refuses_a_wrong_answer():
    want = [(torch.ones(1, 3), 0), (torch.zeros(1, 3), 1)]
    assert check_answers("s", want, [(np.ones((1, 3), np.float32), 0), (np.zeros((1, 3), np.float32), 1)]) == 0.0
    with pytest.raises(WrongAnswer, match="request 1"):  # another exit index
        check_answers("s", want, [(np.ones((1, 3), np.float32), 0), (np.zeros((1, 3), np.float32), 0)])
    with pytest.raises(WrongAnswer, match="max abs error"):
        check_answers("s", want, [(np.ones((1, 3), np.float32), 0), (np.full((1, 3), 0.01, np.float32), 1)])
    with pytest.raises(WrongAnswer, match="answers for"):
        check_answers("s", want, want[:1])


def test_throughput_table_structure(network, tmp_path):
    """Every system at every N has requests/s and latency; run_many's answers were checked
    against eager inside measure; the record renders as a table."""
    model, inputs, compiled, served, _ = network
    sizes = (1, 2)
    part = measure("exit_or_deeper", model, _EveryLayer(model).eval(), compiled, served, inputs, RuntimeOptions(threads=1),
                   tmp_path, sizes=sizes, requests=4, budget_seconds=0.5, min_rounds=2, max_rounds=2, breakdown_repeat=2)
    throughput, details = part["throughput"], part["throughput_details"]
    assert set(throughput) == {f"{s}@{n}" for s in SYSTEMS for n in sizes}
    assert all(v > 0 and math.isfinite(v) for v in throughput.values())
    assert set(details["latency_ms"]) == set(throughput) and all(v > 0 for v in details["latency_ms"].values())
    # one at a time, the second of a pair waits for the first: its mean latency grows with N
    assert details["latency_ms"]["eager@2"] > details["latency_ms"]["eager@1"]
    assert details["max_abs_error"]["dycl-ort-run_many@2"] <= 1e-4
    assert details["max_abs_error"]["static-batched-ort@2"] <= 1e-4
    assert {"run_many_vs_one_at_a_time@2", "run_many_vs_static@2"} <= set(details["paired_ratios"])
    assert len(details["throughput_per_round"]["eager@1"]) == details["rounds"]["eager"]
    batches = details["mean_batch"]
    assert batches["1"]["overall"] == 1.0 and batches["2"]["backend_calls"] > 0
    # run_many was timed on the served artifact's run-many form (its sub-DNNs are many_*)
    assert batches["2"]["per_subdnn"] and all(name.startswith("many_") for name in batches["2"]["per_subdnn"])
    assert details["static"]["2"]["batch"] == 2
    breakdown = details["breakdown"]
    assert breakdown["n"] == 2 and breakdown["backend_calls"] > 0
    assert all(breakdown[f"{p}_ms"] >= 0 for p in ("backend", "host_programs", "checks_and_outputs"))
    assert set(f"{p}_ms" for p in BREAKDOWN_PARTS) <= set(breakdown)
    record = {"network": "exit_or_deeper", **part, "systems": {}, "failures": {}}
    lines = "\n".join(report.throughput_tables([record], report.summary([record])))
    assert "| `exit_or_deeper` |" in lines and "static batched ORT" in lines and "backend" in lines


def test_served_artifact_has_the_run_many_form(network):
    """The bench serves what dycl-serve loads: an artifact with a run-many form of its own
    (the exit test split out of the row-wise layers), its extra compile cost reported."""
    *_, served, cost = network
    assert cost["run_many_form"] and cost["run_many_subdnn_count"] > 0 and cost["compile_seconds"] > 0
    assert "run_many" in served.manifest


def test_breakdown_replays_run_many(network):
    model, inputs, compiled, served, _ = network
    arrays = [tuple(t.numpy() for t in args) for args in inputs]
    parts = run_many_breakdown(served, arrays, repeat=1)
    assert parts["requests"] == 3 and parts["host_steps"] >= parts["backend_calls"] > 0
    assert parts["backend_ms"] <= parts["instrumented_ms"]


def test_cli_checks_the_throughput_options(capsys):
    from dycl.bench.cli import main, parser

    assert parser().parse_args([]).throughput is None  # on for a full run, off for --quick
    assert main(["--only", "blockdrop", "--throughput-sizes", "0,8", "--out", "/nonexistent"]) == 2
    assert "positive integers" in capsys.readouterr().err
    assert main(["--only", "blockdrop", "--throughput-sizes", "8", "--throughput-requests", "12", "--out", "/nonexistent"]) == 2
    assert "not a multiple" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_throughput_only_on_a_zoo_network(tmp_path):
    """`dycl-bench --throughput only` on BlockDrop: the JSON has the table, the markdown shows it."""
    import json

    from dycl.bench.cli import main

    assert main(["--only", "blockdrop", "--throughput", "only", "--throughput-sizes", "1,2", "--throughput-budget", "2",
                 "--min-rounds", "2", "--quiet", "--out", str(tmp_path), "--stem", "t"]) == 0
    result = json.loads((tmp_path / "t.json").read_text())
    (record,) = result["networks"]
    assert set(record["throughput"]) == {f"{s}@{n}" for s in SYSTEMS for n in (1, 2)}
    assert record["throughput_details"]["max_abs_error"]["dycl-ort-run_many@2"] <= 1e-4
    assert "systems" in record and "ratios" not in record  # no latency rounds
    assert result["summary"]["throughput"]["n"] == 2
    text = (tmp_path / "t.md").read_text()
    assert "### Throughput" in text and "| `blockdrop` |" in text and "### Speed" not in text


def _throughput_record(network: str, vs_one: float, vs_static: float, unstable=()) -> dict:
    ratios = {"run_many_vs_one_at_a_time@32": vs_one, "run_many_vs_static@32": vs_static, "run_many_vs_eager@32": 9.0}
    return {"network": network, "throughput": {},
            "throughput_details": {"sizes": [1, 32], "ratios": ratios, "paired_ratios": {}, "unstable_ratios": list(unstable)}}


def test_throughput_targets_leave_unstable_rows_out_and_exempt_skipnet_from_static():
    """The targets of the throughput table: run_many >= 1.6x one at a time (geomean), and
    >= static batched on every network whose requests skip work (not SkipNet's)."""
    records = [_throughput_record("sdn_vgg", 2.0, 1.2), _throughput_record("blockdrop", 1.28, 1.1),
               _throughput_record("skipnet_ff", 1.6, 0.5),
               _throughput_record("caption_resnext", 100.0, 0.1, unstable=["run_many_vs_one_at_a_time@32",
                                                                            "run_many_vs_static@32"])]
    summary = report.throughput_summary(records)
    one = summary["targets"]["run_many_vs_one_at_a_time_geomean@32"]
    assert math.isclose(one["value"], (2.0 * 1.28 * 1.6) ** (1 / 3)) and one["met"] is True
    static = summary["targets"]["run_many_vs_static_min_skipping@32"]
    assert math.isclose(static["value"], 1.1) and static["met"] is True  # SkipNet's 0.5 reported, not required
    assert math.isclose(summary["run_many_vs_static_min@32"], 0.5)
