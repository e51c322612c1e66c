"""The systems dycl-bench compares, each prepared for one network as one zero-argument call
per path input, plus what preparing it cost.

    eager              PyTorch eager under no_grad (torch tensors in and out)
    torch.compile      torch.compile(model) (inductor, default mode), warmed on every path input
    dycl-ort           DyCL + ONNX Runtime (numpy in and out: the runtime's own API)
    dycl-ort-nohoist   the same without dycl-hoist-free (the graph-optimisation ablation)
    dycl-ort-merge     the same with dycl-merge-calls (off by default; the call-merging ablation)
    dycl-ort-split     the same without dycl-keep-branches: the pure split of the DyCL paper,
                       every branch decided in the host (the keep-branches ablation)
    dycl-tvm           DyCL + TVM, untuned
    dycl-tvm-tuned     DyCL + TVM built with the records of the shared MetaSchedule database
                       (tuned first for --tune-minutes per network; cost: tuning minutes)
    oracle-ort/-tvm    the oracle static path per input (dycl.bench.oracle)
    oracle-ort-decided the same with the path's decisions still computed (returned, not burnt
                       in): the floor for any program that decides its path at run time
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dycl.runtime import RuntimeOptions

LABELS = {
    "eager": "PyTorch eager",
    "torch.compile": "torch.compile",
    "dycl-ort": "DyCL+ORT",
    "dycl-ort-nohoist": "DyCL+ORT w/o hoist-free",
    "dycl-ort-merge": "DyCL+ORT with merge-calls",
    "dycl-ort-split": "DyCL+ORT pure split (w/o keep-branches)",
    "dycl-tvm": "DyCL+TVM",
    "dycl-tvm-tuned": "DyCL+TVM tuned",
    "oracle-ort": "oracle ORT",
    "oracle-ort-decided": "oracle ORT with its decisions",
    "oracle-tvm": "oracle TVM",
}
ALL_SYSTEMS = tuple(LABELS)
DYCL_VARIANTS = {  # system -> (backend, dycl-pipeline options; "without": passes left out)
    "dycl-ort": ("onnxruntime", {}),
    "dycl-ort-nohoist": ("onnxruntime", {"without": ("dycl-hoist-free",)}),
    "dycl-ort-merge": ("onnxruntime", {"merge_calls": True}),
    "dycl-ort-split": ("onnxruntime", {"keep_branches": False}),
    "dycl-tvm": ("tvm", {}),
    "dycl-tvm-tuned": ("tvm", {}),
}
DYCL_SYSTEMS = ("dycl-ort", "dycl-ort-nohoist", "dycl-ort-merge", "dycl-ort-split", "dycl-tvm")
"""The DyCL systems prepared from the shared frontend output, in order (tuned TVM apart)."""
ORACLES = {  # system -> (backend, whether the graph keeps its path's decisions)
    "oracle-ort": ("onnxruntime", False),
    "oracle-ort-decided": ("onnxruntime", True),
    "oracle-tvm": ("tvm", False),
}


@dataclass
class Prepared:
    name: str
    calls: list[Callable[[], Any]]
    cost: dict[str, Any] = field(default_factory=dict)  # compile seconds, sizes, counts
    info: dict[str, Any] = field(default_factory=dict)  # anything else worth reporting
    handle: Any = None  # keeps the compiled object alive


def _bind(fn, args):
    def call():
        return fn(*args)

    return call


def _numpy_inputs(path_inputs: Sequence[tuple]) -> list[tuple]:
    return [tuple(np.ascontiguousarray(t.detach().numpy()) for t in args) for args in path_inputs]


# ------------------------------------------------------------------------------- PyTorch


def prepare_eager(model: torch.nn.Module, path_inputs: Sequence[tuple]) -> Prepared:
    def no_grad(fn):
        def call(*args):
            with torch.no_grad():
                return fn(*args)

        return call

    return Prepared("eager", [_bind(no_grad(model), args) for args in path_inputs])


def prepare_torch_compile(model: torch.nn.Module, path_inputs: Sequence[tuple]) -> Prepared:
    """torch.compile(model); the first call on every path input compiles what it needs.
    Graph breaks and graphs come from dynamo's counters over that warm-up."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(model)
    start = time.perf_counter()
    with torch.no_grad():
        for args in path_inputs:
            compiled(*args)
    seconds = time.perf_counter() - start
    breaks = counters.get("graph_break", {})
    stats = counters.get("stats", {})
    info = {
        "graph_breaks": int(sum(breaks.values())),
        "graph_break_reasons": len(breaks),
        "top_break_reasons": [reason.splitlines()[0][:160] for reason, _ in sorted(breaks.items(), key=lambda kv: -kv[1])[:3]],
        "unique_graphs": int(stats.get("unique_graphs", 0)),
        "frames_compiled": int(stats.get("calls_captured", 0)),
    }

    def no_grad(*args):
        with torch.no_grad():
            return compiled(*args)

    return Prepared("torch.compile", [_bind(no_grad, args) for args in path_inputs], {"total_seconds": seconds}, info, compiled)


# ---------------------------------------------------------------------------------- DyCL


def pipeline_passes(without: Sequence[str] = (), **options):
    """dycl-pipeline's passes in order (with these PipelinePass options), minus the named
    ones (ablations)."""
    from dycl.passes.pipeline import PipelinePass

    return [p for p in PipelinePass(**options).passes() if p.name not in without]


def import_program(model: torch.nn.Module, example_inputs: tuple):
    """The frontend once per network (shared by every DyCL variant); (program, seconds)."""
    from dycl.frontend import import_module

    start = time.perf_counter()
    program = import_module(model, tuple(example_inputs))
    return program, time.perf_counter() - start


