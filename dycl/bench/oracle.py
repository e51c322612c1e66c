"""The oracle static path: for one input, the single static graph of exactly the path it
takes, compiled whole by the same backend, run with no host program.

Tracing freezes the path an input takes, which is the bug DyCL exists to avoid and
exactly what the oracle wants: `make_fx` in real mode runs the model on the input and
records every aten op it executes; `.item()` and `bool(tensor)` return the real value
(`_error_on_data_dependent_ops=False`), so branches, early exits and loop trip counts
are burnt in. The graph is exported with `torch.export` and compiled like a DyCL
sub-DNN (ONNX through the dynamo exporter, TVM through the Relax torch frontend), then
loaded with DyCL's own sub-DNN runners (`dycl.runtime.runners`), so the per-call
machinery is the same and the only difference is the host program and the split.

The trace drops whatever only decided the path: a gate or an exit classifier read by
`bool()`/`.item()` feeds nothing the outputs need once its value is burnt in. With
`keep_decisions` every tensor the trace read as a Python value stays an extra output, so
the graph still computes each decision of its path: the floor for a program that must
decide its path at run time (DyCL's), where the plain oracle is not one.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dycl.backends import runner_factory
from dycl.backends.onnxruntime import export_onnx
from dycl.runtime import RuntimeOptions


@dataclass
class OracleGraph:
    """One input's static path, compiled."""

    run: Any  # runner(*numpy arrays) -> list of numpy arrays
    trace_seconds: float
    compile_seconds: float
    size_bytes: int
    ops: int


def trace_path(
    model: torch.nn.Module, inputs: tuple, keep_decisions: bool = False
) -> tuple[torch.export.ExportedProgram, list]:
    """The static graph of the path `inputs` take through `model` (weights inlined as
    constants), and the template of the model's flat outputs: None where the graph
    returns a tensor, the value itself where the output is a Python scalar (an exit index,
    a length: constants of this path). With `keep_decisions` the graph also returns, after
    those, every tensor the path read as a Python value (see the module docstring)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from dycl.bench.numerics import leaves

    with torch.no_grad():
        template = [None if isinstance(v, torch.Tensor) else v for v in leaves(model(*inputs))]

        def tensors_only(*args):
            return tuple(v for v in leaves(model(*args)) if isinstance(v, torch.Tensor))

        graph = make_fx(tensors_only, tracing_mode="real", _error_on_data_dependent_ops=False)(*inputs)
        if keep_decisions:
            _return_decisions(graph.graph)
        graph.graph.eliminate_dead_code()
        graph.recompile()
        return torch.export.export(graph, tuple(inputs), strict=False), template


# How a traced graph reads a tensor as a Python value (`bool(t)`, `t.item()`, `int(t)`).
_READ_AS_PYTHON = (torch.ops.aten._local_scalar_dense.default, torch.ops.aten.item.default)


def _return_decisions(graph: torch.fx.Graph) -> None:
    """Append to `graph`'s outputs each tensor it reads as a Python value, once."""
    decisions = list(dict.fromkeys(n.args[0] for n in graph.nodes if n.target in _READ_AS_PYTHON))
    output = graph.output_node()
    (results,) = output.args
    output.args = ((*results, *decisions),)


def with_constants(run, template: list, extra_outputs: bool = False):
    """runner -> a callable returning the model's flat outputs, constants put back (and
    the graph's outputs past the model's, its decisions, dropped)."""
    if all(t is None for t in template) and not extra_outputs:
        return run

    def call(*arrays):
        tensors = iter(run(*arrays))
        return [next(tensors) if t is None else t for t in template]

    return call


def onnx_bytes(program: torch.export.ExportedProgram, n_inputs: int, n_outputs: int) -> bytes:
    """An exported program as ONNX, through the same exporter as a DyCL sub-DNN; inputs
    `in0..`, outputs `out0..`."""
    exported = export_onnx(
        program,
        None,
        input_names=[f"in{i}" for i in range(n_inputs)],
        output_names=[f"out{i}" for i in range(n_outputs)],
    )
    return exported.model_proto.SerializeToString()