def directory_bytes(directory: str | os.PathLike) -> int:
    return sum(p.stat().st_size for p in Path(directory).rglob("*") if p.is_file())


def prepare_dycl(
    name: str,
    program,
    frontend_seconds: float,
    path_inputs: Sequence[tuple],
    runtime: RuntimeOptions,
    cache_dir: str | os.PathLike,
    backend_options: dict | None = None,
    tune=None,
) -> Prepared:
    """Compile a copy of the frontend's host IR: dycl-pipeline (timed per pass), then the
    backend (tuned first with `tune`, a `dycl.TuneOptions`). With the given cache_dir
    empty, the backend compiles cold."""
    from dycl.api import compile_module
    from dycl.ir import make_context

    backend, options = DYCL_VARIANTS[name]
    module = program.module.clone()
    ctx = make_context()
    per_pass: list[tuple[str, float]] = []
    start = time.perf_counter()
    for p in pipeline_passes(**{"backend": backend, **options}):
        t = time.perf_counter()
        p.apply(ctx, module)
        per_pass.append((p.name, time.perf_counter() - t))
    passes_seconds = time.perf_counter() - start
    compiled = compile_module(
        module,
        program.weights,
        backend,
        entry=program.function_name,
        runtime=runtime,
        cache_dir=cache_dir,
        progress=False,
        run_pipeline=False,
        tune=tune,
        **(backend_options or {}),
    )
    report = compiled.compile_report
    cost = {
        "frontend_seconds": frontend_seconds,
        "passes_seconds": passes_seconds,
        "backend_seconds": report["backend_seconds"],
        "total_seconds": frontend_seconds + passes_seconds + report["backend_seconds"],
        "subdnn_count": report["subdnn_count"],
        "cached_subdnns": report["cached_subdnns"],
        "artifact_bytes": directory_bytes(compiled.directory),
        "per_pass_seconds": per_pass,
    }
    if "tuning" in report:
        tuning = report["tuning"]
        cost["tuning_seconds"] = tuning["seconds"]  # this run's (0 when the database had it all)
        cost["tuning_minutes"] = tuning["invested_minutes"]  # all search time behind the records used
        cost["tuning_tasks"] = tuning["tasks"]
        cost["total_seconds"] += tuning["seconds"]
    calls = [_bind(compiled, args) for args in _numpy_inputs(path_inputs)]
    return Prepared(name, calls, cost, {}, compiled)


def prepare_served(program, runtime: RuntimeOptions, cache_dir: str | os.PathLike) -> tuple[Any, dict[str, Any], Any]:
    """DyCL+ORT as dycl-serve runs it, for the throughput table: compiled with the run-many
    form (`run_many_form=True`: gates in the host, exit tests split out), and loaded back from
    its directory with `dycl.load`, as a replica loads it. (served model, cost, artifact): the
    cost says the seconds the compile took and how many sub-DNNs the second form adds (0
    where the network has no form of its own and `run_many` runs the one-request form); the
    artifact owns the directory (deleted with it), so the caller keeps it while serving."""
    from dycl.api import compile_module
    from dycl.runtime import load

    start = time.perf_counter()
    compiled = compile_module(program.module.clone(), program.weights, "onnxruntime", entry=program.function_name,
                              runtime=runtime, cache_dir=cache_dir, progress=False, run_many_form=True)
    report = compiled.compile_report
    cost = {
        "compile_seconds": time.perf_counter() - start,
        "backend_seconds": report["backend_seconds"],
        "subdnn_count": report["subdnn_count"],
        "run_many_subdnn_count": report["run_many_subdnn_count"],
        "run_many_form": "run_many" in compiled.manifest,
        "artifact_bytes": directory_bytes(compiled.directory),
    }
    return load(compiled.directory, runtime=runtime), cost, compiled


def host_profile(prepared: Prepared, path_inputs: Sequence[tuple], repeat: int = 20) -> dict[str, float]:
    """Mean over path inputs of dycl.runtime.profile.host_overhead: sub-DNN calls per
    inference, host microseconds per inference and per sub-DNN call."""
    from dycl.runtime.profile import host_overhead

    rows = [host_overhead(prepared.handle, args, repeat=repeat) for args in _numpy_inputs(path_inputs)]
    n = len(rows)
    return {
        "subdnn_calls_per_inference": sum(r["subdnn_calls"] for r in rows) / n,
        "host_us_per_inference": sum(r["host_us"] for r in rows) / n,
        "host_us_per_subdnn_call": sum(r["host_us"] for r in rows) / max(sum(r["subdnn_calls"] for r in rows), 1),
    }


def shared_tuning(minutes: float):
    """TuneOptions for dycl-tvm-tuned: the user's shared database (not the bench's
    per-network compile cache), tuned for `minutes` per network first."""
    from dycl.backends.tuning import TuneOptions, database_directory
    from dycl.backends.tvm import target_of

    return TuneOptions(minutes=minutes, database=str(database_directory(TuneOptions(), target_of("llvm", tuned=True))))


# ---------------------------------------------------------------------------------- oracle


def prepare_oracle(
    name: str,
    network: str,
    model: torch.nn.Module,
    path_inputs: Sequence[tuple],
    paths: Sequence,
    runtime: RuntimeOptions,
    cache_dir: str | os.PathLike | None,
) -> Prepared:
    from dycl.bench.oracle import oracle_calls

    backend, keep_decisions = ORACLES[name]
    calls, cost = oracle_calls(network, model, list(path_inputs), list(paths), backend, runtime,
                               Path(cache_dir) if cache_dir else None, keep_decisions)
    cost["total_seconds"] = cost["trace_seconds"] + cost["compile_seconds"]
    return Prepared(name, calls, cost)