def compile_oracle(
    model: torch.nn.Module,
    inputs: tuple,
    backend: str,
    runtime: RuntimeOptions,
    directory: Path,
    keep_decisions: bool = False,
) -> OracleGraph:
    """Trace `inputs`' path (`keep_decisions`: see `trace_path`) and compile it whole with
    `backend` ("onnxruntime" or "tvm").

    A compiled graph already in `directory` (a previous run's, same key) is loaded instead."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / _graph_file(backend)
    trace_seconds = compile_seconds = 0.0
    ops = -1
    template: list = []
    if not path.exists():
        start = time.perf_counter()
        program, template = trace_path(model, inputs, keep_decisions)
        trace_seconds = time.perf_counter() - start
        n_outputs = len(program.graph_signature.user_outputs)
        ops = sum(1 for n in program.graph.nodes if n.op == "call_function")
        start = time.perf_counter()
        partial = directory / (path.name + ".partial")
        if backend == "onnxruntime":
            partial.write_bytes(onnx_bytes(program, len(inputs), n_outputs))
        elif backend == "tvm":
            import tvm
            from tvm.relax.frontend.torch import from_exported_program

            from dycl.backends.tvm import target_of

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mod = from_exported_program(program, keep_params_as_input=False)
            partial = partial.with_suffix(".so")  # export_library picks the linker from the suffix
            tvm.compile(mod, target=target_of("llvm")).export_library(str(partial))
        else:
            raise ValueError(f"unknown backend {backend!r}")
        partial.rename(path)
        compile_seconds = time.perf_counter() - start
        (directory / "cost.json").write_text(json.dumps({"trace_seconds": trace_seconds, "compile_seconds": compile_seconds, "ops": ops, "template": template}))
    else:
        try:
            cost = json.loads((directory / "cost.json").read_text())
            trace_seconds, compile_seconds, ops = cost["trace_seconds"], cost["compile_seconds"], cost["ops"]
        except (OSError, KeyError, ValueError):
            cost = {}
        if "template" not in cost:  # written before templates were kept: one eager call
            from dycl.bench.numerics import leaves

            with torch.no_grad():
                cost["template"] = [None if isinstance(v, torch.Tensor) else v for v in leaves(model(*inputs))]
            (directory / "cost.json").write_text(json.dumps(cost))
        template = cost["template"]
    run = with_constants(load_graph(path, backend, len(inputs), runtime), template, keep_decisions)
    return OracleGraph(run, trace_seconds, compile_seconds, path.stat().st_size, ops)


def _graph_file(backend: str) -> str:
    return "oracle.onnx" if backend == "onnxruntime" else "oracle.so"


def load_graph(path: Path, backend: str, n_inputs: int, runtime: RuntimeOptions):
    """A whole compiled graph (inputs `in0..`) loaded with DyCL's own sub-DNN runners."""
    load = runner_factory(backend)
    if backend == "tvm":
        return load(path, {}, runtime)
    import onnx

    # Output names from the file, not from a throw-away session: with the runtime's shared
    # pool on (dycl-bench --ort-pool shared) onnxruntime refuses sessions with their own pool.
    graph = onnx.load(str(path), load_external_data=False).graph
    # ort_runner skips an input the exporter dropped because the graph never reads it
    meta = {"input_names": [f"in{i}" for i in range(n_inputs)], "output_names": [o.name for o in graph.output]}
    return load(path, meta, runtime)


def cache_key(network: str, inputs: tuple, backend: str) -> str:
    """What decides an oracle graph: the network's source (dycl/zoo), its name, the input
    bytes, the backend and the tool versions."""
    from importlib.metadata import version

    digest = hashlib.sha256()
    zoo = Path(__file__).resolve().parent.parent / "zoo"
    for source in sorted(zoo.glob("*.py")):
        digest.update(source.read_bytes())
    digest.update(f"{network}|{backend}|torch={torch.__version__}|ort={version('onnxruntime')}|tvm={version('apache-tvm')}".encode())
    for t in inputs:
        digest.update(np.ascontiguousarray(t.detach().numpy()).tobytes())
    return digest.hexdigest()[:24]


def oracle_calls(
    network: str,
    model: torch.nn.Module,
    path_inputs: list[tuple],
    paths: list,
    backend: str,
    runtime: RuntimeOptions,
    cache_dir: Path | None = None,
    keep_decisions: bool = False,
) -> tuple[list, dict]:
    """One zero-argument call per path input (numpy in, list of numpy out), and the cost.

    Inputs that take the same path share one compiled graph. With `cache_dir`, compiled
    graphs are kept there and reused by later runs (cost then reports the first compile).
    `keep_decisions`: see `trace_path`."""
    cache_dir = Path(cache_dir or tempfile.mkdtemp(prefix="dycl-oracle-"))
    graphs: dict[Any, OracleGraph] = {}
    calls = []
    cached = 0
    for inputs, path in zip(path_inputs, paths):
        key = repr(path)
        if key not in graphs:
            kind = f"{backend}-decisions" if keep_decisions else backend
            directory = cache_dir / "oracle" / network / f"{kind}-{cache_key(network, inputs, backend)}"
            cached += (directory / _graph_file(backend)).exists()
            graphs[key] = compile_oracle(model, inputs, backend, runtime, directory, keep_decisions)
        arrays = tuple(np.ascontiguousarray(t.detach().numpy()) for t in inputs)
        calls.append(_bind(graphs[key].run, arrays))
    cost = {
        "graphs": len(graphs),
        "cached_graphs": cached,
        "trace_seconds": sum(g.trace_seconds for g in graphs.values()),
        "compile_seconds": sum(g.compile_seconds for g in graphs.values()),
        "size_bytes": sum(g.size_bytes for g in graphs.values()),
        "ops_per_graph": [g.ops for g in graphs.values()],
    }
    return calls, cost


def _bind(run, arrays):
    def call():
        return run(*arrays)

    return call
